import { errorMessage } from '../../errors.js';
import { TIMEOUT_MESSAGE, type AgentEvent, type FailureKind } from '../../events.js';
import type { ProcessIdentity } from '../../store/types.js';
import { createAsyncQueue } from '../../util/async-queue.js';
import { describeExit } from '../parse-helpers.js';
import type { ResidentHandle, ResidentSpec } from '../process-io.js';
import { type ExitInfo, startResident } from '../runner.js';
import type { EngineTurn } from '../types.js';
import type { ResidentProtocol } from './protocol.js';

/**
 * A resident engine process with its protocol: turns one at a time, each ending in exactly one
 * `done` or `error`, as a per-turn run does. An abort asks the engine to interrupt the turn and
 * keeps the process; an engine that does not end the turn within the grace is stopped. A timeout
 * stops the process (it may be stuck), and so does a crash or a protocol that cannot go on: the
 * next turn of the conversation then starts another process, which resumes the engine session.
 */
export interface ResidentProcess {
  readonly pid: number;
  /** Whether it can take another turn: running and not broken. */
  usable(): boolean;
  /** Whether the engine ever took a turn (ready); a process that failed before that failed to start. */
  everReady(): boolean;
  runTurn(turn: EngineTurn, opts: TurnOptions): AsyncIterable<AgentEvent>;
  processes(): ProcessIdentity[];
  /** Resolves when the process ended (stopped, or by itself). */
  readonly ended: Promise<ExitInfo>;
  stop(): Promise<void>;
}

export interface TurnOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** How long the engine may take to end an interrupted turn before the process is stopped (default 5 s). */
  interruptGraceMs?: number;
}

export async function startResidentProcess(
  spec: ResidentSpec,
  protocol: ResidentProtocol,
): Promise<{ ok: true; process: ResidentProcess } | { ok: false; message: string }> {
  let turn: TurnState | undefined;
  let broken: string | undefined;
  let ready = false;
  const deliver = (events: AgentEvent[]) => {
    for (const e of events) turn?.take(e);
  };
  const guarded = (what: string, fn: () => AgentEvent[]) => {
    try {
      deliver(fn());
    } catch (err) {
      // A protocol that throws cannot be trusted with another turn: this one fails, the process goes.
      broken = `could not ${what}: ${errorMessage(err)}`;
      turn?.fail('internal', broken);
      void started.handle?.stop();
    }
  };
  const started: { handle?: ResidentHandle } = {};
  const result = await startResident(spec, {
    line: (line) => guarded('read the engine output', () => protocol.parseLine(line)),
    overflow: (n) => deliver([{ type: 'warning', message: `dropped an output line longer than ${n} characters` }]),
  });
  if (!result.ok) return result;
  const { handle } = result;
  started.handle = handle;
  const stopProcess = async () => {
    protocol.close?.();
    await handle.stop();
  };
  void handle.ended.then((exit) => {
    protocol.close?.();
    const current = turn;
    if (!current) return;
    let events: AgentEvent[] = [];
    try {
      events = protocol.exited(exit);
    } catch {
      // the exit is reported below all the same
    }
    current.exited(exit, events);
  });
  protocol.open({
    send: (line) => handle.send(line),
    emit: deliver,
    ready: () => {
      ready = true;
    },
    broken: (why) => {
      broken = why;
    },
  });

  const process: ResidentProcess = {
    pid: handle.pid,
    usable: () => handle.alive() && broken === undefined,
    everReady: () => ready,
    ended: handle.ended,
    processes: () => handle.processes(),
    stop: stopProcess,
    runTurn(engineTurn, opts) {
      const queue = createAsyncQueue<AgentEvent>();
      if (!process.usable() || turn) {
        queue.push({ type: 'error', code: 'spawn_failed', message: broken ?? 'the resident engine process has ended', kind: 'engine' });
        queue.end();
        return queue;
      }
      turn = createTurnState(opts, queue, {
        interrupt: () => protocol.interrupt(),
        stop: () => void stopProcess(),
        // The turn's end is told once what it left running is gone, as a per-turn run's is: the
        // check after a member's turn must not race a background job still writing.
        settled: async (keep) => {
          turn = undefined;
          await (keep ? handle.endStrays() : stopProcess()).catch(() => undefined);
        },
      });
      guarded('start the turn', () => protocol.startTurn(engineTurn));
      return queue;
    },
  };
  return { ok: true, process };
}

// --- internal ---

interface TurnState {
  take(e: AgentEvent): void;
  fail(code: 'internal', message: string): void;
  /** The process ended during the turn; `events`: what the protocol says of it. */
  exited(exit: ExitInfo, events: AgentEvent[]): void;
}

interface TurnControl {
  interrupt(): void;
  stop(): void;
  /** The turn is over; `keep`: the process can take the next one. */
  settled(keep: boolean): Promise<void>;
}

function createTurnState(opts: TurnOptions, queue: ReturnType<typeof createAsyncQueue<AgentEvent>>, control: TurnControl): TurnState {
  const started = Date.now();
  const texts: string[] = [];
  let finalText: string | undefined;
  let failure: { message: string; kind: FailureKind } | undefined;
  let stopReason: 'aborted' | 'timeout' | undefined;
  let over = false;
  const timers: NodeJS.Timeout[] = [];

  const end = (terminal: AgentEvent, keep: boolean) => {
    if (over) return;
    over = true;
    for (const t of timers) clearTimeout(t);
    opts.signal?.removeEventListener('abort', onAbort);
    void control.settled(keep).then(() => {
      queue.push(terminal);
      queue.end();
    });
  };
  /** The engine ended the turn itself (its answer, its failure, or the end of an interrupted turn). */
  const endByEngine = () => {
    if (stopReason === 'aborted') return end({ type: 'error', code: 'aborted', message: 'Aborted' }, true);
    if (failure) {
      // A session the engine does not know leaves the process with nothing to continue.
      return end({ type: 'error', code: 'engine_reported', message: failure.message, kind: failure.kind }, failure.kind !== 'session_not_found');
    }
    end({ type: 'done', text: finalText ?? texts.join(''), durationMs: Date.now() - started }, true);
  };
  const onAbort = () => {
    if (stopReason || over) return;
    stopReason = 'aborted';
    control.interrupt();
    // An engine that cannot wind the turn down in time is stopped; the next turn starts another.
    timers.push(setTimeout(control.stop, opts.interruptGraceMs ?? 5_000));
  };
  timers.push(
    setTimeout(() => {
      if (stopReason === 'aborted') return;
      stopReason = 'timeout';
      control.stop();
    }, opts.timeoutMs),
  );
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) onAbort();

  return {
    take(e) {
      if (over) return;
      if (e.type === 'text') texts.push(e.delta);
      else if (e.type === 'final') finalText = e.text;
      else if (e.type === 'failure') failure = { message: e.message, kind: e.kind };
      if (e.type !== 'final' && e.type !== 'failure') queue.push(e);
      if ((e.type === 'final' || e.type === 'failure') && stopReason !== 'timeout') endByEngine();
    },
    fail(code, message) {
      end({ type: 'error', code, message, kind: 'engine' }, false);
    },
    exited(exit, events) {
      if (over) return;
      for (const e of events) {
        if (e.type === 'failure') failure ??= { message: e.message, kind: e.kind };
        else if (e.type !== 'final') queue.push(e);
      }
      if (stopReason === 'aborted') return end({ type: 'error', code: 'aborted', message: 'Aborted' }, false);
      if (stopReason === 'timeout') return end({ type: 'error', code: 'timeout', message: TIMEOUT_MESSAGE }, false);
      const f = failure;
      if (f) return end({ type: 'error', code: 'engine_reported', message: f.message, kind: f.kind, stderrTail: exit.stderrTail, exitCode: exit.code }, false);
      const last = exit.stderrTail
        .split('\n')
        .filter((l) => l.trim())
        .pop();
      const message = `${describeExit('the engine', exit)} during the turn${last ? `: ${last.trim()}` : ''}`;
      end({ type: 'error', code: 'exit_nonzero', message, kind: 'engine', stderrTail: exit.stderrTail, exitCode: exit.code }, false);
    },
  };
}
