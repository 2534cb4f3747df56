import { createShutdownStop, type TurnStop } from './turn-stop.js';

/**
 * What the assistant knows, in memory, about the turns it has admitted: the abort controller of
 * each (so a shutdown reaches the queued ones too), which one runs on each session key (so
 * `/stop` and `POST /abort` reach it), and how many times each key was reset (a turn a reset
 * overtook keeps neither its engine session nor its reply). Each entry is a resource its turn
 * holds and gives back by disposing it (turn-pipeline.ts).
 */
export interface TurnTable {
  /** A new admitted turn's abort controller: it follows `callerSignal` and a shutdown under way. */
  control(callerSignal: AbortSignal | undefined): TurnControl;
  /** The turn of `control` now runs on `key`: `abort(key)` reaches it until this is disposed. */
  runOn(key: string, control: TurnControl): Disposable;
  /** Abort the turn running on `key`; false when none runs. */
  abort(key: string): boolean;
  isRunning(key: string): boolean;
  /** The key was reset: its running turn is aborted and is overtaken from now on. */
  reset(key: string): void;
  /** A function telling whether `key` was reset since now. */
  overtakenFrom(key: string): () => boolean;
  /** Abort every admitted turn, running or queued, with `Aborted: <why>`; turns admitted until `resume()` are stopped too. */
  stopAll(why?: string): void;
  resume(): void;
}

export interface TurnControl extends Disposable {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

export function createTurnTable(): TurnTable {
  const admitted = new Set<AbortController>();
  const running = new Map<string, TurnControl>();
  const resets = new Map<string, number>();
  let stopping: TurnStop | undefined;
  const resetsOf = (key: string) => resets.get(key) ?? 0;

  return {
    control(callerSignal) {
      const ctl = new AbortController();
      admitted.add(ctl);
      const onCallerAbort = () => ctl.abort();
      callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
      if (callerSignal?.aborted) ctl.abort();
      if (stopping) ctl.abort(stopping);
      return {
        signal: ctl.signal,
        abort: (reason) => ctl.abort(reason),
        [Symbol.dispose]() {
          admitted.delete(ctl);
          callerSignal?.removeEventListener('abort', onCallerAbort);
        },
      };
    },
    runOn(key, control) {
      running.set(key, control);
      return {
        [Symbol.dispose]() {
          if (running.get(key) === control) running.delete(key);
        },
      };
    },
    abort(key) {
      const ctl = running.get(key);
      if (!ctl) return false;
      ctl.abort();
      return true;
    },
    isRunning: (key) => running.has(key),
    reset(key) {
      resets.set(key, resetsOf(key) + 1);
      running.get(key)?.abort();
    },
    overtakenFrom(key) {
      const at = resetsOf(key);
      return () => resetsOf(key) !== at;
    },
    stopAll(why) {
      stopping = createShutdownStop(why);
      for (const ctl of admitted) ctl.abort(stopping);
    },
    resume() {
      stopping = undefined;
    },
  };
}
