import os from 'node:os';
import type Database from 'better-sqlite3';
import { AppError } from '../errors.js';
import type { PgQuery } from './pg-client.js';
import type { createPgStore } from './pg-store.js';

/**
 * What `service store migrate` copies: every table of the SQLite store, row for row, into the
 * PostgreSQL schema (ids kept, so history, activity and task runs keep their order, and the
 * sequences continue after them). `convert` turns SQLite's 0/1 into booleans and adds what the
 * PostgreSQL schema keeps besides (the activity time in ms). Budget holds belong to turns running
 * now, and the copy runs with no gateway: they are not copied.
 */
interface TableCopy {
  table: string;
  /** Columns read from SQLite, in SQLite's order (`ORDER BY`). */
  columns: string[];
  order: string;
  convert?: (row: Record<string, unknown>) => Record<string, unknown>;
  /** Has a BIGSERIAL `id` whose sequence must continue after the copied ids. */
  serial?: boolean;
}

const asBool = (v: unknown) => (v === null || v === undefined ? null : Boolean(v));

export const COPIED_TABLES: readonly TableCopy[] = [
  { table: 'sessions', columns: ['key', 'engine', 'session_id', 'created_at', 'updated_at', 'turns'], order: 'key' },
  { table: 'history', columns: ['id', 'key', 'role', 'text', 'ts', 'status', 'message'], order: 'id', serial: true },
  {
    table: 'activity',
    columns: [
      'id',
      'ts',
      'source',
      'sender',
      'message_preview',
      'response_preview',
      'duration_ms',
      'cost_usd',
      'status',
      'session_key',
      'error',
      'escalated',
      'refused',
      'stranger',
    ],
    order: 'id',
    serial: true,
    convert: (r) => ({ ...r, ts_ms: Date.parse(String(r.ts)) || 0, escalated: Boolean(r.escalated), stranger: Boolean(r.stranger) }),
  },
  { table: 'metrics', columns: ['source', 'count', 'cost_usd', 'duration_ms'], order: 'source' },
  { table: 'daily_cost', columns: ['day', 'cost_usd'], order: 'day' },
  { table: 'inbox', columns: ['channel', 'message_id', 'chat_key', 'received_at', 'status', 'payload', 'owner'], order: 'rowid' },
  {
    table: 'group_messages',
    columns: ['id', 'chat_key', 'message_id', 'ts', 'sender', 'text', 'from_bot'],
    order: 'id',
    serial: true,
    convert: (r) => ({ ...r, from_bot: Boolean(r.from_bot) }),
  },
  { table: 'group_state', columns: ['chat_key', 'bot_turns'], order: 'chat_key' },
  { table: 'provider_state', columns: ['id', 'consecutive_failures', 'fallback_since'], order: 'id' },
  {
    table: 'task_runs',
    columns: ['id', 'task_id', 'started_at', 'ended_at', 'status', 'duration_ms', 'cost_usd', 'preview', 'error', 'delivered'],
    order: 'id',
    serial: true,
    convert: (r) => ({ ...r, delivered: asBool(r.delivered) }),
  },
  { table: 'chats', columns: ['channel', 'chat_id', 'chat_type', 'last_seen', 'fetched_until'], order: 'channel, chat_id' },
  {
    table: 'running_turns',
    columns: ['id', 'owner_pid', 'owner_start', 'session_key', 'source', 'sender', 'message_preview', 'started_at', 'processes'],
    order: 'id',
    serial: true,
    // Migrated on the host that ran them, so its next start still reaps what a killed run left.
    convert: (r) => ({ ...r, host: os.hostname() }),
  },
  { table: 'pairing_requests', columns: ['code', 'channel', 'kind', 'subject_id', 'requester', 'label', 'created_at', 'expires_at'], order: 'code' },
  { table: 'access_grants', columns: ['channel', 'kind', 'subject_id', 'label', 'approved_at', 'approved_by'], order: 'approved_at' },
  {
    table: 'chat_sessions',
    columns: ['chat_key', 'name', 'name_key', 'session_key', 'created_at', 'current'],
    order: 'created_at, rowid',
    convert: (r) => ({ ...r, current: Boolean(r.current) }),
  },
  {
    // Replies still waiting go with the state; a claim of a gateway that is not running is over.
    table: 'outbox',
    columns: [
      'id',
      'channel',
      'kind',
      'target',
      'target_key',
      'chat_key',
      'text',
      'created_at',
      'next_attempt_at',
      'attempts',
      'last_error',
      'status',
      'owner',
      'claim_until',
    ],
    order: 'id',
    serial: true,
  },
];

/** Rows per INSERT: well under PostgreSQL's 65535 parameters for the widest table. */
const BATCH = 500;

/**
 * Copy an opened SQLite store into an opened (empty) PostgreSQL store, in one transaction: a
 * failure leaves the target as it was. Refuses a target that already holds state, so a second
 * run cannot mix two histories. Returns the rows copied per table.
 */
export async function copySqliteToPg(source: Database.Database, target: ReturnType<typeof createPgStore>): Promise<Record<string, number>> {
  await target.ready();
  const client = await target.pool.connect();
  const query: PgQuery = (sql, params) => client.query(sql, params);
  const counts: Record<string, number> = {};
  try {
    await query('BEGIN');
    for (const t of COPIED_TABLES) {
      const { rows } = await query(`SELECT 1 FROM ${t.table} LIMIT 1`);
      if (rows.length > 0) {
        throw new AppError('store_not_empty', `the PostgreSQL schema already holds state (table ${t.table} has rows); nothing was copied`, {
          hint: 'migrate into a new schema (--schema <name>, then set store.schema) or empty this one first',
        });
      }
    }
    for (const t of COPIED_TABLES) {
      const rows = (source.prepare(`SELECT ${t.columns.join(', ')} FROM ${t.table} ORDER BY ${t.order}`).all() as Array<Record<string, unknown>>).map(
        (r) => t.convert?.(r) ?? r,
      );
      counts[t.table] = rows.length;
      if (rows.length === 0) continue;
      const columns = Object.keys(rows[0] ?? {});
      for (let i = 0; i < rows.length; i += BATCH) {
        const batch = rows.slice(i, i + BATCH);
        const params: unknown[] = [];
        const values = batch.map((row) => `(${columns.map((c) => `$${params.push(row[c] ?? null)}`).join(', ')})`);
        await query(`INSERT INTO ${t.table} (${columns.join(', ')}) VALUES ${values.join(', ')}`, params);
      }
      if (t.serial) {
        await query(`SELECT setval(pg_get_serial_sequence('${t.table}', 'id'), (SELECT MAX(id) FROM ${t.table}))`);
      }
    }
    await query('COMMIT');
    return counts;
  } catch (err) {
    await query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
