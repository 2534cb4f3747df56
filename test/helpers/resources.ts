/**
 * Probes for what code under test must not leave behind: handles that keep the process alive
 * (sockets, timers, immediates) and unhandled rejections (they would crash the gateway).
 */
import { afterAll, afterEach, beforeEach, expect } from 'vitest';
import { poll } from './wait.js';

/**
 * How long closing handles get to go before they count as leaked. Checks return as soon as
 * nothing is left, so this only costs time when something leaks; a loaded machine closes later.
 */
const SETTLE_MS = 10_000;

/**
 * Resources that would keep the process alive, once transient ones had time to go: vitest's runner
 * keeps a 100 ms throttle timer that is sometimes pending at the moment of the check. A leaked
 * interval or socket stays, so it is still reported. Checks made while a fake platform still runs
 * leave out listening servers (the fake's, not the code under test's).
 */
export async function openHandles(opts: { waitMs?: number; servers?: boolean } = {}): Promise<string[]> {
  const kinds = opts.servers === false ? /TCPSocketWrap|Timeout|Immediate/ : /TCP|Timeout|Immediate/;
  const live = () => process.getActiveResourcesInfo().filter((r) => kinds.test(r));
  const end = Date.now() + (opts.waitMs ?? SETTLE_MS);
  for (;;) {
    const now = live();
    if (now.length === 0 || Date.now() > end) return now;
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface ResourceTally {
  tcp: number;
  timers: number;
}

/** Sockets (and servers), timers and immediates alive now; taken before a test to compare with after it. */
export function resourceTally(): ResourceTally {
  const r = process.getActiveResourcesInfo();
  return { tcp: r.filter((x) => x.startsWith('TCP')).length, timers: r.filter((x) => x === 'Timeout' || x === 'Immediate').length };
}

/**
 * Waits until no more sockets or timers are alive than in `before`, failing with both counts.
 * At most as many, not exactly as many: a transient vitest timer may have been pending at `before`.
 */
export async function releasedTo(before: ResourceTally, timeoutMs = SETTLE_MS): Promise<void> {
  await poll(() => {
    const now = resourceTally();
    return now.tcp <= before.tcp && now.timers <= before.timers;
  }, timeoutMs).catch(() => {
    throw new Error(`leaked handles: before ${JSON.stringify(before)}, after ${JSON.stringify(resourceTally())}`);
  });
}

/**
 * What escapes each test (an unhandled rejection, an uncaught exception), collected instead of
 * killing the worker silently: the returned list is emptied before each test.
 */
export function collectEscapesPerTest(): unknown[] {
  const escaped: unknown[] = [];
  const onEscape = (err: unknown) => void escaped.push(err);
  beforeEach(() => {
    escaped.length = 0;
    process.on('unhandledRejection', onEscape);
    process.on('uncaughtException', onEscape);
  });
  afterEach(() => {
    process.off('unhandledRejection', onEscape);
    process.off('uncaughtException', onEscape);
  });
  return escaped;
}

/** Collects unhandled rejections for the duration of a test file. */
export function trackUnhandled(): { errors: unknown[]; dispose(): void } {
  const errors: unknown[] = [];
  const onError = (e: unknown) => void errors.push(e);
  process.on('unhandledRejection', onError);
  return { errors, dispose: () => void process.off('unhandledRejection', onError) };
}

/**
 * Cleanup that runs after each test, last registered first, so a failing test still stops its
 * clients before their fakes. Returns the function that registers one step.
 */
export function cleanupAfterEach(): (step: () => Promise<void> | void) => void {
  let steps: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    const run = steps.reverse();
    steps = [];
    for (const step of run) await step();
  });
  return (step) => void steps.push(step);
}

/**
 * Fails the calling test file, after its last test, on an unhandled rejection or a handle left
 * open. Open handles get `waitMs` to close; once none is left, nothing remains that could reject
 * later, and a rejection of the last callbacks is reported before the next turn of the event loop.
 */
export function failOnLeaksAfterAll(waitMs = SETTLE_MS): void {
  const unhandled = trackUnhandled();
  afterAll(async () => {
    const open = await openHandles({ waitMs });
    await new Promise((r) => setImmediate(r));
    unhandled.dispose();
    expect(unhandled.errors).toEqual([]);
    expect(open).toEqual([]);
  });
}
