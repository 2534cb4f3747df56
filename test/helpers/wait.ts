/**
 * Waiting in tests without fixed sleeps: poll until the awaited thing has happened. The deadline
 * turns a hang into a failure that names what was awaited.
 */

/**
 * The deadline of every wait: only a hang gets near it. A busy two-core machine makes waits
 * longer, never red; a wait that is expected to time out passes its own, short timeout.
 */
export const HANG_MS = 60_000;

/** What a probe answers while the awaited thing has not happened yet. */
type NotYet = undefined | null | false;

/** Polls `probe` until it answers something other than undefined, null or false, and returns that. */
export async function poll<T>(probe: () => T | NotYet | Promise<T | NotYet>, timeoutMs = HANG_MS, what = 'a condition', everyMs = 10): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export const until = (cond: () => boolean | Promise<boolean>, timeoutMs = HANG_MS, what = 'a condition', everyMs = 10): Promise<true> =>
  poll(async () => (await cond()) || undefined, timeoutMs, what, everyMs);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
