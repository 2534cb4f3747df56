import readline from 'node:readline';
import type { Assistant } from '../core/assistant/assistant.js';
import { commandResult, isSlashCommand } from '../core/commands/command-table.js';
import { createLogger } from '../core/logger.js';
import { addTaskRunner, openAssistantDirectory } from '../assistant-directory.js';
import type { FileInput } from '../core/files/incoming.js';
import { formatFileLine, readLocalAttachment, saveDownload } from './chat-files.js';
import type { ApprovalRequest } from '../core/approvals/approvals.js';
import { APPROVAL_QUESTION, createInlineApprovals, type InlineApprovals } from './chat-approvals.js';
import { createChatRenderer, type ChatRenderer } from './chat-render.js';
import type { CommandIO } from './io.js';
import { SIGNAL_EXIT, stopTurnsOn } from './stop-signals.js';

export interface ChatCommandOptions {
  dir: string;
  session: string;
  message?: string;
  /** Files to send with the message (`--file`). */
  files?: string[];
  json?: boolean;
}

/** What one chat in the terminal carries between messages: files attached with /attach. */
interface Terminal {
  assistant: Assistant;
  renderer: ChatRenderer;
  dir: string;
  attached: FileInput[];
}

/**
 * `service chat`: a terminal chat on the same core as the gateway. `-m` runs one turn and exits
 * (1 when it failed, 130 when Ctrl-C stopped it); otherwise a REPL: a line ending in `\` continues on the next line, Ctrl-C
 * stops the running turn, Ctrl-C twice at the prompt (or Ctrl-D) exits. An engine's permission
 * request (skipPermissions false) is answered by the next line of input (chat-approvals.ts).
 */
export async function runChat(opts: ChatCommandOptions, io: CommandIO): Promise<number> {
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
  const term: Terminal = { assistant: opened.assistant, renderer, dir: opened.dir, attached: [] };
  opened.commands.add({
    name: 'attach',
    usage: '/attach <path>',
    help: 'send a file with your next message (saved into inbox/)',
    changesConfig: () => false,
    run: async (args) => {
      if (args.length === 0) return commandResult('Usage: /attach <path>', { error: 'usage' });
      const file = readLocalAttachment(args.join(' '));
      term.attached.push(file);
      return commandResult(`Attached ${file.name}: it goes with your next message.`);
    },
  });
  // A closed terminal or a `kill`: the engine is stopped, then the chat ends as the signal would have
  // ended it. So does Ctrl-C for a chat reading a pipe (no terminal's readline takes it, and no turn of `-m`).
  const pipedRepl = opts.message === undefined && !io.isTTY;
  // Once the engine is stopped, the REPL ends without reading further (lines read ahead from a pipe included).
  const stopped = new AbortController();
  const hangup = stopTurnsOn(opened.assistant, pipedRepl ? ['SIGINT', 'SIGHUP', 'SIGTERM'] : ['SIGHUP', 'SIGTERM'], () => stopped.abort());
  try {
    let code: number;
    if (opts.message !== undefined) {
      for (const f of opts.files ?? []) term.attached.push(readLocalAttachment(f));
      code = await oneTurn(term, io, opts.message, opts.session, Boolean(opts.json));
    } else code = await repl(term, io, opts, stopped.signal);
    const signal = hangup.received();
    return signal ? SIGNAL_EXIT[signal] : code;
  } finally {
    hangup.off();
    await opened.assistant.drain(0);
    await opened.close();
  }
}

// --- internal ---

/** One message or slash command; resolves true when it succeeded. */
async function send(
  term: Terminal,
  message: string,
  sessionKey: string,
  signal?: AbortSignal,
  onApproval?: (request: ApprovalRequest) => void,
): Promise<boolean> {
  const { assistant, renderer } = term;
  if (isSlashCommand(message)) {
    const result = await assistant.runCommand(message, { chatKey: sessionKey, source: 'terminal', sender: process.env.USER ?? 'terminal' });
    renderer.command(result);
    return result.error === undefined;
  }
  await renderer.startTurn();
  let ok = false;
  const files = term.attached.splice(0);
  const turn = assistant.chat(message, {
    chatKey: sessionKey,
    source: 'terminal',
    sender: process.env.USER ?? 'terminal',
    ...(files.length ? { files } : {}),
    ...(signal ? { signal } : {}),
  });
  for await (const e of turn) {
    if (e.type === 'file') {
      const outcome = saveDownload(term.dir, e);
      renderer.event('saved' in outcome ? { ...e, path: outcome.saved } : e);
      renderer.note(formatFileLine(e, outcome));
      continue;
    }
    renderer.event(e);
    if (e.type === 'approval_request') {
      const { type: _type, ...request } = e;
      onApproval?.(request);
    }
    if (e.type === 'completion') ok = e.status === 'completed' || e.status === 'silent';
  }
  return ok;
}

async function oneTurn(term: Terminal, io: CommandIO, message: string, sessionKey: string, json: boolean): Promise<number> {
  const { assistant, renderer } = term;
  const ctl = new AbortController();
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    ctl.abort();
  };
  process.once('SIGINT', onSigint);
  // stdin is only read when the engine asks for a permission: the answer is its next line.
  let rl: readline.Interface | undefined;
  const approvals = createInlineApprovals({
    assistant,
    sessionKey,
    ask: () => {
      if (!rl) {
        rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: io.isTTY });
        rl.on('line', (line) => approvals.offer(line));
        rl.on('close', () => approvals.endOfInput());
        // A terminal readline takes Ctrl-C from the process: it still stops the turn.
        rl.on('SIGINT', onSigint);
      }
      showQuestion(rl, renderer, io, json);
    },
    say: (text) => renderer.note(text),
  });
  try {
    const ok = await send(term, message, sessionKey, ctl.signal, (r) => approvals.request(r));
    // Stopped by Ctrl-C: the user's choice, not a failure; the shell sees what it sees for SIGINT.
    return interrupted ? SIGNAL_EXIT.SIGINT : ok ? 0 : 1;
  } finally {
    approvals.turnEnded();
    rl?.close();
    process.removeListener('SIGINT', onSigint);
  }
}

/** The approval question: the prompt on a terminal, a plain line otherwise (none in --json, whose event says it). */
function showQuestion(rl: readline.Interface, renderer: ChatRenderer, io: CommandIO, json: boolean): void {
  if (json) return;
  if (io.isTTY) {
    rl.setPrompt(APPROVAL_QUESTION);
    rl.prompt();
  } else renderer.note(APPROVAL_QUESTION.trim());
}

async function repl(term: Terminal, io: CommandIO, opts: ChatCommandOptions, stopped: AbortSignal): Promise<number> {
  const { assistant, renderer } = term;
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: io.isTTY, historySize: 200 });
  const prompt = io.isTTY ? 'you> ' : '';
  let buffer: string[] = [];
  let turn: AbortController | undefined;
  let lastInterrupt = 0;
  let closing = false;
  const pending: string[] = [];
  let working = false;
  let inputEnded = false;
  const approvals: InlineApprovals = createInlineApprovals({
    assistant,
    sessionKey: opts.session,
    ask: () => showQuestion(rl, renderer, io, Boolean(opts.json)),
    say: (text) => renderer.note(text),
  });
  const onApproval = (request: ApprovalRequest) => {
    approvals.request(request);
    // Piped input is read ahead: the line after the message that started the turn is the answer.
    if (!io.isTTY && approvals.waiting() && pending.length > 0) approvals.offer(pending.shift() ?? '');
    if (approvals.waiting() && inputEnded && pending.length === 0) approvals.endOfInput();
  };

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
        await send(term, message, opts.session, turn.signal, onApproval).catch((err: unknown) => renderer.note(`error: ${(err as Error).message}`));
        approvals.turnEnded();
        turn = undefined;
      }
      working = false;
      if (closing) finish();
      else ask();
    };

    rl.on('line', (line) => {
      if (approvals.offer(line)) return;
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
      inputEnded = true;
      if (pending.length === 0) approvals.endOfInput();
      finish();
    });
    stopped.addEventListener(
      'abort',
      () => {
        pending.length = 0;
        rl.close();
      },
      { once: true },
    );
    ask();
  });
}
