import { z } from 'zod';
import type { SendFailure } from '../../core/channel-hub.js';
import { CONFIG_LIMITS } from '../../core/config/limits.js';
import { AppError } from '../../core/errors.js';
import { formatCliPrefix } from '../../core/invocation.js';
import { PatchRejected, applyConfigPatch } from '../../core/config/patch.js';
import { maskSecrets } from '../../core/config/secrets.js';
import { resolveAssistantPaths } from '../../core/paths.js';
import { scanSkills } from '../../core/skills/skills.js';
import type { RouteTable, ServerDeps } from '../types.js';
import { readJson, readValidated } from '../body.js';
import { formatHttpLine, httpError, jsonReply } from '../http.js';

const sendBody = z.strictObject({
  channel: z.string().min(1),
  chatId: z.string().min(1),
  text: z.string().min(1).max(100_000),
});

/** How a failed send is answered: the spec's 404/501/503, and 502 when the platform refused. */
const SEND_STATUS: Record<SendFailure, number> = { not_found: 404, unsupported: 501, no_channels: 503, not_connected: 503, failed: 502 };

/** GET /api/status, GET|PATCH /api/config, GET /api/channels, POST /api/send. Nothing here returns a secret. */
export function registerAdminRoutes(table: RouteTable, deps: ServerDeps): void {
  table.add('GET', '/api/status', () => buildStatus(deps));

  table.add('GET', '/api/config', () => ({ config: maskSecrets(deps.config.current().raw) }));

  table.add('PATCH', '/api/config', async (event) => {
    const patch = await readJson(event, { limit: Math.min(deps.maxBodyBytes ?? CONFIG_LIMITS.patchBodyBytes, CONFIG_LIMITS.patchBodyBytes) });
    try {
      const result = await applyConfigPatch(deps.config, patch);
      deps.log.info(`config changed: ${result.changed.join(', ') || '(no effective change)'}${result.needsRestart ? ' (restart needed)' : ''}`);
      return { ok: true, config: result.config, needsRestart: result.needsRestart };
    } catch (err) {
      if (err instanceof PatchRejected) throw httpError(400, `invalid configuration change: ${err.message}`, { issues: err.issues });
      if (err instanceof AppError && err.code === 'config_busy') throw httpError(409, err.message);
      throw err;
    }
  });

  table.add('GET', '/api/channels', () => ({ channels: deps.channels.list() }));

  table.add('POST', '/api/send', async (event) => {
    const body = await readValidated(event, sendBody, { limit: deps.maxBodyBytes });
    const result = await deps.channels.send(body.channel, body.chatId, body.text);
    if (result.ok) return { ok: true };
    const { ok: _ok, ...rest } = result;
    const status = SEND_STATUS[result.reason];
    deps.log
      .child('http')
      .info(formatHttpLine(status, 'POST', `/api/send to ${body.channel}`, rest.error), { status, method: 'POST', path: '/api/send', channel: body.channel });
    return jsonReply(status, rest);
  });
}

/** The spec's status record (model is '' when unset; channels list every built-in channel plus custom ones). */
export async function buildStatus(deps: ServerDeps): Promise<Record<string, unknown>> {
  const s = deps.assistant.status();
  const [metrics, recentMessages, budget, outbox] = await Promise.all([
    deps.assistant.metrics(),
    deps.assistant.recentActivity(20),
    budgetOf(deps),
    deps.replies?.outboxStats() ?? { waiting: 0, oldestAt: null },
  ]);
  const skills = scanSkills(resolveAssistantPaths(deps.config.current().dir).skillsDir).skills;
  const engineWarning = deps.assistant.engineWarning();
  return {
    name: s.name,
    engine: s.engine,
    // Beyond the spec's record: why the engine cannot start (its program is missing) and the fix; absent when it can.
    ...(engineWarning === undefined ? {} : { engineWarning }),
    model: s.model,
    version: deps.version,
    uptime: s.uptime,
    // Beyond the spec's record: the dashboard fills its embedding sample with the directory.
    dir: deps.config.current().dir,
    // Beyond the spec's record: how to type this CLI on this machine (`agent-service` where a bare
    // `service` is Debian's tool), for the commands the dashboard names.
    cli: cliPrefix(),
    // `title` (the platform's name) and `reason` (why a channel failed; never a secret) are beyond the spec's record, for the dashboard.
    channels: deps.channels.statuses().map(({ type, title, status, reason }) => ({ type, status, ...(title ? { title } : {}), ...(reason ? { reason } : {}) })),
    skills: skills.map(({ name, description }) => ({ name, description })),
    metrics,
    recentMessages,
    turns: { running: s.running, waiting: s.waiting },
    // Beyond the spec's record: what this process counted since it started (GET /metrics reads the same).
    live: formatLive(deps, s.approvalsWaiting),
    // Beyond the spec's record: today's spending against access.dailyBudgetUsd (0 = no cap).
    budget,
    // Beyond the spec's record: the warm engine processes (their memory is the engines', not the gateway's).
    warm: warmStatus(deps),
    // Beyond the spec's record: replies a platform refused, waiting in the outbox to be sent again.
    replies: { waiting: outbox.waiting, oldest: outbox.oldestAt === null ? null : new Date(outbox.oldestAt).toISOString() },
  };
}

/** `warm:` as configured, and each warm engine process with the resident memory of its tree. */
export function warmStatus(deps: ServerDeps): Record<string, unknown> {
  const { enabled, maxProcesses, idleSeconds } = deps.config.current().config.warm;
  const processes = deps.assistant.engine.warm.processes().map((p) => ({
    pid: p.pid,
    engine: p.engine,
    sessionKey: p.sessionKey,
    busy: p.busy,
    turns: p.turns,
    startedAt: new Date(p.startedAt).toISOString(),
    lastUsedAt: new Date(p.lastUsedAt).toISOString(),
    rssBytes: p.rssBytes,
  }));
  return { enabled, maxProcesses, idleSeconds, processes };
}

async function budgetOf(deps: ServerDeps): Promise<Record<string, unknown>> {
  const b = await deps.assistant.budget();
  return { todayCostUsd: b.todayCostUsd, dailyBudgetUsd: b.dailyBudgetUsd, reached: b.reached, resetsAt: new Date(b.resetsAt).toISOString() };
}

function formatLive(deps: ServerDeps, approvalsWaiting: number): Record<string, unknown> {
  const { since, turns, channels, storeErrors, engineProcesses } = deps.metrics.snapshot();
  return { since: new Date(since).toISOString(), turns, channels, storeErrors, engineProcesses, approvalsWaiting };
}

/** PATH and the started script do not change while the gateway runs: looked up once. */
let cli: string | undefined;
const cliPrefix = (): string => (cli ??= formatCliPrefix());
