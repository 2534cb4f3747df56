import { z } from 'zod';
import type { AccessOutcome } from '../../core/access/access-admin.js';
import type { RouteTable, ServerDeps } from '../types.js';
import { readValidated } from '../body.js';
import { httpError } from '../http.js';

const codeBody = z.strictObject({ code: z.string().min(1).max(64) });
const revokeBody = z.strictObject({ id: z.string().min(3).max(512) });

/** How an access outcome that failed is answered. */
const STATUS = { invalid: 400, not_found: 404, in_config: 409 } as const;

/**
 * GET /api/access (the lists, the pending pairing codes, the budget), POST /api/access/approve
 * {code}, /deny {code}, /revoke {id}, and GET /api/access/refusals (messages refused by access
 * control or the budget, newest first). Token required, like every /api/ route. Times are ISO 8601.
 */
export function registerAccessRoutes(table: RouteTable, deps: ServerDeps): void {
  table.add('GET', '/api/access', async () => {
    const [listing, budget] = await Promise.all([deps.access.list(), deps.assistant.budget()]);
    const at = Date.now();
    return {
      ...listing,
      senders: listing.senders.map(isoTimes),
      chats: listing.chats.map(isoTimes),
      pending: listing.pending.map((p) => ({ ...isoTimes(p), ageSeconds: Math.max(0, Math.floor((at - p.createdAt) / 1000)) })),
      todayCostUsd: budget.todayCostUsd,
      budgetResetsAt: new Date(budget.resetsAt).toISOString(),
    };
  });

  table.add('POST', '/api/access/approve', async (event) => {
    const { code } = await readValidated(event, codeBody, { limit: deps.maxBodyBytes });
    const out = answer(await deps.access.approve(code, 'http'));
    deps.log.info(`access: ${out.text}`);
    return { ok: true, approved: isoTimes(out.value), text: out.text };
  });

  table.add('POST', '/api/access/deny', async (event) => {
    const { code } = await readValidated(event, codeBody, { limit: deps.maxBodyBytes });
    const out = answer(await deps.access.deny(code));
    deps.log.info(`access: ${out.text}`);
    return { ok: true, denied: isoTimes(out.value), text: out.text };
  });

  table.add('POST', '/api/access/revoke', async (event) => {
    const { id } = await readValidated(event, revokeBody, { limit: deps.maxBodyBytes });
    const out = answer(await deps.access.revoke(id));
    deps.log.info(`access: ${out.text}`);
    return { ok: true, revoked: out.value.map(isoTimes), text: out.text };
  });

  table.add('GET', '/api/access/refusals', async (event) => {
    const raw = event.url.searchParams.get('limit');
    const limit = raw === null ? 50 : Number(raw);
    if (!Number.isInteger(limit) || limit < 1) throw httpError(400, `expected a positive integer limit, got "${raw}"`);
    return { refusals: await deps.activity.recentActivity(Math.min(limit, 200), { statuses: ['refused'] }) };
  });
}

// --- internal ---

function answer<T>(out: AccessOutcome<T>): { value: T; text: string } {
  if (!out.ok) throw httpError(STATUS[out.reason], out.text, { reason: out.reason });
  return out;
}

const TIME_KEYS = new Set(['createdAt', 'expiresAt', 'approvedAt']);

/** Unix-ms fields as ISO 8601, like every other time in the API. */
function isoTimes(record: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, TIME_KEYS.has(k) && typeof v === 'number' ? new Date(v).toISOString() : v]));
}
