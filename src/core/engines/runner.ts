import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { errorMessage } from '../errors.js';
import type { AgentEvent } from '../events.js';
import { createAsyncQueue } from '../util/async-queue.js';
import { createLineSplitter } from './lines.js';
import type { ProcessIdentity } from '../store/types.js';
import { createTail, findUnspawnable, type ResidentHandle, type ResidentOutput, type ResidentSpec, type SpawnTarget, waitForEnd } from './process-io.js';
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

/**
 * The engine in its own process group (and session): the tree finds the group and what left it.
 * The output is read as it comes (and bounded) by the caller; execa keeps none of it. An engine
 * that exits without reading its stdin (or dies mid-conversation) must not take this process down
 * with EPIPE; stream errors end the output early at worst.
 */
async function spawnInGroup(spec: SpawnTarget, o: { stdin: boolean; timeoutMs?: number; graceMs: number; cancel: AbortSignal }) {
  const { execa } = await loadExeca();
  // Every process the engine starts inherits this unless it clears its environment: the tree finds
  // what escaped it (process-tree.ts), so a member's background job cannot outlive the turn's check.
  const marker = `${RUN_MARKER}=${randomUUID()}`;
  const child = execa(spec.binary, spec.args, {
    cwd: spec.cwd,
    env: { ...spec.env, [RUN_MARKER]: marker.slice(RUN_MARKER.length + 1) },
    extendEnv: false,
    detached: true,
    stdin: o.stdin ? 'pipe' : 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    reject: false,
    ...(o.timeoutMs !== undefined ? { timeout: o.timeoutMs } : {}),
    cancelSignal: o.cancel,
    killSignal: 'SIGTERM',
    forceKillAfterDelay: o.graceMs,
    windowsHide: true,
  });
  if (child.pid === undefined) {
    // execa reports a process that could not start (ENOENT, EACCES) as a failed result.
    const r = await child;
    const why = r.code === 'ENOENT' ? 'not found on PATH' : r.code === 'EACCES' ? 'not allowed to run it (is it executable?)' : r.shortMessage;
    return { ok: false as const, message: `cannot start ${path.basename(spec.binary)}: ${why}` };
  }
  child.stdin?.on('error', () => undefined);
  child.stdout?.on('error', () => undefined);
  child.stderr?.on('error', () => undefined);
  return { ok: true as const, child, pid: child.pid, marker };
}

/** The environment variable that marks one engine run's processes. */
const RUN_MARKER = 'SERVICE_RUN_ID';

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
  // A conversing engine keeps stdin open for the whole turn; otherwise the prompt, if any, then
  // EOF. Written below rather than with execa's `input`, which builds a stream per turn for it
  // (0.5 ms of CPU per turn, measured).
  const spawned = await spawnInGroup(spec, {
    stdin: Boolean(parser.conversation) || spec.stdin !== undefined,
    timeoutMs: spec.timeoutMs,
    graceMs,
    cancel: cancel.signal,
  });
  if (!spawned.ok) {
    emit({ type: 'error', code: 'spawn_failed', message: spawned.message });
    return;
  }
  const { child } = spawned;
  if (!parser.conversation && spec.stdin !== undefined) child.stdin?.end(spec.stdin);

  const watched = watchChild(spawned, spec, {
    line: (line) => output.parse(() => parser.parseLine(line)),
    overflow: (n) => emit({ type: 'warning', message: `dropped an output line longer than ${n} characters` }),
  });

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

  // The engine is gone: processes started by a turn do not outlive it.
  const { timedOut } = await watched.finish(spec.drainMs ?? 1_000, graceMs);

  const exitInfo: ExitInfo = { ...exit, stderrTail: watched.stderr.text() };
  if (!stopReason && !timedOut) output.parse(() => parser.finish(exitInfo));
  emit(output.end({ exit, exitInfo, stopReason, timedOut, conversationEnded: ended, durationMs: Date.now() - started }));
}

/**
 * Start an engine that stays resident. The same process handling as a per-turn run (its own
 * process group, bounded lines and stderr tail, the tree ended with it, killed if this process
 * exits), without a timeout of its own: the turn on it has one (warm/resident-process.ts).
 */
export async function startResident(spec: ResidentSpec, out: ResidentOutput): Promise<{ ok: true; handle: ResidentHandle } | { ok: false; message: string }> {
  const refused = findUnspawnable(spec);
  if (refused) return { ok: false, message: `cannot start ${path.basename(spec.binary)}: ${refused}` };
  const graceMs = spec.killGraceMs ?? 2_000;
  const cancel = new AbortController();
  const spawned = await spawnInGroup(spec, { stdin: true, graceMs, cancel: cancel.signal });
  if (!spawned.ok) return spawned;
  const { child, pid } = spawned;
  const { tree, stderr, finish } = watchChild(spawned, spec, out);
  let running = true;
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const ended = (async (): Promise<ExitInfo> => {
    const exit = await exited;
    running = false;
    await finish(1_000, graceMs);
    return { ...exit, stderrTail: stderr.text() };
  })();
  return {
    ok: true,
    handle: {
      pid,
      ended,
      alive: () => running,
      send(line) {
        if (running && child.stdin?.writable) child.stdin.write(`${line}\n`);
      },
      processes: () => tree.tracked(),
      endStrays: () => tree.terminateStrays(graceMs),
      stop() {
        child.stdin?.end();
        cancel.abort();
        return ended;
      },
    },
  };
}

type Spawned = Extract<Awaited<ReturnType<typeof spawnInGroup>>, { ok: true }>;

/**
 * A started engine's output and process tree, read and watched the same way per turn and
 * resident. Lines are split here rather than by execa's line-wise transforms: those grow a line
 * without bound, and an engine printing one endless line must not take the gateway's memory.
 * The tree is watched while the engine runs, so a tool shell re-parented after its parent died is
 * still found.
 */
function watchChild({ child, pid, marker }: Spawned, spec: Pick<ProcessSpec, 'onProcesses'>, out: ResidentOutput) {
  const stderr = createTail();
  const splitter = createLineSplitter(out.line, { onOverflow: out.overflow });
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => splitter.push(chunk));
  child.stderr?.on('data', (chunk: string) => stderr.push(chunk));
  const tree = createProcessTree(pid, { marker });
  const untrack = trackTree(tree);
  spec.onProcesses?.(tree.tracked());
  const unwatch = watchTree(tree, () => spec.onProcesses?.(tree.tracked()));
  return {
    stderr,
    tree,
    /** Once the root exited: its pipe drained for up to `drainMs`, what it left running ended, execa's result. */
    async finish(drainMs: number, graceMs: number) {
      unwatch();
      await waitForEnd(child.stdout, drainMs);
      await tree.terminate(graceMs);
      child.stdout?.destroy();
      child.stderr?.destroy();
      const result = await child;
      untrack();
      splitter.flush();
      return result;
    },
  };
}
