import { ConfigError } from '../../core/errors.js';
import type { RouteTable, ServerDeps } from '../types.js';
import type { H3Event, HTTPError } from 'h3';
import { httpError, routeParam } from '../http.js';
import { streamJson } from '../sse.js';
import { withFileUrls } from './files.js';

/**
 * Scheduled tasks over HTTP, as the terminal's `/cron` has them: GET /api/tasks (next run, last
 * status), POST /api/tasks/:id/run (streams the run's turn like /chat), POST
 * /api/tasks/:id/enable|disable (written to service.yaml), GET /api/tasks/:id/history.
 */
export function registerTaskRoutes(table: RouteTable, deps: ServerDeps): void {
  const tasks = deps.tasks;

  table.add('GET', '/api/tasks', async () => ({ scheduled: tasks.scheduled, tasks: await tasks.list() }));

  table.add('POST', '/api/tasks/:id/run', (event) => {
    const id = taskId(event);
    const start = tasks.run(id);
    if (!start.ok) {
      if (start.reason === 'not_found') throw notFound(deps, id);
      throw httpError(409, start.error, { reason: 'running' });
    }
    // A client that leaves does not stop the run: it is recorded and delivered like a scheduled one.
    return streamJson(event, withFileUrls(start.events, deps.token), {
      heartbeatMs: deps.heartbeatMs ?? 15_000,
      redact: table.redact,
      track: table.trackStream,
    });
  });

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    table.add('POST', `/api/tasks/:id/${verb}`, async (event) => {
      const id = taskId(event);
      let task: Awaited<ReturnType<typeof tasks.setEnabled>>;
      try {
        task = await tasks.setEnabled(id, enabled);
      } catch (err) {
        // service.yaml as it is now cannot take the edit (invalid elsewhere); the file is untouched.
        if (err instanceof ConfigError) throw httpError(409, `cannot ${verb} task ${id}: ${err.message}`, { problems: err.problems });
        throw err;
      }
      if (!task) throw notFound(deps, id);
      deps.log.info(`task ${id} ${verb}d over HTTP`);
      return { ok: true, task };
    });
  }

  table.add('GET', '/api/tasks/:id/history', async (event) => {
    const id = taskId(event);
    const raw = event.url.searchParams.get('limit');
    const limit = raw === null ? 20 : Number(raw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw httpError(400, `limit: expected an integer from 1 to 100, got "${raw}"`);
    const runs = await tasks.history(id, limit);
    if (!runs) throw notFound(deps, id);
    return { id, runs };
  });
}

// --- internal ---

function taskId(event: H3Event): string {
  const id = routeParam(event, 'id');
  if (id === undefined) throw httpError(400, 'task id is not valid URL encoding');
  return id;
}

function notFound(deps: ServerDeps, id: string): HTTPError {
  return httpError(404, `no task with id "${id}"`, { tasks: deps.config.current().config.tasks.map((t) => t.id) });
}
