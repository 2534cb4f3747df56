import type { PgQuery } from './pg-client.js';
import type { DroppedOutboxEntry, ReplyOutboxStore } from './outbox-types.js';
import { parseOutboxRow } from './rows.js';

/**
 * The reply outbox of the PostgreSQL store. A claim is one UPDATE over rows locked with `FOR
 * UPDATE SKIP LOCKED`: gateways claiming at once each get other entries, and an entry that
 * leads its conversation is taken by one of them only (the entries behind it do not lead while
 * it is there). Finishing and retrying name the owner, so a gateway whose claim ran out and was
 * dropped changes nothing.
 */
export function createPgOutboxStore(query: PgQuery): ReplyOutboxStore {
  return {
    addOutboxEntry: async (e) =>
      Number(
        (
          await query(
            `INSERT INTO outbox (channel, kind, target, target_key, chat_key, text, created_at, next_attempt_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
            [e.channel, e.kind, e.target, e.targetKey, e.chatKey, e.text, e.createdAt, e.nextAttemptAt],
          )
        ).rows[0]?.id,
      ),
    claimOutboxEntries: async (owner, now, claimUntil, limit) =>
      (
        await query(
          // Picked once (MATERIALIZED): a LIMIT inside `IN (…)` may be evaluated again per row and take more.
          `WITH picked AS MATERIALIZED (
             SELECT o.id FROM outbox o WHERE o.status = 'waiting' AND o.next_attempt_at <= $2
               AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.target_key = o.target_key AND p.id < o.id)
             ORDER BY o.id LIMIT $4 FOR UPDATE SKIP LOCKED
           )
           UPDATE outbox SET status = 'sending', owner = $1, claim_until = $3
           FROM picked WHERE outbox.id = picked.id AND outbox.status = 'waiting' RETURNING outbox.*`,
          [owner, now, claimUntil, limit],
        )
      ).rows
        .map(parseOutboxRow)
        .sort((a, b) => a.id - b.id),
    finishOutboxEntry: async (id, owner) =>
      ((await query(`DELETE FROM outbox WHERE id = $1 AND owner = $2 AND status = 'sending'`, [id, owner])).rowCount ?? 0) === 1,
    retryOutboxEntry: async (id, owner, nextAttemptAt, error, text) =>
      void (await query(
        `UPDATE outbox SET status = 'waiting', owner = NULL, claim_until = NULL, attempts = attempts + 1, next_attempt_at = $3, last_error = $4,
           text = COALESCE($5, text)
         WHERE id = $1 AND owner = $2 AND status = 'sending'`,
        [id, owner, nextAttemptAt, error, text ?? null],
      )),
    dropOutboxEntries: async (now, expiredBefore) =>
      (
        await query(`DELETE FROM outbox WHERE (status = 'waiting' AND created_at < $2) OR (status = 'sending' AND claim_until < $1) RETURNING *`, [
          now,
          expiredBefore,
        ])
      ).rows
        .map((r): DroppedOutboxEntry => ({ ...parseOutboxRow(r), reason: r.status === 'sending' ? 'in_doubt' : 'expired' }))
        .sort((a, b) => a.id - b.id),
    outboxTargets: async () => (await query('SELECT DISTINCT target_key FROM outbox')).rows.map((r) => String(r.target_key)),
    outboxStats: async () => {
      const r = (
        await query(
          `SELECT COUNT(*) AS waiting, MIN(created_at) AS oldest_at,
                  MIN(CASE status WHEN 'waiting' THEN next_attempt_at ELSE claim_until END) AS next_at FROM outbox`,
        )
      ).rows[0];
      const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
      return { waiting: Number(r?.waiting ?? 0), oldestAt: num(r?.oldest_at), nextAt: num(r?.next_at) };
    },
  };
}
