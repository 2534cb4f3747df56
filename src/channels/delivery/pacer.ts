import { BoundedMap } from '../bounded-map.js';
import { ChannelError } from '../types.js';

/**
 * The pace of a growing reply's platform calls, per chat: one call at a time, at most one per
 * `intervalMs` (Telegram allows about one message or edit per second in a chat), and a refusal
 * for rate (429) waited out for as long as the platform asked (`retryAfterMs`), then the same call
 * again, so the final text is never dropped for being early. Edits may also be tried again after a
 * network failure: setting a message's text twice shows it once. A new message is never sent
 * twice on a network failure (it may have arrived).
 */
export interface ChatPacer {
  run<T>(chat: string, op: () => Promise<T>, opts?: { idempotent?: boolean }): Promise<T>;
}

export interface ChatPacerOptions {
  intervalMs: number;
  /** Past this much waiting for one call the refusal is given up on (and reported). */
  maxWaitMs?: number;
  /** Waits; tests may pass their own. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/** Waiting used when a 429 does not say for how long, doubled for each one in a row. */
const FALLBACK_WAIT_MS = 1_000;
const NETWORK_TRIES = 3;

export function createChatPacer(opts: ChatPacerOptions): ChatPacer {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = opts.now ?? Date.now;
  const maxWaitMs = opts.maxWaitMs ?? 10 * 60_000;
  const chats = new BoundedMap<string, { nextAt: number; tail: Promise<unknown> }>(500);

  async function attempt<T>(state: { nextAt: number }, op: () => Promise<T>, idempotent: boolean): Promise<T> {
    let waited = 0;
    let networkFailures = 0;
    let unexplained = 0;
    for (;;) {
      const wait = state.nextAt - now();
      if (wait > 0) await sleep(wait);
      try {
        const result = await op();
        state.nextAt = now() + opts.intervalMs;
        return result;
      } catch (err) {
        state.nextAt = now() + opts.intervalMs;
        if (!(err instanceof ChannelError)) throw err;
        let pause: number;
        if (err.kind === 'rate_limited') {
          pause = err.retryAfterMs ?? FALLBACK_WAIT_MS * 2 ** Math.min(unexplained++, 5);
        } else if (err.kind === 'network' && idempotent && ++networkFailures < NETWORK_TRIES) {
          pause = FALLBACK_WAIT_MS * networkFailures;
        } else throw err;
        waited += pause;
        if (waited > maxWaitMs) throw err;
        state.nextAt = Math.max(state.nextAt, now() + pause);
      }
    }
  }

  return {
    run(chat, op, runOpts = {}) {
      const state = chats.get(chat) ?? { nextAt: 0, tail: Promise.resolve() };
      const result = state.tail.then(() => attempt(state, op, runOpts.idempotent ?? false));
      state.tail = result.catch(() => undefined);
      chats.set(chat, state);
      return result;
    },
  };
}

/** One pacer per adapter object (a restarted adapter is a new object, with a new pacer). */
const pacers = new WeakMap<object, ChatPacer>();

export function pacerFor(adapter: object, intervalMs: number): ChatPacer {
  let pacer = pacers.get(adapter);
  if (!pacer) {
    pacer = createChatPacer({ intervalMs });
    pacers.set(adapter, pacer);
  }
  return pacer;
}
