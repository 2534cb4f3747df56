import type { DroppedOutboxEntry, OutboxEntry, ReplyOutboxStore } from './outbox-types.js';
import type { SyncOf } from './types.js';

/** The reply outbox in memory, the SQLite store's behaviour (one contract suite for both). */
export function createMemoryOutboxStore(): SyncOf<ReplyOutboxStore> {
  const entries = new Map<number, OutboxEntry>();
  let nextId = 1;
  const leads = (e: OutboxEntry) => ![...entries.values()].some((o) => o.targetKey === e.targetKey && o.id < e.id);
  const copy = (e: OutboxEntry): OutboxEntry => ({ ...e });
  return {
    addOutboxEntry(e) {
      const id = nextId++;
      entries.set(id, { ...e, id, attempts: 0, status: 'waiting' });
      return id;
    },
    claimOutboxEntries(owner, now, claimUntil, limit) {
      const due = [...entries.values()].filter((e) => e.status === 'waiting' && e.nextAttemptAt <= now && leads(e)).slice(0, limit);
      for (const e of due) Object.assign(e, { status: 'sending', owner, claimUntil });
      return due.map(copy);
    },
    finishOutboxEntry(id, owner) {
      const e = entries.get(id);
      if (e?.status !== 'sending' || e.owner !== owner) return false;
      entries.delete(id);
      return true;
    },
    retryOutboxEntry(id, owner, nextAttemptAt, error, text) {
      const e = entries.get(id);
      if (e?.status !== 'sending' || e.owner !== owner) return;
      const { owner: _o, claimUntil: _c, ...rest } = e;
      entries.set(id, { ...rest, status: 'waiting', attempts: e.attempts + 1, nextAttemptAt, lastError: error, text: text ?? e.text });
    },
    dropOutboxEntries(now, expiredBefore) {
      const dropped: DroppedOutboxEntry[] = [];
      for (const e of entries.values()) {
        if (e.status === 'waiting' && e.createdAt < expiredBefore) dropped.push({ ...e, reason: 'expired' });
        else if (e.status === 'sending' && (e.claimUntil ?? 0) < now) dropped.push({ ...e, reason: 'in_doubt' });
      }
      for (const d of dropped) entries.delete(d.id);
      return dropped;
    },
    outboxTargets: () => [...new Set([...entries.values()].map((e) => e.targetKey))],
    outboxStats() {
      const all = [...entries.values()];
      const times = all.map((e) => (e.status === 'waiting' ? e.nextAttemptAt : (e.claimUntil ?? 0)));
      return {
        waiting: all.length,
        oldestAt: all.length ? Math.min(...all.map((e) => e.createdAt)) : null,
        nextAt: times.length ? Math.min(...times) : null,
      };
    },
  };
}
