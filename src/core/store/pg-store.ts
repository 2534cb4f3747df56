import os from 'node:os';
import type pg from 'pg';
import { createPgAccessStore } from './pg-access.js';
import { createPgChatSessionStore, PRUNE_CHAT_SESSIONS_SQL } from './pg-chat-sessions.js';
import { createPgConnection, insertKeeping } from './pg-client.js';
import { createPgActivityStore } from './pg-activity.js';
import { createPgChannelStateStore } from './pg-channel-state.js';
import { createPgCoordination } from './pg-coordination.js';
import { PG_MIGRATIONS } from './pg-migrations.js';
import { createPgOutboxStore } from './pg-outbox.js';
import { HISTORY_PER_KEY, type Store, TASK_RUNS_KEPT, TASK_SLOTS_KEPT_MS } from './types.js';
import { parseFailoverRow, parseHistoryRow, parseRunningTurnRow, parseSessionRow, parseTaskRunRow, type Row } from './rows.js';

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
  return {
    pool: conn.pool,
    ...createPgAccessStore(query, transaction),
    ...createPgChatSessionStore(query, transaction),
    ...createPgActivityStore(query),
    ...createPgChannelStateStore(query),
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
      insertKeeping(query, 'INSERT INTO history (key, role, text, ts, status, message) VALUES ($1, $2, $3, $4, $5, $6)', 'history', 'key', HISTORY_PER_KEY, [
        e.key,
        e.role,
        e.text,
        e.ts,
        e.status ?? null,
        e.message ?? null,
      ]),
    readHistory: async (key, limit) =>
      (await rows('SELECT * FROM (SELECT * FROM history WHERE key = $1 ORDER BY id DESC LIMIT $2) h ORDER BY id ASC', [key, limit ?? null])).map(
        parseHistoryRow,
      ),
    clearHistory: async (key) => void (await query('DELETE FROM history WHERE key = $1', [key])),

    recordTaskRun: (r) =>
      insertKeeping(
        query,
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
