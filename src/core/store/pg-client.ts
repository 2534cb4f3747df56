import type pg from 'pg';
import { loadPg } from './pg-load.js';
import { AppError } from '../errors.js';
import { formatSafeUrl } from '../config/secrets.js';
import { formatCliCommand } from '../invocation.js';
import { migratePg, quoteIdent } from './pg-migrations.js';
import type { Row } from './rows.js';

/** Run one statement on the pool (any connection). */
export type PgQuery = (sql: string, params?: unknown[]) => Promise<pg.QueryResult<Row>>;
/** Run `fn` in one transaction on one connection: committed when it resolves, rolled back when it throws. */
export type PgTransaction = <T>(fn: (query: PgQuery) => Promise<T>) => Promise<T>;

export interface PgConnection {
  pool: pg.Pool;
  query: PgQuery;
  transaction: PgTransaction;
  /** Connected and migrated; rejects with a store_unusable error that says why. */
  ready: Promise<void>;
  close(): Promise<void>;
}

export interface PgConnectionOptions {
  url: string;
  /** The assistant's schema: its tables, its migrations. */
  schema: string;
  migrations: readonly string[];
  /** Pool size (default 10): a gateway runs a few turns and channel handlers at once. */
  max?: number;
  /** A pooled connection failed while idle (server restart, network): the pool drops it and opens another. */
  onIdleError?: (err: Error) => void;
  /** How long opening a connection may take (default 15 s). */
  connectTimeoutMs?: number;
}

/**
 * A pool on the assistant's schema (`search_path` set per connection at startup, so every query
 * names bare tables) that migrates once before the first query runs. Creating it does no I/O;
 * the migration starts at once and every query waits for it, so a caller that never awaits
 * `ready` still gets the failure on its first query, never an unhandled rejection.
 */
export function createPgConnection(opts: PgConnectionOptions): PgConnection {
  const pool = new (loadPg().Pool)({
    connectionString: opts.url,
    options: `-c search_path=${quoteIdent(opts.schema)}`,
    max: opts.max ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 15_000,
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', (err) => opts.onIdleError?.(err));
  const fail = (err: unknown): never => {
    throw new AppError('store_unusable', `cannot use the PostgreSQL store at ${formatSafeUrl(opts.url)}: ${(err as Error).message}`, {
      hint: `check store.url (or SERVICE_STORE_URL) and that the server accepts connections; \`${formatCliCommand('doctor')}\` tests it`,
      cause: err,
    });
  };
  const ready = (async () => {
    const client = await pool.connect().catch(fail);
    try {
      await migratePg(client, opts.schema, opts.migrations).catch(fail);
    } finally {
      client.release();
    }
  })();
  ready.catch(() => undefined);
  const query: PgQuery = async (sql, params) => {
    await ready;
    return pool.query<Row>(sql, params);
  };
  const transaction: PgTransaction = async (fn) => {
    await ready;
    const client = await pool.connect();
    const run: PgQuery = (sql, params) => client.query<Row>(sql, params);
    try {
      await client.query('BEGIN');
      const out = await fn(run);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  };
  let ended: Promise<void> | undefined;
  return {
    pool,
    query,
    transaction,
    ready,
    close: () => {
      ended ??= ready.catch(() => undefined).then(() => pool.end());
      return ended;
    },
  };
}

/**
 * Insert a row and keep the newest `keep` rows of its owner (ids grow with insertion), in one
 * statement: one round trip, atomic. The DELETE sees the table as it was before the INSERT (one
 * snapshot for the whole statement), hence the offset of `keep - 1`. `$1` is the owner column.
 */
export async function insertKeeping(query: PgQuery, insert: string, table: string, column: string, keep: number, params: unknown[]): Promise<void> {
  await query(
    `WITH added AS (${insert})
     DELETE FROM ${table} WHERE ${column} = $1 AND id <= (SELECT id FROM ${table} WHERE ${column} = $1 ORDER BY id DESC OFFSET ${keep - 1} LIMIT 1)`,
    params,
  );
}
