import { createRateLimiter } from './rate-limit.js';

/**
 * What strangers can cause, bounded in memory before anything of their messages is written. A
 * stranger is a sender (direct chats) or a group chat that is neither allowed nor approved. Their
 * messages are looked at only within these limits, and the rest are dropped without a word, a
 * store write or a log line above debug (one info line per stretch); of those looked at, a
 * pairing code is answered once per code, and "too many codes are waiting" or an allowlist
 * refusal is told (and recorded) once per `tellEverySeconds`.
 */
export const STRANGER_LIMITS = {
  /** Messages looked at per stranger… */
  perStranger: { messages: 3, perSeconds: 60 },
  /** …and of every stranger of one channel together (many made-up accounts). */
  perChannel: { messages: 30, perSeconds: 60 },
  /** How often one stranger is told the same thing (or recorded as refused) at most. */
  tellEverySeconds: 600,
  /** Strangers remembered at once; the least recently seen are forgotten first. */
  tracked: 10_000,
} as const;

export interface StrangerLimits {
  /** Whether a stranger's message is looked at at all; `firstDrop`: the first one dropped in a stretch (log it). */
  look(channel: string, stranger: string): { ok: true } | { ok: false; firstDrop: boolean };
  /** Whether to tell this stranger `what` now (once per tellEverySeconds per stranger and `what`). */
  tellOnce(channel: string, stranger: string, what: string): boolean;
}

export function createStrangerLimits(now: () => number): StrangerLimits {
  const opts = { maxKeys: STRANGER_LIMITS.tracked };
  const perStranger = createRateLimiter(now, opts);
  const perChannel = createRateLimiter(now);
  const told = createRateLimiter(now, opts);
  return {
    look(channel, stranger) {
      const own = perStranger.hit(`${channel}\u0000${stranger}`, STRANGER_LIMITS.perStranger);
      if (!own.ok) return { ok: false, firstDrop: own.notify };
      const all = perChannel.hit(channel, STRANGER_LIMITS.perChannel);
      return all.ok ? { ok: true } : { ok: false, firstDrop: all.notify };
    },
    tellOnce: (channel, stranger, what) =>
      told.hit(`${channel}\u0000${stranger}\u0000${what}`, { messages: 1, perSeconds: STRANGER_LIMITS.tellEverySeconds }).ok,
  };
}
