import type Database from 'better-sqlite3';
import type { DroppedOutboxEntry, ReplyOutboxStore } from './outbox-types.js';
import { parseOutboxRow, type Row } from './rows.js';
import type { SyncOf } from './types.js';

/**
 * The reply outbox of the SQLite store, on the store's open database. A claim is one
 * transaction (SQLite has one writer, so a second process waits and then sees the entries taken);
 * an entry leads its conversation while no older entry of its target key is left.
 */
export function createSqliteOutboxStore(db: Database.Database): SyncOf<ReplyOutboxStore> {
  const q = {
    add: db.prepare(
      `INSERT INTO outbox (channel, kind, target, target_key, chat_key, text, created_at, next_attempt_at)
       VALUES (@channel, @kind, @target, @targetKey, @chatKey, @text, @createdAt, @nextAttemptAt)`,
    ),
    due: db.prepare(
      `SELECT o.id FROM outbox o WHERE o.status = 'waiting' AND o.next_attempt_at <= ?
         AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.target_key = o.target_key AND p.id < o.id)
       ORDER BY o.id LIMIT ?`,
    ),
    claim: db.prepare(`UPDATE outbox SET status = 'sending', owner = ?, claim_until = ? WHERE id = ? AND status = 'waiting' RETURNING *`),
    finish: db.prepare(`DELETE FROM outbox WHERE id = ? AND owner = ? AND status = 'sending'`),
    retry: db.prepare(
      `UPDATE outbox SET status = 'waiting', owner = NULL, claim_until = NULL, attempts = attempts + 1, next_attempt_at = ?, last_error = ?, text = COALESCE(?, text)
       WHERE id = ? AND owner = ? AND status = 'sending'`,
    ),
    drop: db.prepare(
      `DELETE FROM outbox WHERE (status = 'waiting' AND created_at < @expiredBefore) OR (status = 'sending' AND claim_until < @now) RETURNING *`,
    ),
    targets: db.prepare('SELECT DISTINCT target_key FROM outbox'),
    stats: db.prepare(
      `SELECT COUNT(*) AS waiting, MIN(created_at) AS oldest_at,
              MIN(CASE status WHEN 'waiting' THEN next_attempt_at ELSE claim_until END) AS next_at FROM outbox`,
    ),
  };
  const claim = db.transaction((owner: string, now: number, claimUntil: number, limit: number) =>
    (q.due.all(now, limit) as Row[]).flatMap((r) => {
      const taken = q.claim.get(owner, claimUntil, r.id) as Row | undefined;
      return taken ? [parseOutboxRow(taken)] : [];
    }),
  );
  return {
    addOutboxEntry: (e) => Number(q.add.run(e).lastInsertRowid),
    claimOutboxEntries: (owner, now, claimUntil, limit) => claim(owner, now, claimUntil, limit),
    finishOutboxEntry: (id, owner) => q.finish.run(id, owner).changes === 1,
    retryOutboxEntry: (id, owner, nextAttemptAt, error, text) => void q.retry.run(nextAttemptAt, error, text ?? null, id, owner),
    dropOutboxEntries: (now, expiredBefore) =>
      (q.drop.all({ now, expiredBefore }) as Row[])
        .map((r): DroppedOutboxEntry => ({ ...parseOutboxRow(r), reason: r.status === 'sending' ? 'in_doubt' : 'expired' }))
        .sort((a, b) => a.id - b.id),
    outboxTargets: () => (q.targets.all() as Row[]).map((r) => String(r.target_key)),
    outboxStats: () => {
      const r = q.stats.get() as Row;
      return { waiting: Number(r.waiting), oldestAt: r.oldest_at === null ? null : Number(r.oldest_at), nextAt: r.next_at === null ? null : Number(r.next_at) };
    },
  };
}
