import type { PgQuery, PgTransaction } from './pg-client.js';
import { nameKeyOf } from './sqlite-chat-sessions.js';
import type { ChatSessionStore } from './types.js';
import { parseChatSessionRow } from './rows.js';

/**
 * The named-sessions slice of the PostgreSQL store. Each change runs in a transaction holding an
 * advisory lock for the chat, so "one current session per chat" holds when two hosts (or two
 * connections) change one chat at once; a taken name or key is the unique index's answer.
 * `pruneSql` is run by the store's session pruning, inside its transaction.
 */
export function createPgChatSessionStore(query: PgQuery, transaction: PgTransaction): ChatSessionStore {
  const locked = <T>(chatKey: string, fn: (q: PgQuery) => Promise<T>) =>
    transaction(async (q) => {
      await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`service:chat-sessions:${chatKey}`]);
      return fn(q);
    });
  const makeCurrent = (q: PgQuery, chatKey: string, name: string) =>
    q('UPDATE chat_sessions SET current = (name_key = $1) WHERE chat_key = $2', [nameKeyOf(name), chatKey]);
  const byName = async (q: PgQuery, chatKey: string, name: string) =>
    (await q('SELECT * FROM chat_sessions WHERE chat_key = $1 AND name_key = $2', [chatKey, nameKeyOf(name)])).rows[0];

  return {
    chatSessions: async (chatKey) =>
      (await query('SELECT * FROM chat_sessions WHERE chat_key = $1 ORDER BY created_at, seq', [chatKey])).rows.map(parseChatSessionRow),
    allChatSessions: async () => (await query('SELECT * FROM chat_sessions ORDER BY chat_key COLLATE "C", created_at, seq')).rows.map(parseChatSessionRow),
    addChatSession: (s) =>
      locked(s.chatKey, async (q) => {
        const added = await q(
          `INSERT INTO chat_sessions (chat_key, name, name_key, session_key, created_at, current) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT DO NOTHING`,
          [s.chatKey, s.name, nameKeyOf(s.name), s.sessionKey, s.createdAt, s.current],
        );
        if (added.rowCount !== 1) return false;
        if (s.current) await makeCurrent(q, s.chatKey, s.name);
        return true;
      }),
    switchChatSession: (chatKey, name) =>
      locked(chatKey, async (q) => {
        if (!(await byName(q, chatKey, name))) return false;
        await makeCurrent(q, chatKey, name);
        return true;
      }),
    renameChatSession: (chatKey, from, to) =>
      locked(chatKey, async (q) => {
        const source = await byName(q, chatKey, from);
        if (!source) return false;
        const taken = await byName(q, chatKey, to);
        if (taken && taken.session_key !== source.session_key) return false;
        await q('UPDATE chat_sessions SET name = $1, name_key = $2 WHERE chat_key = $3 AND name_key = $4', [to, nameKeyOf(to), chatKey, nameKeyOf(from)]);
        return true;
      }),
    removeChatSession: async (chatKey, name) => {
      const row = (await query('DELETE FROM chat_sessions WHERE chat_key = $1 AND name_key = $2 RETURNING *', [chatKey, nameKeyOf(name)])).rows[0];
      return row ? parseChatSessionRow(row) : undefined;
    },
  };
}

/** A named session whose engine session is gone (pruned, or never started) and that is older than the cutoff ($1). */
export const PRUNE_CHAT_SESSIONS_SQL = 'DELETE FROM chat_sessions WHERE created_at < $1 AND session_key NOT IN (SELECT key FROM sessions)';
