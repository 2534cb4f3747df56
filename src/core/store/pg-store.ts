import os from 'node:os';
import type pg from 'pg';
import { formatLocalDay } from '../util/local-day.js';
import { createPgAccessStore } from './pg-access.js';
import { createPgChatSessionStore, PRUNE_CHAT_SESSIONS_SQL } from './pg-chat-sessions.js';
import { createPgConnection, type Row } from './pg-client.js';
import { createPgCoordination } from './pg-coordination.js';
import { PG_MIGRATIONS } from './pg-migrations.js';
import { createPgOutboxStore } from './pg-outbox.js';
import {
  ACTIVITY_KEPT,
  GROUP_MESSAGES_PER_CHAT,
  HISTORY_PER_KEY,
  isStrangerRecord,
  type Metrics,
  STRANGER_ACTIVITY_KEPT,
  type Store,
  TASK_RUNS_KEPT,
  TASK_SLOTS_KEPT_MS,
} from './types.js';
import { parseActivityRow, parseInboxRow, parseFailoverRow, parseKnownChatRow, parseRunningTurnRow, parseSessionRow, parseTaskRunRow } from './rows.js';

export interface PgStoreOptions {
  url: string;
  /** The assistant's schema (see `resolveStoreTarget`); created on first use. */
  schema: string;
  migrations?: readonly string[];
  max?: number;
  onIdleError?: (err: Error) => void;
  /** The host whose running turns this store records and lists (default: os.hostname()). */
  host?: string;
  /**
   * Where engine sessions made through this store live (default: the host): a session saved from
   * another origin is listed but never resumed here, since its engine's transcript is not here.
   */
  origin?: string;
}

/**
 * The store on a PostgreSQL server, for assistants whose state must outlive one host. Every
 * guarantee the SQLite store gets from its single writer is one statement or one transaction
 * here: a claim is `INSERT … ON CONFLICT DO NOTHING`, a take-over or a removal is a conditional
 * UPDATE/DELETE whose row count says who won, an activity record and its metrics commit together.
 * Text is ordered with COLLATE "C" so listings sort as SQLite's binary order does.
 */
export function createPgStore(opts: PgStoreOptions): Store & { pool: pg.Pool } {
  const conn = createPgConnection({
    url: opts.url,
    schema: opts.schema,
    migrations: opts.migrations ?? PG_MIGRATIONS,
    ...(opts.max ? { max: opts.max } : {}),
    ...(opts.onIdleError ? { onIdleError: opts.onIdleError } : {}),
  });
  const { query, transaction } = conn;
  // Running turns are per host: a pid and its start time identify a process on its own machine only.
  const host = opts.host ?? os.hostname();
  const origin = opts.origin ?? host;
  const coordination = createPgCoordination({ query, url: opts.url, schema: opts.schema, ready: conn.ready });
  // A session made elsewhere starts afresh here (the engine would not find it); rows of before
  // the origin column count as local.
  const parseLocalSession = (r: Row) => {
    const session = parseSessionRow(r);
    return r.origin === null || r.origin === undefined || r.origin === origin ? session : { ...session, sessionId: null };
  };
  const rows = async (sql: string, params?: unknown[]) => (await query(sql, params)).rows;
  const changed = async (sql: string, params?: unknown[]) => (await query(sql, params)).rowCount ?? 0;
  /**
   * Insert a row and keep the newest `keep` rows of its owner (ids grow with insertion), in one
   * statement: one round trip, atomic. The DELETE sees the table as it was before the INSERT (one
   * snapshot for the whole statement), hence the offset of `keep - 1`. `$1` is the owner column.
   */
  const insertKeeping = (insert: string, table: string, column: string, keep: number, params: unknown[]) =>
    query(
      `WITH added AS (${insert})
       DELETE FROM ${table} WHERE ${column} = $1 AND id <= (SELECT id FROM ${table} WHERE ${column} = $1 ORDER BY id DESC OFFSET ${keep - 1} LIMIT 1)`,
      params,
    ).then(() => undefined);

  return {
    pool: conn.pool,
    ...createPgAccessStore(query, transaction),
    ...createPgChatSessionStore(query, transaction),
    ...createPgOutboxStore(query),
    coordination,
    ready: () => conn.ready,
    close: async () => {
      await coordination.close();
      await conn.close();
    },

    getSession: async (key) => {
      const [r] = await rows('SELECT * FROM sessions WHERE key = $1', [key]);
      return r ? parseLocalSession(r) : undefined;
    },
    saveSession: async (r) =>
      void (await query(
        `INSERT INTO sessions (key, engine, session_id, created_at, updated_at, origin) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (key) DO UPDATE SET engine = excluded.engine, session_id = excluded.session_id, updated_at = excluded.updated_at, origin = excluded.origin`,
        [r.key, r.engine, r.sessionId, r.createdAt, r.updatedAt, origin],
      )),
    deleteSession: async (key) => void (await query('DELETE FROM sessions WHERE key = $1', [key])),
    listSessions: async () => (await rows('SELECT * FROM sessions ORDER BY updated_at DESC')).map(parseLocalSession),
    countSessionTurn: async (key) => void (await query('UPDATE sessions SET turns = turns + 1 WHERE key = $1', [key])),
    pruneSessions: (cutoff) =>
      transaction(async (q) => {
        const gone = (await q('DELETE FROM sessions WHERE updated_at < $1 RETURNING key', [cutoff])).rows.map((r) => String(r.key));
        if (gone.length > 0) await q('DELETE FROM history WHERE key = ANY($1)', [gone]);
        await q(PRUNE_CHAT_SESSIONS_SQL, [cutoff]);
        return gone.length;
      }),

    appendHistory: (e) =>
      insertKeeping('INSERT INTO history (key, role, text, ts) VALUES ($1, $2, $3, $4)', 'history', 'key', HISTORY_PER_KEY, [e.key, e.role, e.text, e.ts]),
    readHistory: async (key, limit) =>
      (await rows('SELECT * FROM (SELECT * FROM history WHERE key = $1 ORDER BY id DESC LIMIT $2) h ORDER BY id ASC', [key, limit ?? null])).map((r) => ({
        key: String(r.key),
        role: r.role as 'user' | 'assistant',
        text: String(r.text),
        ts: Number(r.ts),
      })),
    clearHistory: async (key) => void (await query('DELETE FROM history WHERE key = $1', [key])),

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

    claimMessage: async (e) =>
      (await changed(
        `INSERT INTO inbox (channel, message_id, chat_key, received_at, status, payload, owner) VALUES ($1, $2, $3, $4, 'pending', $5, $6)
         ON CONFLICT (channel, message_id) DO NOTHING`,
        [e.channel, e.messageId, e.chatKey, e.receivedAt, e.payload ?? null, e.owner ?? null],
      )) === 1,
    // Under READ COMMITTED a second UPDATE of the row waits for the first and re-checks the WHERE
    // on the row it left: the same owner cannot take it twice.
    takeOverMessage: async (channel, messageId, owner) =>
      (await changed(`UPDATE inbox SET owner = $3 WHERE channel = $1 AND message_id = $2 AND status = 'pending' AND (owner IS NULL OR owner <> $3)`, [
        channel,
        messageId,
        owner,
      ])) === 1,
    markMessageDone: async (channel, messageId) =>
      void (await query(`UPDATE inbox SET status = 'done', payload = NULL WHERE channel = $1 AND message_id = $2`, [channel, messageId])),
    pendingMessages: async () => (await rows(`SELECT * FROM inbox WHERE status = 'pending' ORDER BY received_at, seq`)).map(parseInboxRow),
    purgeMessages: (cutoff) => changed(`DELETE FROM inbox WHERE (status = 'done' OR payload IS NULL) AND received_at < $1`, [cutoff]),

    appendGroupMessage: (m) =>
      insertKeeping(
        'INSERT INTO group_messages (chat_key, message_id, ts, sender, text, from_bot) VALUES ($1, $2, $3, $4, $5, $6)',
        'group_messages',
        'chat_key',
        GROUP_MESSAGES_PER_CHAT,
        [m.chatKey, m.messageId ?? null, m.ts, m.sender, m.text, m.fromBot],
      ),
    recentGroupMessages: async (chatKey, limit) =>
      limit <= 0
        ? []
        : (await rows('SELECT * FROM (SELECT * FROM group_messages WHERE chat_key = $1 ORDER BY id DESC LIMIT $2) g ORDER BY id ASC', [chatKey, limit])).map(
            (r) => ({
              chatKey: String(r.chat_key),
              ...(r.message_id === null ? {} : { messageId: String(r.message_id) }),
              ts: Number(r.ts),
              sender: String(r.sender),
              text: String(r.text),
              fromBot: Boolean(r.from_bot),
            }),
          ),
    groupBotTurns: async (chatKey) => Number((await rows('SELECT bot_turns FROM group_state WHERE chat_key = $1', [chatKey]))[0]?.bot_turns ?? 0),
    setGroupBotTurns: async (chatKey, turns) =>
      void (await query('INSERT INTO group_state (chat_key, bot_turns) VALUES ($1, $2) ON CONFLICT (chat_key) DO UPDATE SET bot_turns = excluded.bot_turns', [
        chatKey,
        turns,
      ])),

    addGroupBotTurn: async (chatKey) =>
      Number(
        (
          await rows(
            'INSERT INTO group_state (chat_key, bot_turns) VALUES ($1, 1) ON CONFLICT (chat_key) DO UPDATE SET bot_turns = group_state.bot_turns + 1 RETURNING bot_turns',
            [chatKey],
          )
        )[0]?.bot_turns,
      ),

    recordTaskRun: (r) =>
      insertKeeping(
        `INSERT INTO task_runs (task_id, started_at, ended_at, status, duration_ms, cost_usd, preview, error, delivered)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        'task_runs',
        'task_id',
        TASK_RUNS_KEPT,
        [r.taskId, r.startedAt, r.endedAt, r.status, r.durationMs, r.costUsd, r.preview, r.error ?? null, r.delivered ?? null],
      ),
    claimTaskSlot: async (taskId, at) =>
      (await changed(
        `WITH forgotten AS (DELETE FROM task_slots WHERE task_id = $1 AND at < $3)
         INSERT INTO task_slots (task_id, at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
        [taskId, at, at - TASK_SLOTS_KEPT_MS],
      )) === 1,
    taskRuns: async (taskId, limit) =>
      (await rows('SELECT * FROM task_runs WHERE task_id = $1 ORDER BY id DESC LIMIT $2', [taskId, limit])).map(parseTaskRunRow),

    noteChat: async (c) =>
      void (await query(
        `INSERT INTO chats (channel, chat_id, chat_type, last_seen) VALUES ($1, $2, $3, $4)
         ON CONFLICT (channel, chat_id) DO UPDATE SET chat_type = excluded.chat_type, last_seen = GREATEST(chats.last_seen, excluded.last_seen)`,
        [c.channel, c.chatId, c.chatType, c.lastSeen],
      )),
    knownChats: async (channel) => (await rows('SELECT * FROM chats WHERE channel = $1 ORDER BY chat_id COLLATE "C"', [channel])).map(parseKnownChatRow),
    setChatFetched: async (channel, chatId, until) =>
      void (await query('UPDATE chats SET fetched_until = $1 WHERE channel = $2 AND chat_id = $3', [until, channel, chatId])),

    addRunningTurn: async (t) =>
      Number(
        (
          await rows(
            `INSERT INTO running_turns (host, owner_pid, owner_start, session_key, source, sender, message_preview, started_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
            [host, t.owner.pid, t.owner.start, t.sessionKey, t.source, t.sender, t.messagePreview, t.startedAt],
          )
        )[0]?.id,
      ),
    setRunningTurnProcesses: async (id, processes) =>
      void (await query('UPDATE running_turns SET processes = $1 WHERE id = $2', [JSON.stringify(processes), id])),
    removeRunningTurn: async (id) => (await changed('DELETE FROM running_turns WHERE id = $1', [id])) === 1,
    runningTurns: async () => (await rows('SELECT * FROM running_turns WHERE host = $1 ORDER BY id', [host])).map(parseRunningTurnRow),

    readFailover: async () => {
      const [r] = await rows('SELECT consecutive_failures, fallback_since FROM provider_state WHERE id = 1');
      return parseFailoverRow(r);
    },
    writeFailover: async (state) =>
      void (await query(
        `INSERT INTO provider_state (id, consecutive_failures, fallback_since) VALUES (1, $1, $2)
         ON CONFLICT (id) DO UPDATE SET consecutive_failures = excluded.consecutive_failures, fallback_since = excluded.fallback_since`,
        [state.consecutiveFailures, state.fallbackSince ?? null],
      )),
  };
}
