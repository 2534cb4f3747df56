/** Time for the scheduler, the channels' typing and progress timers and the warm engines' idle timers, injected so tests can move it by hand. */
export interface Clock {
  now(): number;
  setTimer(fn: () => void, ms: number): { clear(): void };
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { clear: () => clearTimeout(t) };
  },
};

/** Node's timers hold at most 2^31-1 ms (about 24.8 days); longer waits are chained, never clamped. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
