/**
 * The fleet table of a PostgreSQL database, its schema and migrations (its queries are the
 * fleet's: fleet/pg-fleet-table.ts): one row per running gateway of every assistant whose store
 * is on that database, so gateways on different hosts find each other. It lives in a schema
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
