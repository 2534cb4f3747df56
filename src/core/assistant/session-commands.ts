import { type ChatSessions, type ChatSessionView, formatTurns, type SessionChange } from './chat-sessions.js';
import { type CommandCall, type CommandResult, commandResult, type SlashCommand } from '../commands/command-table.js';

/**
 * /new, /sessions, /switch, /rename, /delete: named sessions of the chat the command came from.
 * They need the chat (`call.chatKey`: channels and the terminal); over HTTP a session is its
 * `sessionKey`, so there they explain that instead.
 */
export function createSessionCommands(sessions: ChatSessions, now: () => number): SlashCommand[] {
  const never = () => false;
  /** Words after the command; a name typed with spaces on a phone ("bug fix") becomes "bug-fix". */
  const nameOf = (args: string[]) => (args.length > 0 ? args.join('-') : undefined);
  const inChat = (call: CommandCall, run: (chatKey: string) => CommandResult | Promise<CommandResult>) =>
    call.chatKey === undefined ? notHere() : run(call.chatKey);
  const answer = (change: SessionChange): CommandResult =>
    change.ok ? commandResult(change.text, { session: toJson(change.session) }) : commandResult(change.text, { error: change.error });
  const usage = (text: string) => commandResult(text, { error: 'usage' });

  return [
    {
      name: 'new',
      usage: '/new [name]',
      help: 'start a new session in this chat (the current one is kept)',
      changesConfig: never,
      run: async (args, call) => inChat(call, async (chat) => answer(await sessions.create(chat, nameOf(args)))),
    },
    {
      name: 'sessions',
      usage: '/sessions',
      help: "this chat's sessions: name, last used, turns",
      changesConfig: never,
      run: async (_args, call) =>
        inChat(call, async (chat) => {
          const list = await sessions.list(chat);
          return commandResult(formatSessionList(list, now()), { sessions: list.map(toJson) });
        }),
    },
    {
      name: 'switch',
      usage: '/switch <name>',
      help: 'continue another session of this chat',
      changesConfig: never,
      run: async (args, call) =>
        inChat(call, async (chat) =>
          args.length ? answer(await sessions.switchTo(chat, nameOf(args) ?? '')) : usage('Usage: `/switch <name>` (/sessions lists them)'),
        ),
    },
    {
      name: 'rename',
      usage: '/rename <name>',
      help: 'rename the current session',
      changesConfig: never,
      run: async (args, call) =>
        inChat(call, async (chat) => (args.length ? answer(await sessions.rename(chat, nameOf(args) ?? '')) : usage('Usage: `/rename <new name>`'))),
    },
    {
      name: 'delete',
      usage: '/delete <name>',
      help: 'delete a session of this chat (not the current one)',
      changesConfig: never,
      run: async (args, call) =>
        inChat(call, async (chat) => (args.length ? answer(await sessions.remove(chat, nameOf(args) ?? '')) : usage('Usage: `/delete <name>`'))),
    },
  ];
}

/**
 * The /sessions answer: the current one marked, newest use first. Commands are inline code: the
 * DingTalk and WeCom renderers drop `<name>` outside code as an HTML tag.
 */
export function formatSessionList(list: readonly ChatSessionView[], now: number): string {
  const sorted = [...list].sort((a, b) => b.lastUsed - a.lastUsed);
  const width = Math.max(...sorted.map((s) => s.name.length));
  const lines = sorted.map((s) => `${s.current ? '→' : ' '} ${s.name.padEnd(width)}  last used ${formatAgo(now - s.lastUsed)}, ${formatTurns(s.turns)}`);
  return [`Sessions of this chat (${list.length}):`, ...lines, '`/new [name]` · `/switch <name>` · `/rename <name>` · `/delete <name>`'].join('\n');
}

/** "just now", "5 min ago", "3 h ago", "2 days ago". */
export function formatAgo(ms: number): string {
  const min = Math.floor(Math.max(0, ms) / 60_000);
  if (min < 1) return 'just now';
  if (min < 60) return `${min} min ago`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.floor(h / 24)} days ago`;
}

// --- internal ---

function notHere(): CommandResult {
  return commandResult(
    'Named sessions belong to chats and the terminal. Over HTTP a session is its sessionKey: send another sessionKey to start a new conversation (GET /api/sessions lists them).',
    { error: 'not_here' },
  );
}

function toJson(s: ChatSessionView) {
  return {
    name: s.name,
    sessionKey: s.sessionKey,
    current: s.current,
    turns: s.turns,
    lastUsed: new Date(s.lastUsed).toISOString(),
    createdAt: new Date(s.createdAt).toISOString(),
  };
}
