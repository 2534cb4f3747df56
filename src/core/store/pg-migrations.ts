import type pg from 'pg';

/**
 * Numbered schema migrations of the PostgreSQL store, in the assistant's own schema. The table
 * `schema_migrations` records each one that ran; migrating holds a transaction-scoped advisory lock
 * for the schema, so gateways of one assistant starting at the same moment on several hosts run
 * each migration once (the second waits, then finds nothing left to do). DDL is transactional in
 * PostgreSQL: a migration that fails leaves no half-made schema. Never edit one that shipped: add
 * the next. The numbering is the PostgreSQL store's own (its 1 is the SQLite store's 1-6 in one).
 *
 * Running turns carry the host that runs them: process identities mean something on that host
 * only, so each host's reaper sees its own (see pg-store.ts).
 *
 * Types: times, durations and costs are DOUBLE PRECISION (exact for unix ms; a platform's
 * fractional timestamp stores as given, as SQLite does); generated ids are BIGSERIAL.
 */
export const PG_MIGRATIONS: readonly string[] = [
  // 1: everything the SQLite store had at its migration 6
  `
  CREATE TABLE sessions (
    key TEXT PRIMARY KEY,
    engine TEXT NOT NULL,
    session_id TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
  );
  CREATE INDEX sessions_updated ON sessions(updated_at);
  CREATE TABLE history (
    id BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text TEXT NOT NULL,
    ts DOUBLE PRECISION NOT NULL
  );
  CREATE INDEX history_key ON history(key, id);
  CREATE TABLE activity (
    id BIGSERIAL PRIMARY KEY,
    ts TEXT NOT NULL,
    ts_ms DOUBLE PRECISION NOT NULL,
    source TEXT NOT NULL,
    sender TEXT NOT NULL,
    message_preview TEXT NOT NULL,
    response_preview TEXT NOT NULL,
    duration_ms DOUBLE PRECISION NOT NULL,
    cost_usd DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL,
    session_key TEXT NOT NULL,
    error TEXT,
    escalated BOOLEAN NOT NULL DEFAULT FALSE,
    refused TEXT
  );
  CREATE INDEX activity_ts ON activity(ts_ms);
  CREATE TABLE metrics (
    source TEXT PRIMARY KEY,
    count BIGINT NOT NULL,
    cost_usd DOUBLE PRECISION NOT NULL,
    duration_ms DOUBLE PRECISION NOT NULL
  );
  CREATE TABLE daily_cost (
    day TEXT PRIMARY KEY,
    cost_usd DOUBLE PRECISION NOT NULL
  );
  CREATE TABLE inbox (
    seq BIGSERIAL,
    channel TEXT NOT NULL,
    message_id TEXT NOT NULL,
    chat_key TEXT NOT NULL,
    received_at DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'done')),
    payload TEXT,
    owner TEXT,
    PRIMARY KEY (channel, message_id)
  );
  CREATE INDEX inbox_pending ON inbox(status, received_at, seq);
  CREATE TABLE group_messages (
    id BIGSERIAL PRIMARY KEY,
    chat_key TEXT NOT NULL,
    message_id TEXT,
    ts DOUBLE PRECISION NOT NULL,
    sender TEXT NOT NULL,
    text TEXT NOT NULL,
    from_bot BOOLEAN NOT NULL
  );
  CREATE INDEX group_messages_chat ON group_messages(chat_key, id);
  CREATE TABLE group_state (
    chat_key TEXT PRIMARY KEY,
    bot_turns INTEGER NOT NULL
  );
  CREATE TABLE provider_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    consecutive_failures INTEGER NOT NULL,
    fallback_since DOUBLE PRECISION
  );
  CREATE TABLE task_runs (
    id BIGSERIAL PRIMARY KEY,
    task_id TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    ended_at DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL,
    duration_ms DOUBLE PRECISION NOT NULL,
    cost_usd DOUBLE PRECISION NOT NULL,
    preview TEXT NOT NULL,
    error TEXT,
    delivered BOOLEAN
  );
  CREATE INDEX task_runs_task ON task_runs(task_id, id);
  CREATE TABLE chats (
    channel TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    chat_type TEXT NOT NULL,
    last_seen DOUBLE PRECISION NOT NULL,
    fetched_until DOUBLE PRECISION,
    PRIMARY KEY (channel, chat_id)
  );
  CREATE TABLE running_turns (
    id BIGSERIAL PRIMARY KEY,
    host TEXT NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_start TEXT NOT NULL,
    session_key TEXT NOT NULL,
    source TEXT NOT NULL,
    sender TEXT NOT NULL,
    message_preview TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    processes TEXT NOT NULL DEFAULT '[]'
  );
  CREATE INDEX running_turns_host ON running_turns(host, id);
  CREATE TABLE pairing_requests (
    code TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('sender', 'chat')),
    subject_id TEXT NOT NULL,
    label TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL
  );
  CREATE INDEX pairing_requests_subject ON pairing_requests(channel, kind, subject_id);
  CREATE TABLE access_grants (
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('sender', 'chat')),
    subject_id TEXT NOT NULL,
    label TEXT,
    approved_at DOUBLE PRECISION NOT NULL,
    approved_by TEXT NOT NULL,
    PRIMARY KEY (channel, kind, subject_id)
  );
  `,
  // 2: named sessions per chat (/new, /switch…) and the turns run on each engine session (the
  // SQLite store's migration 7)
  `
  ALTER TABLE sessions ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE chat_sessions (
    seq BIGSERIAL,
    chat_key TEXT NOT NULL,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    session_key TEXT NOT NULL UNIQUE,
    created_at DOUBLE PRECISION NOT NULL,
    current BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (chat_key, name_key)
  );
  `,
  // 3: several gateways of one assistant on several hosts: where each engine session lives (a
  // session resumes only where it was made), scheduled runs taken once per cron time, and the
  // lease that says which gateway runs the channels and the scheduler
  `
  ALTER TABLE sessions ADD COLUMN origin TEXT;
  CREATE TABLE task_slots (
    task_id TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (task_id, at)
  );
  CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    active_at TIMESTAMPTZ NOT NULL
  );
  `,
  // 4: as the SQLite store's 9: strangers' activity kept apart, who asked for each pairing code,
  // and what running turns (on every host) hold of the daily budget
  `
  ALTER TABLE activity ADD COLUMN stranger BOOLEAN NOT NULL DEFAULT FALSE;
  UPDATE activity SET stranger = TRUE WHERE refused IN ('not_paired', 'not_allowed');
  CREATE INDEX activity_stranger ON activity(stranger, id);
  ALTER TABLE pairing_requests ADD COLUMN requester TEXT;
  UPDATE pairing_requests SET requester = subject_id WHERE kind = 'sender';
  CREATE TABLE budget_holds (
    id TEXT PRIMARY KEY,
    day TEXT NOT NULL,
    amount_usd DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL
  );
  `,
  // 5: as the SQLite store's 10: the reply outbox
  `
  CREATE TABLE outbox (
    id BIGSERIAL PRIMARY KEY,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('reply', 'send')),
    target TEXT NOT NULL,
    target_key TEXT NOT NULL,
    chat_key TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    next_attempt_at DOUBLE PRECISION NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    status TEXT NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'sending')),
    owner TEXT,
    claim_until DOUBLE PRECISION
  );
  CREATE INDEX outbox_target ON outbox(target_key, id);
  CREATE INDEX outbox_due ON outbox(status, next_attempt_at);
  `,
  // 6: as the SQLite store's 11: how an assistant reply that did not complete ended, and what its
  // completion said
  `
  ALTER TABLE history ADD COLUMN status TEXT CHECK (status IN ('aborted', 'failed'));
  ALTER TABLE history ADD COLUMN message TEXT;
  `,
];

/**
 * Bring `schema` up to `migrations.length`: create it when missing, then run what has not run,
 * all in one transaction under the schema's advisory lock.
 */
export async function migratePg(client: pg.ClientBase, schema: string, migrations: readonly string[]): Promise<void> {
  const ident = quoteIdent(schema);
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`service:migrate:${schema}`]);
    // Created only when missing: even `IF NOT EXISTS` needs the privilege to create, which a role
    // of one assistant (pg-roles.ts) has in its own schema only, and not on the database.
    const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${ident}`);
    await client.query(`SET LOCAL search_path TO ${ident}`);
    const table = await client.query<{ t: string | null }>(`SELECT to_regclass('schema_migrations')::text AS t`);
    if (!table.rows[0]?.t) await client.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())');
    const { rows } = await client.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
    for (let v = Number(rows[0]?.v ?? 0); v < migrations.length; v++) {
      await client.query(migrations[v] ?? '');
      await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [v + 1]);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** A schema name as an SQL identifier (names are checked to be [a-z0-9_] on input; quoting is the second line of defence). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
