// A clock moved by hand, for the scheduler (src/core/scheduler/clock.ts): timers fire in time order
// as `advance` passes them. Plain JavaScript so a gateway in a process of its own
// (test/fakes/clocked-gateway.mjs) runs the same one the unit tests do.

/** @param {number} start unix ms */
export function createFakeClock(start) {
  let now = start;
  let seq = 0;
  const timers = new Map();
  const delays = [];
  return {
    now: () => now,
    delays,
    pending: () => timers.size,
    setTimer(fn, ms) {
      const id = ++seq;
      delays.push(ms);
      timers.set(id, { at: now + ms, fn });
      return { clear: () => void timers.delete(id) };
    },
    async advance(ms) {
      const end = now + ms;
      for (;;) {
        const next = [...timers.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (!next) break;
        timers.delete(next[0]);
        now = Math.max(now, next[1].at);
        next[1].fn();
        await new Promise((r) => setImmediate(r)); // let runs started by the timer make progress
      }
      now = end;
    },
  };
}
