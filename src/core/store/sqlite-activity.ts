import type Database from 'better-sqlite3';
import { formatLocalDay } from '../util/local-day.js';
import { parseActivityRow, type Row } from './rows.js';
import { ACTIVITY_KEPT, type ActivityRecord, type ActivityStore, isStrangerRecord, type Metrics, STRANGER_ACTIVITY_KEPT, type SyncOf } from './types.js';

/** The activity slice of the SQLite store (records, metrics, each day's cost), on the store's open database. */
export function createSqliteActivityStore(db: Database.Database): SyncOf<ActivityStore> {
  const q = {
    insertActivity: db.prepare(
      `INSERT INTO activity (ts, source, sender, message_preview, response_preview, duration_ms, cost_usd, status, session_key, error, escalated, refused, stranger)
       VALUES (@ts, @source, @sender, @messagePreview, @responsePreview, @durationMs, @costUsd, @status, @sessionKey, @error, @escalated, @refused, @stranger)`,
    ),
    addDailyCost: db.prepare('INSERT INTO daily_cost (day, cost_usd) VALUES (?, ?) ON CONFLICT(day) DO UPDATE SET cost_usd = cost_usd + excluded.cost_usd'),
    dailyCost: db.prepare('SELECT cost_usd FROM daily_cost WHERE day = ?'),
    // Each kind of record is kept apart (strangers' own bound, see STRANGER_ACTIVITY_KEPT).
    trimActivity: db.prepare(
      'DELETE FROM activity WHERE stranger = @stranger AND id <= (SELECT id FROM activity WHERE stranger = @stranger ORDER BY id DESC LIMIT 1 OFFSET @keep)',
    ),
    addMetrics: db.prepare(
      `INSERT INTO metrics (source, count, cost_usd, duration_ms) VALUES (?, 1, ?, ?)
       ON CONFLICT(source) DO UPDATE SET count = count + 1, cost_usd = cost_usd + excluded.cost_usd, duration_ms = duration_ms + excluded.duration_ms`,
    ),
    metrics: db.prepare('SELECT source, count, cost_usd, duration_ms FROM metrics'),
    // ts is toISOString() text, so the string comparison uses the index order and the julianday
    // arithmetic turns it into unix ms (rounded: julianday is a float) for the bucket number.
    timeline: db.prepare(
      `SELECT bucket, COUNT(*) AS count, SUM(cost_usd) AS cost_usd FROM (
         SELECT (CAST(ROUND((julianday(ts) - 2440587.5) * 86400000) AS INTEGER) - @since) / @bucketMs AS bucket, cost_usd
         FROM activity WHERE ts >= @sinceIso
       ) WHERE bucket >= 0 GROUP BY bucket ORDER BY bucket`,
    ),
  };
  const record = db.transaction((r: ActivityRecord) => {
    const stranger = isStrangerRecord(r) ? 1 : 0;
    q.insertActivity.run({ ...r, error: r.error ?? null, escalated: r.escalated ? 1 : 0, refused: r.refused ?? null, stranger });
    q.addMetrics.run(r.source, r.costUsd, r.durationMs);
    if (r.costUsd !== 0) q.addDailyCost.run(formatLocalDay(Date.parse(r.ts)), r.costUsd);
    q.trimActivity.run({ stranger, keep: stranger ? STRANGER_ACTIVITY_KEPT : ACTIVITY_KEPT });
  });

  return {
    recordActivity: (r) => record(r),
    recentActivity(limit, filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter?.statuses?.length) {
        where.push(`status IN (${filter.statuses.map(() => '?').join(', ')})`);
        params.push(...filter.statuses);
      }
      if (filter?.escalated !== undefined) {
        where.push('escalated = ?');
        params.push(filter.escalated ? 1 : 0);
      }
      const sql = `SELECT * FROM activity ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
      return (db.prepare(sql).all(...params, limit) as Row[]).map(parseActivityRow);
    },
    activityTimeline(since, bucketMs) {
      const rows = q.timeline.all({
        since: BigInt(Math.floor(since)),
        bucketMs: BigInt(Math.max(1, Math.floor(bucketMs))),
        sinceIso: new Date(since).toISOString(),
      }) as Row[];
      return rows.map((r) => ({ start: since + Number(r.bucket) * bucketMs, count: Number(r.count), costUsd: Number(r.cost_usd) }));
    },
    dailyCost: (day) => Number((q.dailyCost.get(day) as Row | undefined)?.cost_usd ?? 0),
    metrics(): Metrics {
      const rows = q.metrics.all() as Row[];
      const count = rows.reduce((n, r) => n + Number(r.count), 0);
      const duration = rows.reduce((n, r) => n + Number(r.duration_ms), 0);
      return {
        totalMessages: count,
        totalCostUsd: rows.reduce((n, r) => n + Number(r.cost_usd), 0),
        avgDurationMs: count === 0 ? 0 : Math.round(duration / count),
        messagesBySource: Object.fromEntries(rows.map((r) => [String(r.source), Number(r.count)])),
      };
    },
  };
}
