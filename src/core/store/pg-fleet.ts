import { AppError, errorMessage } from '../errors.js';
import type { FleetEntry } from '../fleet/entry.js';
import { FLEET_ENTRY_FORMAT } from '../fleet/entry.js';
import { createPgConnection } from './pg-client.js';

/**
 * The fleet table of a PostgreSQL database: one row per running gateway of every assistant whose
 * store is on that database, so gateways on different hosts find each other. It lives in a schema
 * of its own shared by all of them (`service_fleet`), never in an assistant's schema, and is
 * migrated like an assistant's (pg-migrations.ts: advisory lock, `schema_migrations`).
 *
 * Times come from the server's clock (`now()`), never the writer's, so hosts whose clocks
 * disagree still agree on which rows are stale. Each row carries its own heartbeat interval and
 * expires after `STALE_BEATS` of them: a reader needs no knob to judge a writer tuned otherwise.
 */
export const FLEET_SCHEMA = 'service_fleet';

/** A row is stale once this many of its heartbeats are missed. */
export const STALE_BEATS = 3;

export const PG_FLEET_MIGRATIONS: readonly string[] = [
  // 1: the gateways
  `
  CREATE TABLE gateways (
    hostname TEXT NOT NULL,
    pid INTEGER NOT NULL,
    port INTEGER NOT NULL,
    name TEXT NOT NULL,
    role TEXT,
    engine TEXT NOT NULL,
    bind_host TEXT NOT NULL,
    url TEXT NOT NULL,
    dir TEXT NOT NULL,
    version TEXT NOT NULL,
    started_at TEXT NOT NULL,
    heartbeat_ms INTEGER NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (hostname, pid, port)
  );
  CREATE INDEX gateways_expires ON gateways(expires_at);
  `,
];

/** What identifies one gateway's row: one process may serve on two ports (tests). */
export interface FleetRowKey {
  hostname: string;
  pid: number;
  port: number;
}

export interface PgFleetTable {
  /** Connected and migrated; rejects with a store_unusable error that says why. */
  readonly ready: Promise<void>;
  /** Write the row (insert or replace) with a fresh heartbeat; it expires after STALE_BEATS × heartbeatMs. */
  beat(entry: FleetEntry & { hostname: string }, heartbeatMs: number): Promise<void>;
  /** Delete the rows whose heartbeat stopped (killed gateways, lost hosts); returns how many. */
  prune(): Promise<number>;
  /** Every row that has not expired, oldest first. */
  list(): Promise<FleetEntry[]>;
  remove(key: FleetRowKey): Promise<void>;
  close(): Promise<void>;
}

export interface PgFleetTableOptions {
  url: string;
  /** Opening a connection may take this long (the CLI waits less than a gateway). */
  connectTimeoutMs?: number;
  onIdleError?: (err: Error) => void;
}

/** A small pool (2) on the fleet schema; creating it does no I/O beyond starting the migration. */
export function createPgFleetTable(opts: PgFleetTableOptions): PgFleetTable {
  const conn = createPgConnection({
    url: opts.url,
    schema: FLEET_SCHEMA,
    migrations: PG_FLEET_MIGRATIONS,
    max: 2,
    ...(opts.connectTimeoutMs ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
    ...(opts.onIdleError ? { onIdleError: opts.onIdleError } : {}),
  });
  const { query } = conn;
  return {
    ready: conn.ready,
    beat: async (e, heartbeatMs) =>
      void (await query(
        `INSERT INTO gateways (hostname, pid, port, name, role, engine, bind_host, url, dir, version, started_at, heartbeat_ms, heartbeat_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now(), now() + $13 * interval '1 millisecond')
         ON CONFLICT (hostname, pid, port) DO UPDATE SET name = excluded.name, role = excluded.role, engine = excluded.engine,
           bind_host = excluded.bind_host, url = excluded.url, dir = excluded.dir, version = excluded.version, started_at = excluded.started_at,
           heartbeat_ms = excluded.heartbeat_ms, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at`,
        [e.hostname, e.pid, e.port, e.name, e.role ?? null, e.engine, e.host, e.url, e.dir, e.version, e.startedAt, heartbeatMs, heartbeatMs * STALE_BEATS],
      )),
    prune: async () => (await query('DELETE FROM gateways WHERE expires_at <= now()')).rowCount ?? 0,
    list: async () =>
      (await query('SELECT * FROM gateways WHERE expires_at > now() ORDER BY started_at COLLATE "C", hostname COLLATE "C", port')).rows.map(parseGatewayRow),
    remove: async (k) => void (await query('DELETE FROM gateways WHERE hostname = $1 AND pid = $2 AND port = $3', [k.hostname, k.pid, k.port])),
    close: () => conn.close(),
  };
}

/** Why the fleet table could not be used: the server's reason, without the store's wording (callers name the database). */
export function formatFleetError(err: unknown): string {
  return errorMessage(err instanceof AppError && err.code === 'store_unusable' && err.cause !== undefined ? err.cause : err);
}

// --- internal ---

function parseGatewayRow(r: Record<string, unknown>): FleetEntry {
  return {
    format: FLEET_ENTRY_FORMAT,
    name: String(r.name),
    ...(typeof r.role === 'string' && r.role ? { role: r.role } : {}),
    engine: String(r.engine),
    host: String(r.bind_host),
    port: Number(r.port),
    url: String(r.url),
    pid: Number(r.pid),
    startedAt: String(r.started_at),
    version: String(r.version),
    dir: String(r.dir),
    hostname: String(r.hostname),
  };
}
