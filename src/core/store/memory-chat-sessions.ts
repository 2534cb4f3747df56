import { nameKeyOf } from './sqlite-chat-sessions.js';
import type { ChatSession, ChatSessionStore, SyncOf } from './types.js';

/** The named-sessions slice of the memory store; the same contract as the SQLite one. */
export function createMemoryChatSessionStore(): SyncOf<ChatSessionStore> & { prune(cutoff: number, hasSession: (key: string) => boolean): void } {
  /** In insertion order, which is creation order. */
  const rows: ChatSession[] = [];
  const find = (chatKey: string, name: string) => rows.find((r) => r.chatKey === chatKey && nameKeyOf(r.name) === nameKeyOf(name));
  const copy = (r: ChatSession): ChatSession => ({ ...r });
  const makeCurrent = (chatKey: string, name: string) => {
    for (const r of rows) if (r.chatKey === chatKey) r.current = nameKeyOf(r.name) === nameKeyOf(name);
  };

  return {
    chatSessions: (chatKey) =>
      rows
        .filter((r) => r.chatKey === chatKey)
        .sort((a, b) => a.createdAt - b.createdAt)
        .map(copy),
    allChatSessions: () => [...rows].sort((a, b) => (a.chatKey < b.chatKey ? -1 : a.chatKey > b.chatKey ? 1 : a.createdAt - b.createdAt)).map(copy),
    addChatSession(s) {
      if (find(s.chatKey, s.name) || rows.some((r) => r.sessionKey === s.sessionKey)) return false;
      rows.push(copy(s));
      if (s.current) makeCurrent(s.chatKey, s.name);
      return true;
    },
    switchChatSession(chatKey, name) {
      if (!find(chatKey, name)) return false;
      makeCurrent(chatKey, name);
      return true;
    },
    renameChatSession(chatKey, from, to) {
      const source = find(chatKey, from);
      const taken = find(chatKey, to);
      if (!source || (taken && taken !== source)) return false;
      source.name = to;
      return true;
    },
    removeChatSession(chatKey, name) {
      const row = find(chatKey, name);
      if (!row) return undefined;
      rows.splice(rows.indexOf(row), 1);
      return copy(row);
    },
    prune(cutoff, hasSession) {
      for (let i = rows.length - 1; i >= 0; i--) {
        const r = rows[i];
        if (r && r.createdAt < cutoff && !hasSession(r.sessionKey)) rows.splice(i, 1);
      }
    },
  };
}
