import { errorMessage } from '../core/errors.js';
import { withTimeout } from '../core/util/timeout.js';
import { type ChannelContext, ChannelError } from './types.js';

/**
 * The adapter lifecycle of src/channels/types.ts (ChannelAdapter), written once: every built-in
 * adapter and the custom-adapter wrapper hand their connect and release steps to it and get the
 * contract's start, stop and not-connected checks back, so that "start twice" or "reply after
 * stop" behaves the same on every platform.
 */
export type LifecyclePhase = 'idle' | 'starting' | 'started' | 'failed' | 'stopping' | 'stopped';

export interface LifecycleSteps {
  /**
   * Connect; resolve once connected. Called at most once. `ctx` forwards status reports only
   * while the contract allows them. Once `signal` aborts (stop() was called), open nothing more.
   */
  connect(ctx: ChannelContext, signal: AbortSignal): Promise<void>;
  /**
   * Close whatever is open, including what a pending connect has opened so far, so that the
   * pending connect settles. Called by the first stop() if start() was called; called again if a
   * connect still pending then resolves anyway (it opened something after the first call).
   */
  release(): Promise<void>;
}

export interface Lifecycle {
  /** ChannelAdapter.start, per the contract. */
  start(ctx: ChannelContext): Promise<void>;
  /** ChannelAdapter.stop, per the contract: idempotent, safe before start. */
  stop(): Promise<void>;
  /** Aborts when stop() is called: background loops (reconnects, polls) end on it. */
  readonly signal: AbortSignal;
  phase(): LifecyclePhase;
  isStarted(): boolean;
  /** Throws the contract's `not_connected` ChannelError unless started; `what` names the call. */
  assertStarted(what: string): void;
  /**
   * What the connection holds for outbound calls (a client, an API, the bot's identity), for the
   * call `what`: the contract's `not_connected` ChannelError unless started and `value` is there.
   */
  connected<T>(what: string, value: T | undefined): T;
}

/** How long stop() waits for a pending connect to settle after release(); only a hang reaches it. */
const SETTLE_WAIT_MS = 10_000;

const REFUSED_START: Record<Exclude<LifecyclePhase, 'idle'>, string> = {
  starting: 'start() called twice: the first start() is still connecting; an adapter is started once',
  started: 'start() called twice: already started; an adapter is started once (create a new one to connect again)',
  failed: 'start() called twice: the first start() failed; an adapter is started once (create a new one to try again)',
  stopping: 'start() after stop(): an adapter cannot be restarted; create a new one',
  stopped: 'start() after stop(): an adapter cannot be restarted; create a new one',
};

const NOT_CONNECTED: Record<Exclude<LifecyclePhase, 'started'>, string> = {
  idle: 'start() has not been called',
  starting: 'start() has not completed',
  failed: 'start() failed',
  stopping: 'the adapter was stopped',
  stopped: 'the adapter was stopped',
};

export function createLifecycle(channel: string, steps: LifecycleSteps): Lifecycle {
  const abort = new AbortController();
  let phase: LifecyclePhase = 'idle';
  let connecting: Promise<void> | undefined;
  let connectedLate = false;
  let stopping: Promise<void> | undefined;

  const stoppedWhileStarting = (cause?: unknown) => new ChannelError(channel, 'lifecycle', 'stopped while starting', cause === undefined ? {} : { cause });

  // Rejects as soon as stop() is called, so a start never outlives its stop.
  const aborted = new Promise<never>((_, reject) => {
    abort.signal.addEventListener('abort', () => reject(stoppedWhileStarting()), { once: true });
  });
  aborted.catch(() => undefined);

  /**
   * Status reports only between a settled start and stop() (a background recovery after a failed
   * start counts as started); no hand-over once stopped (unacknowledged, so it is redelivered).
   */
  const guard = (ctx: ChannelContext): ChannelContext => ({
    log: ctx.log,
    onMessage: (message) =>
      phase === 'stopped' ? Promise.reject(new ChannelError(channel, 'lifecycle', 'a message arrived after stop()')) : ctx.onMessage(message),
    onStatus(status) {
      if (phase === 'failed' && status.state === 'connected') phase = 'started';
      if (phase === 'started' || phase === 'failed') ctx.onStatus(status);
    },
  });

  const start = (ctx: ChannelContext): Promise<void> => {
    if (phase !== 'idle') return Promise.reject(new ChannelError(channel, 'lifecycle', REFUSED_START[phase]));
    phase = 'starting';
    const attempt = (async () => steps.connect(guard(ctx), abort.signal))();
    connecting = attempt.then(
      () => {
        connectedLate = abort.signal.aborted;
      },
      () => undefined,
    );
    const outcome = attempt.then(
      () => {
        if (phase !== 'starting') throw stoppedWhileStarting();
        phase = 'started';
      },
      (err: unknown) => {
        if (phase !== 'starting') throw stoppedWhileStarting(err);
        phase = 'failed';
        throw err instanceof ChannelError ? err : new ChannelError(channel, 'other', errorMessage(err), { cause: err });
      },
    );
    return Promise.race([outcome, aborted]);
  };

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      phase = 'stopping';
      abort.abort();
      try {
        if (!connecting) return; // never started: nothing was opened
        await steps.release();
        await withTimeout(connecting, SETTLE_WAIT_MS);
        if (connectedLate) await steps.release();
      } finally {
        phase = 'stopped';
      }
    })();
    return stopping;
  };

  const assertStarted = (what: string) => {
    if (phase !== 'started') throw new ChannelError(channel, 'not_connected', `${what}: not connected (${NOT_CONNECTED[phase]})`);
  };

  return {
    start,
    stop,
    signal: abort.signal,
    phase: () => phase,
    isStarted: () => phase === 'started',
    assertStarted,
    connected(what, value) {
      assertStarted(what);
      if (value === undefined) throw new ChannelError(channel, 'not_connected', `${what}: not connected`);
      return value;
    },
  };
}
