import { AppError, errorMessage } from '../errors.js';
import { createPgConnection } from '../store/pg-client.js';
import { FLEET_SCHEMA, PG_FLEET_MIGRATIONS, STALE_BEATS } from '../store/pg-fleet-schema.js';
import { FLEET_ENTRY_FORMAT, type FleetEntry } from './entry.js';

// The fleet's rows in a PostgreSQL database. The schema and its migrations are the store's
// (store/pg-fleet-schema.ts), since `service store migrate --role` creates them with the roles.

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
