import { z } from 'zod';
import { ConfigError } from '../../core/errors.js';
import { TaskRejected } from '../../core/scheduler/task-control.js';
import type { RouteTable, ServerDeps } from '../types.js';
import type { H3Event, HTTPError } from 'h3';
import { readValidated } from '../body.js';
import { httpError, jsonReply, routeParam } from '../http.js';
import { streamJson } from '../sse.js';
import { withFileUrls } from './files.js';

const newTaskBody = z.strictObject({
  id: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[A-Za-z0-9._-]+$/, 'use letters, digits, dot, dash or underscore')
    .optional(),
  name: z.string().min(1).max(200).optional(),
  schedule: z.string().min(1).max(200).optional(),
  at: z.string().min(1).max(100).optional(),
  prompt: z.string().trim().min(1).max(100_000),
  enabled: z.boolean().optional(),
  target: z.strictObject({ channel: z.string().min(1).max(100), chatId: z.string().min(1).max(1000) }).optional(),
});

/**
 * Scheduled tasks over HTTP, as the terminal's `/cron` has them: GET /api/tasks (next run, last
 * status), POST /api/tasks (a new one, written to service.yaml), DELETE /api/tasks/:id, POST
 * /api/tasks/:id/run (streams the run's turn like /chat), POST /api/tasks/:id/enable|disable
 * (written to service.yaml), GET /api/tasks/:id/history.
 */
export function registerTaskRoutes(table: RouteTable, deps: ServerDeps): void {
  const tasks = deps.tasks;

  table.add('GET', '/api/tasks', async () => ({ scheduled: tasks.scheduled, tasks: await tasks.list() }));

  table.add('POST', '/api/tasks', async (event) => {
    const body = await readValidated(event, newTaskBody, { limit: deps.maxBodyBytes });
    // Configured, connected or not (a channel waiting for its environment variable too).
    const loaded = deps.config.current();
    const channels = [...Object.keys(loaded.config.channels), ...loaded.disabledChannels.map((d) => d.name)];
    if (body.target && !channels.includes(body.target.channel)) {
      const message = `no channel "${body.target.channel}" is configured (configured: ${channels.join(', ') || 'none'})`;
      throw httpError(400, `invalid request body: target.channel: ${message}`, { issues: [{ path: 'target.channel', message }] });
    }
    try {
      const task = await tasks.create(body);
      deps.log.info(`task ${task.id} created over HTTP`);
      return jsonReply(201, { ok: true, task });
    } catch (err) {
      if (err instanceof TaskRejected)
        throw httpError(400, `invalid request body: ${err.message}`, { issues: [{ path: err.field, message: err.message.slice(err.field.length + 2) }] });
      if (err instanceof ConfigError) throw httpError(409, `cannot add the task: ${err.message}`, { problems: err.problems });
      throw err;
    }
  });

  table.add('DELETE', '/api/tasks/:id', async (event) => {
    const id = taskId(event);
    let removed: boolean;
    try {
      removed = await tasks.remove(id);
    } catch (err) {
      if (err instanceof ConfigError) throw httpError(409, `cannot remove task ${id}: ${err.message}`, { problems: err.problems });
      throw err;
    }
    if (!removed) throw notFound(deps, id);
    deps.log.info(`task ${id} removed over HTTP`);
    return { ok: true, id };
  });

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
