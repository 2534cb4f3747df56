import type { ChatSession, ChatSessionStore, HistoryEntry, HistoryStore, SessionRecord, SessionStore } from '../store/types.js';

/**
 * Named sessions per chat. A chat (a channel's session key from `sessionKeyOf`, the terminal's
 * `--session`) runs on its base key until someone uses `/new`; from then on the chat has named
 * sessions, one of them current, and the chat's next message runs on the current one's key. The
 * first session is the base key itself, named `main`, so nothing changes for a chat that never
 * uses the commands. Over HTTP a session is its `sessionKey` as given: nothing is resolved.
 */
export const MAIN_SESSION = 'main';
/** Sessions one chat may have: enough to juggle topics, bounded so a chat cannot grow the store without end. */
export const MAX_SESSIONS_PER_CHAT = 20;
const NAME = /^[\p{L}\p{N}][\p{L}\p{N}._-]{0,39}$/u;

export interface ChatSessionView {
  name: string;
  sessionKey: string;
  current: boolean;
  createdAt: number;
  /** The engine session's last turn, else when the named session was created. */
  lastUsed: number;
  turns: number;
}

/** One session key as GET /api/sessions lists it. */
export interface SessionKeyView {
  key: string;
  lastActivity: number;
  createdAt: number;
  turns: number;
  engine?: string;
  /** For a named session of a chat: the chat, its name, whether it is the chat's current one. */
  chat?: { key: string; name: string; current: boolean };
}

export type SessionChange = { ok: true; session: ChatSessionView; text: string } | { ok: false; error: string; text: string };

export interface ChatSessions {
  /** The key the chat's next message runs on. Reads only. */
  resolve(chatKey: string): Promise<string>;
  list(chatKey: string): Promise<ChatSessionView[]>;
  create(chatKey: string, name?: string): Promise<SessionChange>;
  switchTo(chatKey: string, name: string): Promise<SessionChange>;
  /** Rename the chat's current session. */
  rename(chatKey: string, name: string): Promise<SessionChange>;
  /** Delete a session that is not current: its engine session and history are cleared. */
  remove(chatKey: string, name: string): Promise<SessionChange>;
  /** Every session key, newest activity first. */
  listKeys(): Promise<SessionKeyView[]>;
  /** A key's stored messages, oldest first: the newest `limit` (GET /api/sessions/:key/history). */
  history(key: string, limit: number): Promise<HistoryEntry[]>;
}

export interface ChatSessionDeps {
  store: ChatSessionStore & Pick<SessionStore, 'getSession' | 'listSessions'> & Pick<HistoryStore, 'readHistory'>;
  /** Abort the key's running turn and clear its engine session and history. */
  reset(key: string): Promise<void>;
  now: () => number;
}

export function createChatSessions(deps: ChatSessionDeps): ChatSessions {
  const view = async (s: ChatSession, known?: SessionRecord | null): Promise<ChatSessionView> => {
    const session = known === undefined ? await deps.store.getSession(s.sessionKey) : (known ?? undefined);
    return viewOf(s, session);
  };
  const viewOf = (s: ChatSession, session: SessionRecord | undefined): ChatSessionView => ({
    name: s.name,
    sessionKey: s.sessionKey,
    current: s.current,
    createdAt: s.createdAt,
    lastUsed: Math.max(session?.updatedAt ?? 0, s.createdAt),
    turns: session?.turns ?? 0,
  });

  /** A chat that never used the commands gets its base key as `main` (current) on first use. */
  const ensure = async (chatKey: string): Promise<ChatSession[]> => {
    const rows = await deps.store.chatSessions(chatKey);
    if (rows.length > 0) return rows;
    const base = await deps.store.getSession(chatKey);
    // false when another caller added it first: either way the chat has its `main` now
    await deps.store.addChatSession({ chatKey, name: MAIN_SESSION, sessionKey: chatKey, createdAt: base?.createdAt ?? deps.now(), current: true });
    return deps.store.chatSessions(chatKey);
  };
  const named = async (chatKey: string, name: string) => (await ensure(chatKey)).find((s) => s.name.toLowerCase() === name.toLowerCase());
  const fail = (error: string, text: string): SessionChange => ({ ok: false, error, text });
  const badName = (name: string) =>
    fail('invalid_name', `"${name}" is not a usable session name: 1 to 40 letters, digits, ".", "_" or "-", starting with a letter or digit.`);

  /** `<chat>#<name>`, unless that key is in use (a renamed session keeps its key): then `-2`, `-3`… */
  const freshKey = async (chatKey: string, name: string): Promise<string> => {
    const used = new Set((await deps.store.allChatSessions()).map((s) => s.sessionKey));
    const base = `${chatKey}#${name.toLowerCase()}`;
    let key = base;
    for (let i = 2; used.has(key) || (await deps.store.getSession(key)); i++) key = `${base}-${i}`;
    return key;
  };
  const autoName = (rows: ChatSession[]): string => {
    const taken = new Set(rows.map((s) => s.name.toLowerCase()));
    let n = rows.length + 1;
    while (taken.has(`s${n}`)) n++;
    return `s${n}`;
  };

  return {
    async resolve(chatKey) {
      return (await deps.store.chatSessions(chatKey)).find((s) => s.current)?.sessionKey ?? chatKey;
    },
    async list(chatKey) {
      return Promise.all((await ensure(chatKey)).map((s) => view(s)));
    },
    async create(chatKey, requested) {
      const rows = await ensure(chatKey);
      const name = requested ?? autoName(rows);
      if (!NAME.test(name)) return badName(name);
      if (rows.some((s) => s.name.toLowerCase() === name.toLowerCase()))
        return fail('exists', `This chat already has a session named "${name}": /switch ${name} to go back to it.`);
      if (rows.length >= MAX_SESSIONS_PER_CHAT)
        return fail('too_many', `This chat has ${rows.length} sessions, the most it can keep: /delete one first (/sessions lists them).`);
      const session: ChatSession = { chatKey, name, sessionKey: await freshKey(chatKey, name), createdAt: deps.now(), current: true };
      if (!(await deps.store.addChatSession(session))) return fail('exists', `Could not create "${name}"; try another name.`);
      const previous = rows.find((s) => s.current)?.name;
      return {
        ok: true,
        session: await view(session),
        text: `New session "${name}": the next message starts a fresh conversation.${previous ? ` "${previous}" is kept: /switch ${previous} to go back.` : ''}`,
      };
    },
    async switchTo(chatKey, name) {
      const target = await named(chatKey, name);
      if (!target) return fail('not_found', `No session named "${name}" in this chat. ${formatNames(await ensure(chatKey))}`);
      await deps.store.switchChatSession(chatKey, target.name);
      const updated = { ...target, current: true };
      const v = await view(updated);
      return { ok: true, session: v, text: `Switched to "${target.name}" (${formatTurns(v.turns)}).` };
    },
    async rename(chatKey, name) {
      const current = (await ensure(chatKey)).find((s) => s.current);
      if (!current) return fail('not_found', 'This chat has no current session.');
      if (!NAME.test(name)) return badName(name);
      if (!(await deps.store.renameChatSession(chatKey, current.name, name))) return fail('exists', `This chat already has a session named "${name}".`);
      return { ok: true, session: await view({ ...current, name }), text: `Renamed "${current.name}" to "${name}".` };
    },
    async remove(chatKey, name) {
      const target = await named(chatKey, name);
      if (!target) return fail('not_found', `No session named "${name}" in this chat. ${formatNames(await ensure(chatKey))}`);
      if (target.current) return fail('current', `"${target.name}" is the current session: /switch to another one before deleting it (or /reset to clear it).`);
      await deps.reset(target.sessionKey);
      await deps.store.removeChatSession(chatKey, target.name);
      return { ok: true, session: await view(target, null), text: `Deleted "${target.name}" and its conversation.` };
    },
    async listKeys() {
      const byKey = new Map<string, SessionKeyView>();
      const put = (key: string, s: SessionRecord | undefined, createdAt: number) =>
        byKey.set(key, {
          key,
          lastActivity: Math.max(s?.updatedAt ?? 0, createdAt),
          createdAt: s?.createdAt ?? createdAt,
          turns: s?.turns ?? 0,
          ...(s ? { engine: s.engine } : {}),
        });
      const [all, chats] = await Promise.all([deps.store.listSessions(), deps.store.allChatSessions()]);
      const sessions = new Map(all.map((s) => [s.key, s]));
      for (const s of sessions.values()) put(s.key, s, s.createdAt);
      for (const c of chats) {
        if (!byKey.has(c.sessionKey)) put(c.sessionKey, sessions.get(c.sessionKey), c.createdAt);
        const entry = byKey.get(c.sessionKey);
        if (entry) entry.chat = { key: c.chatKey, name: c.name, current: c.current };
      }
      return [...byKey.values()].sort((a, b) => b.lastActivity - a.lastActivity || (a.key < b.key ? -1 : 1));
    },
    history: (key, limit) => deps.store.readHistory(key, limit),
  };
}

// --- internal ---

function formatNames(rows: ChatSession[]): string {
  return `Sessions: ${rows.map((s) => s.name).join(', ')}.`;
}

export function formatTurns(n: number): string {
  return n === 1 ? '1 turn' : `${n} turns`;
}
