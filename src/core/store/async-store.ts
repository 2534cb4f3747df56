import type { SyncOf } from './types.js';

/**
 * An async store over a synchronous implementation: each method runs the synchronous body at
 * once, inside the call, and returns its result (or its error) as a promise. So a guarantee the
 * synchronous store gives in one call (one SQLite transaction) holds unchanged, and a throw never
 * escapes synchronously past a caller's `await`. Other properties (`db`) are passed through.
 */
export function toAsyncStore<T extends object>(sync: SyncOf<T>): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(sync)) {
    out[key] =
      typeof value === 'function'
        ? (...args: unknown[]) => {
            try {
              return Promise.resolve((value as (...a: unknown[]) => unknown)(...args));
            } catch (err) {
              return Promise.reject(err);
            }
          }
        : value;
  }
  return out as T;
}
