import { z } from 'zod';
import { APPROVAL_DECISIONS } from '../../core/approvals/approvals.js';
import type { RouteTable, ServerDeps } from '../types.js';
import { readValidated } from '../body.js';
import { httpError, routeParam } from '../http.js';
import { sessionKey } from './chat.js';

const approveBody = z.strictObject({ sessionKey: sessionKey.optional(), id: z.string().min(1).max(64), decision: z.enum(APPROVAL_DECISIONS) });

/**
 * POST /reset (sessionKey required), POST /abort (sessionKey optional: `default`; an empty body is
 * fine), POST /approve (an answer to a turn's `approval_request`; the token holder is the owner,
 * who may answer any request) and GET /api/sessions: every session key with its last activity,
 * newest first, and for the named sessions of a chat (/new in a channel or the terminal) the chat,
 * name and whether it is the chat's current one; GET /api/sessions/:key/history: the key's stored
 * messages (what a client shows again after a reload), the newest `limit`, oldest first (a reply
 * that did not complete with its `status` and `message`), and whether a turn of the key runs now
 * (a reloaded page waits for its reply).
 */
export function registerSessionRoutes(table: RouteTable, deps: ServerDeps): void {
  table.add('GET', '/api/sessions', async (event) => {
    const limit = readLimit(event.url.searchParams.get('limit'), 100, 1000);
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

  table.add('GET', '/api/sessions/:key/history', async (event) => {
    const key = sessionKey.safeParse(routeParam(event, 'key'));
    if (!key.success) throw httpError(400, 'key: expected a session key of 1 to 256 characters, percent-encoded in the path');
    const limit = readLimit(event.url.searchParams.get('limit'), 100, 1000);
    // One more than asked says whether older messages are left out.
    const entries = await deps.assistant.sessions.history(key.data, limit + 1);
    const kept = entries.slice(-limit);
    return {
      key: key.data,
      messages: kept.map((m) => ({
        role: m.role,
        text: m.text,
        ts: new Date(m.ts).toISOString(),
        ...(m.status ? { status: m.status } : {}),
        ...(m.message !== undefined ? { message: m.message } : {}),
      })),
      more: entries.length > kept.length,
      running: deps.assistant.isRunning(key.data),
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

// --- internal ---

/** `?limit=`: an integer from 1 to `max`, `fallback` when absent; anything else is a 400 naming it. */
function readLimit(raw: string | null, fallback: number, max: number): number {
  const limit = raw === null ? fallback : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > max) throw httpError(400, `limit: expected an integer from 1 to ${max}, got "${raw}"`);
  return limit;
}
