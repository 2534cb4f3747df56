import { formatLocalDay } from '../util/local-day.js';
import type { PgQuery } from './pg-client.js';
import { parseActivityRow } from './rows.js';
import { ACTIVITY_KEPT, type ActivityStore, isStrangerRecord, type Metrics, STRANGER_ACTIVITY_KEPT } from './types.js';

/** The activity slice of the PostgreSQL store (records, metrics, each day's cost). */
export function createPgActivityStore(query: PgQuery): ActivityStore {
  const rows = async (sql: string, params?: unknown[]) => (await query(sql, params)).rows;
  return {
    // The record, its metrics, the day's cost and the trim (of its kind: strangers' records are
    // kept apart) in one statement: atomic, one round trip.
    recordActivity: async (r) =>
      void (await query(
        `WITH added AS (
           INSERT INTO activity (ts, ts_ms, source, sender, message_preview, response_preview, duration_ms, cost_usd, status, session_key, error, escalated, refused, stranger)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $15)
         ), counted AS (
           INSERT INTO metrics (source, count, cost_usd, duration_ms) VALUES ($3, 1, $8, $7)
           ON CONFLICT (source) DO UPDATE SET count = metrics.count + 1, cost_usd = metrics.cost_usd + excluded.cost_usd, duration_ms = metrics.duration_ms + excluded.duration_ms
         ), spent AS (
           INSERT INTO daily_cost (day, cost_usd) SELECT $14, $8 WHERE $8 <> 0
           ON CONFLICT (day) DO UPDATE SET cost_usd = daily_cost.cost_usd + excluded.cost_usd
         )
         DELETE FROM activity WHERE stranger = $15 AND id <= (
           SELECT id FROM activity WHERE stranger = $15 ORDER BY id DESC OFFSET ${(isStrangerRecord(r) ? STRANGER_ACTIVITY_KEPT : ACTIVITY_KEPT) - 1} LIMIT 1
         )`,
        [
          r.ts,
          Date.parse(r.ts),
          r.source,
          r.sender,
          r.messagePreview,
          r.responsePreview,
          r.durationMs,
          r.costUsd,
          r.status,
          r.sessionKey,
          r.error ?? null,
          Boolean(r.escalated),
          r.refused ?? null,
          formatLocalDay(Date.parse(r.ts)),
          isStrangerRecord(r),
        ],
      )),
    async recentActivity(limit, filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter?.statuses?.length) {
        params.push(filter.statuses);
        where.push(`status = ANY($${params.length})`);
      }
      if (filter?.escalated !== undefined) {
        params.push(filter.escalated);
        where.push(`escalated = $${params.length}`);
      }
      params.push(limit);
      const sql = `SELECT * FROM activity ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT $${params.length}`;
      return (await rows(sql, params)).map(parseActivityRow);
    },
    async activityTimeline(since, bucketMs) {
      const size = Math.max(1, Math.floor(bucketMs));
      const found = await rows(
        `SELECT FLOOR((ts_ms - $1) / $2) AS bucket, COUNT(*) AS count, SUM(cost_usd) AS cost_usd
         FROM activity WHERE ts_ms >= $1 GROUP BY bucket ORDER BY bucket`,
        [Math.floor(since), size],
      );
      return found.map((r) => ({ start: since + Number(r.bucket) * bucketMs, count: Number(r.count), costUsd: Number(r.cost_usd) }));
    },
    dailyCost: async (day) => Number((await rows('SELECT cost_usd FROM daily_cost WHERE day = $1', [day]))[0]?.cost_usd ?? 0),
    async metrics(): Promise<Metrics> {
      const all = await rows('SELECT * FROM metrics');
      const count = all.reduce((n, r) => n + Number(r.count), 0);
      const duration = all.reduce((n, r) => n + Number(r.duration_ms), 0);
      return {
        totalMessages: count,
        totalCostUsd: all.reduce((n, r) => n + Number(r.cost_usd), 0),
        avgDurationMs: count === 0 ? 0 : Math.round(duration / count),
        messagesBySource: Object.fromEntries(all.map((r) => [String(r.source), Number(r.count)])),
      };
    },
  };
}
