import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { errorMessage } from '../errors.js';
import type { AgentEvent } from '../events.js';
import { createAsyncQueue } from '../util/async-queue.js';
import { createLineSplitter } from './lines.js';
import type { ProcessIdentity } from '../store/types.js';
import { createProcessTree, trackTree, watchTree } from './process-tree.js';
import { createRunOutput } from './run-outcome.js';

/**
 * The only subprocess code of the project. It starts an engine CLI through execa in its own
 * process group (execa's timeout, cancel signal and force-kill stop the root), feeds its stdout
 * lines to the engine's parser, keeps a bounded stderr tail, ends what the run left running (the
 * process tree), and ends every run with exactly one terminal event: `done` or `error`.
 */
export interface LineParser {
  /** One stdout line → events. Never throws; unknown lines give []. */
  parseLine(line: string): AgentEvent[];
  /** The process ended: flush state, classify a silent failure from the exit code and stderr. */
  finish(exit: ExitInfo): AgentEvent[];
  /**
   * For engines that hold a conversation over stdin (ACP: JSON-RPC in both directions) instead of
   * reading one prompt: the runner keeps stdin open and hands the conversation a channel to it.
   * The conversation answers the engine's requests from inside parseLine, through that channel.
   */
  readonly conversation?: Conversation;
}

/** The stdin side of an engine that converses; it never sees the process itself. */
export interface Conversation {
  /** The process is running: write the opening messages. */
  open(channel: ConversationChannel): void;
  /** The user aborted: ask the engine to stop. The process group is killed killGraceMs later regardless. */
  cancel?(): void;
}

export interface ConversationChannel {
  /** Write one message (a newline is added) to the engine's stdin; ignored once the channel ended. */
  send(line: string): void;
  /**
   * The turn is over: stdin is closed. An engine still running endGraceMs later is stopped, and
   * that stop is no failure: the conversation already ended.
   */
  end(): void;
}

export interface ExitInfo {
  code: number | null;
  signal: string | null;
  /** Last lines of stderr, ANSI removed. */
  stderrTail: string;
}

export interface ProcessSpec {
  binary: string;
  args: string[];
  cwd: string;
  /** The complete environment of the child (not merged with ours). */
  env: NodeJS.ProcessEnv;
  /** Written to stdin, then closed; stdin is ignored when absent. */
  stdin?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Between SIGTERM and SIGKILL. */
  killGraceMs?: number;
  /** How long stdout may stay open after the engine exited (a grandchild holding the pipe). */
  drainMs?: number;
  /** How long a conversing engine may take to exit by itself once its conversation ended (default 1 s). */
  endGraceMs?: number;
  /**
   * Told every process of the run by identity: at spawn and whenever a snapshot finds more (tool
   * shells in sessions of their own). The caller records them, so a restart after a kill of this
   * process can find and stop what it left running.
   */
  onProcesses?: (processes: ProcessIdentity[]) => void;
}

const STDERR_LINES = 20;
const STDERR_BYTES = 8 * 1024;

export function runProcess(spec: ProcessSpec, parser: LineParser): AsyncIterable<AgentEvent> {
  const queue = createAsyncQueue<AgentEvent>();
  let ended = false;
  const emit = (e: AgentEvent) => {
    if (ended) return;
    if (e.type === 'done' || e.type === 'error') ended = true;
    queue.push(e);
  };
  // supervise() handles every failure it can name; whatever else throws in it is still this run's
  // failure (its error event says so), never an unhandled rejection that ends the process.
  void supervise(spec, parser, emit)
    .catch((err: unknown) => emit({ type: 'error', code: 'internal', message: `the engine run failed: ${errorMessage(err)}`, kind: 'engine' }))
    .finally(() => queue.end());
  return queue;
}

/** `<binary> --version`, first line, bounded so a broken CLI cannot hang `doctor`. */
export async function probeVersion(binary: string, timeoutMs = 15_000): Promise<{ ok: boolean; text: string }> {
  try {
    const { execa } = await loadExeca();
    const r = await execa(binary, ['--version'], { timeout: timeoutMs, reject: false, stdin: 'ignore', all: true });
    const first =
      (r.all ?? '')
        .split('\n')
        .find((l) => l.trim() !== '')
        ?.trim() ?? '';
    if (r.timedOut) return { ok: false, text: `no answer to --version within ${timeoutMs / 1000}s` };
    if (r.exitCode !== 0) return { ok: false, text: `--version exited with ${r.exitCode}: ${first}` };
    return { ok: true, text: first };
  } catch (err) {
    return { ok: false, text: (err as Error).message };
  }
}

/** Run a short helper command of an engine (a model listing) and return its stdout. */
export async function runCapture(spec: Omit<ProcessSpec, 'signal'>): Promise<{ ok: boolean; stdout: string; message: string }> {
  const { execa } = await loadExeca();
  const r = await execa(spec.binary, spec.args, {
    cwd: spec.cwd,
    env: spec.env,
    extendEnv: false,
    timeout: spec.timeoutMs,
    reject: false,
    stdin: 'ignore',
    killSignal: 'SIGKILL',
  });
  const message = r.timedOut ? `timed out after ${spec.timeoutMs} ms` : stripVTControlCharacters(String(r.stderr ?? '')).trim();
  return { ok: !r.failed, stdout: String(r.stdout ?? ''), message };
}

// --- internal ---

/** execa is loaded by the first run, not at start: `service --help` or an idle gateway never pays for it. */
let execaModule: Promise<typeof import('execa')> | undefined;
const loadExeca = () => (execaModule ??= import('execa'));

async function supervise(spec: ProcessSpec, parser: LineParser, emit: (e: AgentEvent) => void): Promise<void> {
  const started = Date.now();
  const graceMs = spec.killGraceMs ?? 2_000;
  const name = path.basename(spec.binary);
  const output = createRunOutput(name, emit, () => stop('failed'));
  let stop: (reason: 'aborted' | 'failed') => void = () => undefined;

  if (spec.signal?.aborted) {
    emit({ type: 'error', code: 'aborted', message: 'Aborted before the engine started' });
    return;
  }
  const refused = findUnspawnable(spec);
  if (refused) {
    emit({ type: 'error', code: 'spawn_failed', message: `cannot start ${name}: ${refused}` });
    return;
  }

  // Every stop is a cancel of the root through execa (SIGTERM, SIGKILL forceKillAfterDelay later),
  // then, once the root has exited, the process tree: what it left running is ended too.
  const cancel = new AbortController();
  // The spawn holds this thread until the engine has started (a fork and an exec: milliseconds,
  // more on a busy machine). Requests already waiting to be read (a burst: its queued turns'
  // response heads) are handled first: one turn of the event loop.
  await new Promise((resolve) => setImmediate(resolve));
  const { execa } = await loadExeca();
  const child = startChild(execa, spec, parser, cancel.signal, graceMs);
  if (child.pid === undefined) {
    // execa reports a process that could not start (ENOENT, EACCES) as a failed result.
    const r = await child;
    const why = r.code === 'ENOENT' ? 'not found on PATH' : r.code === 'EACCES' ? 'not allowed to run it (is it executable?)' : r.shortMessage;
    emit({ type: 'error', code: 'spawn_failed', message: `cannot start ${name}: ${why}` });
    return;
  }
  // An engine that exits without reading its stdin (or dies mid-conversation) must not take this
  // process down with EPIPE; stream errors end the output early at worst.
  child.stdin?.on('error', () => undefined);
  child.stdout?.on('error', () => undefined);
  child.stderr?.on('error', () => undefined);
  if (!parser.conversation && spec.stdin !== undefined) child.stdin?.end(spec.stdin);

  const stderr = createTail();
  // Lines are split here rather than by execa's line-wise transforms: those grow a line without
  // bound, and an engine printing one endless line must not take the gateway's memory.
  const splitter = createLineSplitter((line) => output.parse(() => parser.parseLine(line)), {
    onOverflow: (n) => emit({ type: 'warning', message: `dropped an output line longer than ${n} characters` }),
  });
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => splitter.push(chunk));
  child.stderr?.on('data', (chunk: string) => stderr.push(chunk));

  const tree = createProcessTree(child.pid);
  const untrack = trackTree(tree);
  // Snapshots while the engine runs: a tool shell re-parented after its parent died is still found.
  spec.onProcesses?.(tree.tracked());
  const unwatch = watchTree(tree, () => spec.onProcesses?.(tree.tracked()));

  let stopReason: 'aborted' | 'failed' | undefined;
  const timers: NodeJS.Timeout[] = [];
  stop = (reason) => {
    if (stopReason) return;
    stopReason = reason;
    if (reason === 'aborted' && parser.conversation?.cancel) {
      // Let the engine wind its turn down (ACP session/cancel) before it is stopped.
      parser.conversation.cancel();
      timers.push(setTimeout(() => cancel.abort(), graceMs));
    } else cancel.abort();
  };
  if (output.parserFailure !== undefined) stop('failed'); // a line arrived (and failed) before the pid was known
  // The root's exit, not the end of execa's promise: a grandchild holding the output pipe would hold that.
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let ended = false;
  if (parser.conversation) {
    parser.conversation.open({
      send: (line) => {
        if (!ended && child.stdin?.writable) child.stdin.write(`${line}\n`);
      },
      end: () => {
        if (ended) return;
        ended = true;
        child.stdin?.end();
        timers.push(setTimeout(() => cancel.abort(), spec.endGraceMs ?? 1_000));
      },
    });
  }
  const onAbort = () => stop('aborted');
  spec.signal?.addEventListener('abort', onAbort, { once: true });
  if (spec.signal?.aborted) onAbort(); // while execa loaded

  const exit = await exited;
  for (const t of timers) clearTimeout(t);
  spec.signal?.removeEventListener('abort', onAbort);

  // The engine is gone; give its pipe a moment to drain, then clear out anything it left running:
  // processes started by a turn do not outlive it.
  unwatch();
  await waitForEnd(child.stdout, spec.drainMs ?? 1_000);
  await tree.terminate(graceMs);
  child.stdout?.destroy();
  child.stderr?.destroy();
  const { timedOut } = await child;
  untrack();
  splitter.flush();

  const exitInfo: ExitInfo = { ...exit, stderrTail: stderr.text() };
  if (!stopReason && !timedOut) output.parse(() => parser.finish(exitInfo));
  emit(output.end({ exit, exitInfo, stopReason, timedOut, conversationEnded: ended, durationMs: Date.now() - started }));
}

/**
 * The engine's process through execa, with every stop through `cancel` (SIGTERM, SIGKILL
 * `graceMs` later). Its stdin is a pipe for a conversing engine or a prompt, else ignored.
 */
function startChild(execa: typeof import('execa').execa, spec: ProcessSpec, parser: LineParser, cancel: AbortSignal, graceMs: number) {
  return execa(spec.binary, spec.args, {
    cwd: spec.cwd,
    env: spec.env,
    extendEnv: false,
    // Its own process group (and session): the tree below finds the group and what left it.
    detached: true,
    // A conversing engine keeps stdin open for the whole turn; otherwise the prompt, if any, then
    // EOF. Written below rather than with execa's `input`, which builds a stream per turn for it
    // (0.5 ms of CPU per turn, measured).
    stdin: parser.conversation || spec.stdin !== undefined ? 'pipe' : 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    // The output is read as it comes (and bounded) below; execa keeps none of it.
    buffer: false,
    reject: false,
    timeout: spec.timeoutMs,
    cancelSignal: cancel,
    killSignal: 'SIGTERM',
    forceKillAfterDelay: graceMs,
    windowsHide: true,
  });
}

/**
 * What the OS would refuse to spawn, said without echoing the value (it may be a secret). Config
 * and request validation reject NUL where values enter; this covers values from anywhere else
 * (an engine's own session id, a channel message on an engine that takes the prompt as argv).
 */
function findUnspawnable(spec: ProcessSpec): string | undefined {
  const at = spec.args.findIndex((a) => a.includes('\0'));
  if (at >= 0) return `argument ${at + 1} contains a NUL byte, which no program can receive`;
  for (const [key, value] of Object.entries(spec.env)) {
    if (key.includes('\0')) return 'an environment variable name contains a NUL byte, which no program can receive';
    if (value?.includes('\0')) return `environment variable ${key} contains a NUL byte, which no program can receive`;
  }
  if (spec.binary.includes('\0') || spec.cwd.includes('\0')) return 'its path contains a NUL byte';
  return undefined;
}

function waitForEnd(stream: NodeJS.ReadableStream | null | undefined, ms: number): Promise<void> {
  if (!stream || (stream as { readableEnded?: boolean }).readableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    stream.once('end', () => {
      clearTimeout(timer);
      resolve();
    });
    stream.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The last STDERR_LINES lines / STDERR_BYTES bytes of stderr; a flood cannot grow memory. */
function createTail() {
  let buf = '';
  return {
    push(chunk: string) {
      buf += chunk;
      if (buf.length > STDERR_BYTES * 2) buf = buf.slice(-STDERR_BYTES);
    },
    text() {
      const lines = stripVTControlCharacters(buf).split('\n');
      return lines
        .slice(-STDERR_LINES - 1)
        .join('\n')
        .slice(-STDERR_BYTES)
        .trim();
    },
  };
}
