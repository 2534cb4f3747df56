import { z } from 'zod';
import type { RouteTable, ServerDeps } from '../types.js';
import { readValidated } from '../body.js';
import { HttpFailure } from '../http.js';
import { sessionKey } from './chat.js';

/**
 * POST /reset (sessionKey required), POST /abort (sessionKey optional: `default`; an empty body is
 * fine), and GET /api/sessions: every session key with its last activity, newest first, and for
 * the named sessions of a chat (/new in a channel or the terminal) the chat, name and whether it
 * is the chat's current one.
 */
export function registerSessionRoutes(table: RouteTable, deps: ServerDeps): void {
  table.add('GET', '/api/sessions', (event) => {
    const raw = event.url.searchParams.get('limit');
    const limit = raw === null ? 100 : Number(raw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new HttpFailure(400, `limit: expected an integer from 1 to 1000, got "${raw}"`);
    const all = deps.assistant.sessions.listKeys();
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
}
