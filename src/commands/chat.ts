import readline from 'node:readline';
import type { Assistant } from '../core/assistant/assistant.js';
import { commandResult, isSlashCommand } from '../core/assistant/slash-commands.js';
import { createLogger } from '../core/logger.js';
import { addTaskRunner, openAssistantDirectory } from '../assistant-directory.js';
import { createChatRenderer, type ChatRenderer } from './chat-render.js';
import type { CommandIO } from './io.js';

export interface ChatOptions {
  dir: string;
  session: string;
  message?: string;
  json?: boolean;
}

/**
 * `service chat`: a terminal chat on the same core as the gateway. `-m` runs one turn and exits
 * (1 when it failed); otherwise a REPL: a line ending in `\` continues on the next line, Ctrl-C
 * stops the running turn, Ctrl-C twice at the prompt (or Ctrl-D) exits.
 */
export async function runChat(opts: ChatOptions, io: CommandIO): Promise<number> {
  const opened = openAssistantDirectory({ dir: opts.dir, log: createLogger({ level: 'warn' }) });
  addTaskRunner(opened);
  // The terminal's own command, in the same table, so /help lists it (the REPL acts on it before sending).
  opened.commands.add({
    name: 'exit',
    usage: '/exit',
    help: 'leave the chat (also /quit, Ctrl-D)',
    changesConfig: () => false,
    run: async () => commandResult('Bye.'),
  });
  const renderer = createChatRenderer(io, { json: Boolean(opts.json), tty: io.isTTY });
  try {
    if (opts.message !== undefined) return await oneTurn(opened.assistant, renderer, opts.message, opts.session);
    return await repl(opened.assistant, renderer, io, opts);
  } finally {
    await opened.assistant.drain(0);
    await opened.close();
  }
}

// --- internal ---

/** One message or slash command; resolves true when it succeeded. */
async function send(assistant: Assistant, renderer: ChatRenderer, message: string, sessionKey: string, signal?: AbortSignal): Promise<boolean> {
  if (isSlashCommand(message)) {
    const result = await assistant.runCommand(message, { sessionKey, source: 'terminal', sender: process.env.USER ?? 'terminal' });
    renderer.command(result);
    return result.error === undefined;
  }
  await renderer.startTurn();
  let ok = false;
  for await (const e of assistant.chat(message, { sessionKey, source: 'terminal', sender: process.env.USER ?? 'terminal', ...(signal ? { signal } : {}) })) {
    renderer.event(e);
    if (e.type === 'completion') ok = e.status === 'completed' || e.status === 'silent';
  }
  return ok;
}

async function oneTurn(assistant: Assistant, renderer: ChatRenderer, message: string, sessionKey: string): Promise<number> {
  const ctl = new AbortController();
  const onSigint = () => ctl.abort();
  process.once('SIGINT', onSigint);
  try {
    return (await send(assistant, renderer, message, sessionKey, ctl.signal)) ? 0 : 1;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

async function repl(assistant: Assistant, renderer: ChatRenderer, io: CommandIO, opts: ChatOptions): Promise<number> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: io.isTTY, historySize: 200 });
  const prompt = io.isTTY ? 'you> ' : '';
  let buffer: string[] = [];
  let turn: AbortController | undefined;
  let lastInterrupt = 0;
  let closing = false;
  const pending: string[] = [];
  let working = false;

  if (io.isTTY) {
    const { name, engine } = assistant.status();
    renderer.note(
      `${name} on ${engine}, session "${opts.session}". /help for commands; end a line with \\ to continue it; Ctrl-C stops a reply; Ctrl-C twice or Ctrl-D quits.`,
    );
  }
  const ask = () => {
    rl.setPrompt(buffer.length > 0 ? '...> ' : prompt);
    if (io.isTTY) rl.prompt();
  };

  return new Promise<number>((resolve) => {
    const finish = () => {
      if (working) return; // exit once the running turn has ended
      rl.close();
      resolve(0);
    };
    const drain = async () => {
      if (working) return;
      working = true;
      while (pending.length > 0) {
        const message = pending.shift() ?? '';
        if (message === '/exit' || message === '/quit') {
          closing = true;
          pending.length = 0;
          break;
        }
        // readline keeps reading during the turn: a paused interface would swallow Ctrl-C.
        turn = new AbortController();
        await send(assistant, renderer, message, opts.session, turn.signal).catch((err: unknown) => renderer.note(`error: ${(err as Error).message}`));
        turn = undefined;
      }
      working = false;
      if (closing) finish();
      else ask();
    };

    rl.on('line', (line) => {
      if (line.endsWith('\\')) {
        buffer.push(line.slice(0, -1));
        ask();
        return;
      }
      // Leading spaces stay: " /help" is text for the assistant, "/help" a command.
      const message = [...buffer, line].join('\n').trimEnd();
      buffer = [];
      if (message.trim() === '') return ask();
      pending.push(message);
      void drain();
    });
    rl.on('SIGINT', () => {
      if (turn) {
        turn.abort();
        return;
      }
      if (buffer.length > 0 || rl.line.length > 0) {
        buffer = [];
        io.write('\n');
        return ask();
      }
      if (Date.now() - lastInterrupt < 2_000) {
        closing = true;
        io.write('\n');
        return finish();
      }
      lastInterrupt = Date.now();
      renderer.note('(press Ctrl-C again to quit)');
      ask();
    });
    rl.on('close', () => {
      closing = true;
      finish();
    });
    ask();
  });
}
