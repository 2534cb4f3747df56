import type Database from 'better-sqlite3';
import type { ChatSession, ChatSessionStore, SyncOf } from './types.js';
import { parseChatSessionRow, type Row } from './rows.js';

/** Names are compared ignoring case (phones capitalise the first letter); JS lower-cases, so both stores agree. */
export const nameKeyOf = (name: string): string => name.toLowerCase();

/**
 * The named-sessions slice of the SQLite store, on the store's open database. `prune` is called
 * by the store's own session pruning, inside its transaction.
 */
export function createSqliteChatSessionStore(db: Database.Database): SyncOf<ChatSessionStore> & { prune(cutoff: number): void } {
  const q = {
    ofChat: db.prepare('SELECT * FROM chat_sessions WHERE chat_key = ? ORDER BY created_at, rowid'),
    all: db.prepare('SELECT * FROM chat_sessions ORDER BY chat_key, created_at, rowid'),
    byName: db.prepare('SELECT * FROM chat_sessions WHERE chat_key = ? AND name_key = ?'),
    keyInUse: db.prepare('SELECT 1 FROM chat_sessions WHERE session_key = ?'),
    insert: db.prepare(
      `INSERT INTO chat_sessions (chat_key, name, name_key, session_key, created_at, current)
       VALUES (@chatKey, @name, @nameKey, @sessionKey, @createdAt, @current)`,
    ),
    makeCurrent: db.prepare('UPDATE chat_sessions SET current = (name_key = ?) WHERE chat_key = ?'),
    rename: db.prepare('UPDATE chat_sessions SET name = ?, name_key = ? WHERE chat_key = ? AND name_key = ?'),
    remove: db.prepare('DELETE FROM chat_sessions WHERE chat_key = ? AND name_key = ?'),
    // A named session whose engine session is gone (pruned, or never started) and that is older than the cutoff.
    prune: db.prepare('DELETE FROM chat_sessions WHERE created_at < ? AND session_key NOT IN (SELECT key FROM sessions)'),
  };

  const add = db.transaction((s: ChatSession): boolean => {
    if (q.byName.get(s.chatKey, nameKeyOf(s.name)) || q.keyInUse.get(s.sessionKey)) return false;
    q.insert.run({ ...s, nameKey: nameKeyOf(s.name), current: s.current ? 1 : 0 });
    if (s.current) q.makeCurrent.run(nameKeyOf(s.name), s.chatKey);
    return true;
  });
  const switchTo = db.transaction((chatKey: string, name: string): boolean => {
    if (!q.byName.get(chatKey, nameKeyOf(name))) return false;
    q.makeCurrent.run(nameKeyOf(name), chatKey);
    return true;
  });
  const rename = db.transaction((chatKey: string, from: string, to: string): boolean => {
    const source = q.byName.get(chatKey, nameKeyOf(from)) as Row | undefined;
    if (!source) return false;
    const taken = q.byName.get(chatKey, nameKeyOf(to)) as Row | undefined;
    if (taken && taken.session_key !== source.session_key) return false;
    q.rename.run(to, nameKeyOf(to), chatKey, nameKeyOf(from));
    return true;
  });
  const remove = db.transaction((chatKey: string, name: string): ChatSession | undefined => {
    const row = q.byName.get(chatKey, nameKeyOf(name)) as Row | undefined;
    if (!row) return undefined;
    q.remove.run(chatKey, nameKeyOf(name));
    return parseChatSessionRow(row);
  });

  return {
    chatSessions: (chatKey) => (q.ofChat.all(chatKey) as Row[]).map(parseChatSessionRow),
    allChatSessions: () => (q.all.all() as Row[]).map(parseChatSessionRow),
    addChatSession: (s) => add(s),
    switchChatSession: (chatKey, name) => switchTo(chatKey, name),
    renameChatSession: (chatKey, from, to) => rename(chatKey, from, to),
    removeChatSession: (chatKey, name) => remove(chatKey, name),
    prune: (cutoff) => void q.prune.run(cutoff),
  };
}
