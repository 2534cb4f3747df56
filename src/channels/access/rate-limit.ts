/**
 * Messages per sender in a sliding window (`access.rateLimit`: `messages` per `perSeconds`; 0
 * messages = no limit), pure apart from the injected clock. A message is counted at the time it
 * arrived (`at`), not when its chat's turn to be processed came: a burst is judged as the burst
 * it was, even though the bridge works through a chat one message at a time, and a backlog
 * does not trickle through to the engine later. A message over the limit is refused and does
 * not count; the sender is told once per stretch of refusals (until a slot frees up), so a burst
 * gets one "slow down", not one per message.
 */
export interface RateLimit {
  messages: number;
  perSeconds: number;
}

export type RateDecision = { ok: true } | { ok: false; retryInSeconds: number; notify: boolean };

export interface RateLimiter {
  /** `at`: when the message arrived (unix ms; default now, never later than now). */
  hit(key: string, limit: RateLimit, at?: number): RateDecision;
}

/** Senders tracked at once before idle ones are forgotten. */
const SWEEP_AT = 1_000;

/**
 * `maxKeys`: at most this many keys are tracked; past it the least recently seen are forgotten
 * (their next message counts afresh). For keys anyone can make up (strangers' ids), so a flood
 * of new ones cannot grow the table without end.
 */
export function createRateLimiter(now: () => number = Date.now, opts: { maxKeys?: number } = {}): RateLimiter {
  const senders = new Map<string, { hits: number[]; quietUntil: number }>();
  let sweptAt = Number.NEGATIVE_INFINITY;

  // Idle senders are looked for at most four times a window (a pass reads every sender); the
  // table's cap is kept on every message, oldest first (a pass stops at the first it keeps).
  const sweep = (t: number, windowMs: number) => {
    if (senders.size >= SWEEP_AT && t - sweptAt >= windowMs / 4) {
      sweptAt = t;
      for (const [key, s] of senders) if ((s.hits.at(-1) ?? 0) <= t - 2 * windowMs && s.quietUntil <= t) senders.delete(key);
    }
    if (opts.maxKeys === undefined) return;
    for (const key of senders.keys()) {
      if (senders.size < opts.maxKeys) break;
      senders.delete(key);
    }
  };

  return {
    hit(key, limit, arrived) {
      if (limit.messages <= 0) return { ok: true };
      const t = now();
      const at = arrived !== undefined && Number.isFinite(arrived) ? Math.min(arrived, t) : t;
      const windowMs = limit.perSeconds * 1000;
      sweep(t, windowMs);
      const s = senders.get(key) ?? { hits: [], quietUntil: 0 };
      // Re-inserted: the map's order is the order keys were last seen (the oldest are forgotten first).
      senders.delete(key);
      senders.set(key, s);
      // Hits this old cannot be in the window of any message arriving from now on (a late one included).
      s.hits = s.hits.filter((h) => h > t - 2 * windowMs);
      const before = s.hits.filter((h) => h > at - windowMs && h <= at);
      if (before.length < limit.messages) {
        s.hits.push(at);
        s.hits.sort((a, b) => a - b);
        return { ok: true };
      }
      // The oldest hits in the window leave it first: that is when the next message may pass.
      const freeAt = (before[before.length - limit.messages] ?? at) + windowMs;
      const notify = at >= s.quietUntil;
      if (notify) s.quietUntil = freeAt;
      return { ok: false, retryInSeconds: Math.max(1, Math.ceil((freeAt - t) / 1000)), notify };
    },
  };
}
