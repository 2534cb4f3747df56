import { z } from 'zod';
import { APPROVAL_DECISIONS } from '../../core/approvals/approvals.js';
import type { RouteTable, ServerDeps } from '../types.js';
import { readValidated } from '../body.js';
import { httpError } from '../http.js';
import { sessionKey } from './chat.js';

const approveBody = z.strictObject({ sessionKey: sessionKey.optional(), id: z.string().min(1).max(64), decision: z.enum(APPROVAL_DECISIONS) });

/**
 * POST /reset (sessionKey required), POST /abort (sessionKey optional: `default`; an empty body is
 * fine), POST /approve (an answer to a turn's `approval_request`; the token holder is the owner,
 * who may answer any request) and GET /api/sessions: every session key with its last activity,
 * newest first, and for the named sessions of a chat (/new in a channel or the terminal) the chat,
 * name and whether it is the chat's current one.
 */
export function registerSessionRoutes(table: RouteTable, deps: ServerDeps): void {
  table.add('GET', '/api/sessions', async (event) => {
    const raw = event.url.searchParams.get('limit');
    const limit = raw === null ? 100 : Number(raw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw httpError(400, `limit: expected an integer from 1 to 1000, got "${raw}"`);
    const all = await deps.assistant.sessions.listKeys();
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      total: all.length,
      sessions: all.slice(0, limit).map((s) => ({
        key: s.key,
        lastActivity: iso(s.lastActivity),
        createdAt: iso(s.createdAt),
        turns: s.turns,
        ...(s.engine ? { engine: s.engine } : {}),
        ...(s.chat ? { chat: s.chat.key, name: s.chat.name, current: s.chat.current } : {}),
      })),
    };
  });

  table.add('POST', '/reset', async (event) => {
    const body = await readValidated(event, z.strictObject({ sessionKey }), { limit: deps.maxBodyBytes });
    await deps.assistant.reset(body.sessionKey);
    return { ok: true };
  });

  table.add('POST', '/abort', async (event) => {
    const body = await readValidated(event, z.strictObject({ sessionKey: sessionKey.optional() }), { limit: deps.maxBodyBytes, allowEmpty: true });
    return { ok: true, aborted: deps.assistant.abort(body.sessionKey ?? 'default') };
  });

  table.add('POST', '/approve', async (event) => {
    const body = await readValidated(event, approveBody, { limit: deps.maxBodyBytes });
    const key = body.sessionKey ?? 'default';
    const out = deps.assistant.answerApproval({ sessionKey: key, id: body.id, decision: body.decision, privileged: true });
    if (!out.ok) throw httpError(404, `no approval ${body.id} is waiting on session ${JSON.stringify(key)} (it may have been answered or timed out)`);
    return { ok: true, id: out.request.id, decision: out.decision, tool: out.request.tool, summary: out.request.summary };
  });
}
