/**
 * Messages per sender in a sliding window (`access.rateLimit`: `messages` per `perSeconds`; 0
 * messages = no limit), pure apart from the injected clock. A message over the limit is refused,
 * not queued, and does not count; the sender is told once per stretch of refusals (until a slot
 * frees up), so a burst gets one "slow down", not one per message.
 */
export interface RateLimit {
  messages: number;
  perSeconds: number;
}

export type RateDecision = { ok: true } | { ok: false; retryInSeconds: number; notify: boolean };

export interface RateLimiter {
  hit(key: string, limit: RateLimit): RateDecision;
}

/** Senders tracked at once before idle ones are forgotten. */
const SWEEP_AT = 1_000;

export function createRateLimiter(now: () => number = Date.now): RateLimiter {
  const senders = new Map<string, { hits: number[]; quietUntil: number }>();

  const sweep = (t: number, windowMs: number) => {
    for (const [key, s] of senders) if ((s.hits.at(-1) ?? 0) <= t - windowMs && s.quietUntil <= t) senders.delete(key);
  };

  return {
    hit(key, limit) {
      if (limit.messages <= 0) return { ok: true };
      const t = now();
      const windowMs = limit.perSeconds * 1000;
      if (senders.size >= SWEEP_AT) sweep(t, windowMs);
      const s = senders.get(key) ?? { hits: [], quietUntil: 0 };
      senders.set(key, s);
      s.hits = s.hits.filter((at) => at > t - windowMs);
      if (s.hits.length < limit.messages) {
        s.hits.push(t);
        return { ok: true };
      }
      // The oldest hit in the window leaves it first: that is when the next message may pass.
      const freeAt = (s.hits[s.hits.length - limit.messages] ?? t) + windowMs;
      const notify = t >= s.quietUntil;
      if (notify) s.quietUntil = freeAt;
      return { ok: false, retryInSeconds: Math.max(1, Math.ceil((freeAt - t) / 1000)), notify };
    },
  };
}
