/**
 * Numbered schema migrations of .service/state.db. PRAGMA user_version holds how many ran; each
 * one runs once, in a transaction, and a second process migrating at the same moment waits on
 * the write lock and then sees there is nothing left to do. Never edit a migration that shipped:
 * add the next one.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: sessions, history, activity, metrics, key-value state
  `
  CREATE TABLE sessions (
    key TEXT PRIMARY KEY,
    engine TEXT NOT NULL,
    session_id TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX sessions_updated ON sessions(updated_at);
  CREATE TABLE history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text TEXT NOT NULL,
    ts INTEGER NOT NULL
  );
  CREATE INDEX history_key ON history(key, id);
  CREATE TABLE activity (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts TEXT NOT NULL,
    source TEXT NOT NULL,
    sender TEXT NOT NULL,
    message_preview TEXT NOT NULL,
    response_preview TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    status TEXT NOT NULL,
    session_key TEXT NOT NULL,
    error TEXT,
    escalated INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE metrics (
    source TEXT PRIMARY KEY,
    count INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    duration_ms REAL NOT NULL
  );
  CREATE TABLE kv (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
  // 2: the message ledger / inbox, and group chat context
  `
  CREATE TABLE inbox (
    channel TEXT NOT NULL,
    message_id TEXT NOT NULL,
    chat_key TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'done')),
    payload TEXT,
    PRIMARY KEY (channel, message_id)
  );
  CREATE INDEX inbox_pending ON inbox(status, received_at);
  CREATE TABLE group_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_key TEXT NOT NULL,
    message_id TEXT,
    ts INTEGER NOT NULL,
    sender TEXT NOT NULL,
    text TEXT NOT NULL,
    from_bot INTEGER NOT NULL
  );
  CREATE INDEX group_messages_chat ON group_messages(chat_key, id);
  `,
  // 3: scheduled task runs, and the chats each channel has seen (history catch-up)
  `
  CREATE TABLE task_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    preview TEXT NOT NULL,
    error TEXT,
    delivered INTEGER
  );
  CREATE INDEX task_runs_task ON task_runs(task_id, id);
  CREATE TABLE chats (
    channel TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    chat_type TEXT NOT NULL,
    last_seen INTEGER NOT NULL,
    fetched_until INTEGER,
    PRIMARY KEY (channel, chat_id)
  );
  `,
  // 4: the untyped key-value side channel becomes typed state of its owners (group reply counts,
  // provider failover); existing values are carried over.
  `
  CREATE TABLE group_state (
    chat_key TEXT PRIMARY KEY,
    bot_turns INTEGER NOT NULL
  );
  INSERT INTO group_state (chat_key, bot_turns)
    SELECT substr(key, length('group.botTurns.') + 1), CAST(value AS INTEGER) FROM kv WHERE key LIKE 'group.botTurns.%';
  CREATE TABLE provider_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    consecutive_failures INTEGER NOT NULL,
    fallback_since INTEGER
  );
  INSERT INTO provider_state (id, consecutive_failures, fallback_since)
    SELECT 1, COALESCE(json_extract(value, '$.consecutiveFailures'), 0), json_extract(value, '$.fallbackSince') FROM kv WHERE key = 'provider.failover';
  DROP TABLE kv;
  `,
  // 5: who holds a pending inbox message (exactly-once across restarts), and the turns running now
  // (a process killed mid-turn leaves its engine processes on record for the next start to reap)
  `
  ALTER TABLE inbox ADD COLUMN owner TEXT;
  CREATE TABLE running_turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_pid INTEGER NOT NULL,
    owner_start TEXT NOT NULL,
    session_key TEXT NOT NULL,
    source TEXT NOT NULL,
    sender TEXT NOT NULL,
    message_preview TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    processes TEXT NOT NULL DEFAULT '[]'
  );
  `,
  // 6: access control: pairing codes waiting for approval, approved senders and chats, the reason
  // a message was refused, and the cost per local day (the daily budget), carried over from the
  // activity kept so far
  `
  CREATE TABLE pairing_requests (
    code TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('sender', 'chat')),
    subject_id TEXT NOT NULL,
    label TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  );
  CREATE INDEX pairing_requests_subject ON pairing_requests(channel, kind, subject_id);
  CREATE TABLE access_grants (
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('sender', 'chat')),
    subject_id TEXT NOT NULL,
    label TEXT,
    approved_at INTEGER NOT NULL,
    approved_by TEXT NOT NULL,
    PRIMARY KEY (channel, kind, subject_id)
  );
  ALTER TABLE activity ADD COLUMN refused TEXT;
  CREATE TABLE daily_cost (
    day TEXT PRIMARY KEY,
    cost_usd REAL NOT NULL
  );
  INSERT INTO daily_cost (day, cost_usd)
    SELECT date(ts, 'localtime'), SUM(cost_usd) FROM activity GROUP BY date(ts, 'localtime');
  `,
  // 7: named sessions per chat (/new, /switch…): each chat's sessions and which one is current,
  // and the turns run on each engine session (/sessions shows them)
  `
  ALTER TABLE sessions ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE chat_sessions (
    chat_key TEXT NOT NULL,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    session_key TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    current INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (chat_key, name_key)
  );
  `,
  // 8: scheduled runs taken once per cron time (a takeover must neither lose nor double one)
  `
  CREATE TABLE task_slots (
    task_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (task_id, at)
  );
  `,
  // 9: strangers' activity kept apart (a flood of them cannot push out anyone else's records),
  // who asked for each pairing code (counted per requester), and what running turns hold of the
  // daily budget
  `
  ALTER TABLE activity ADD COLUMN stranger INTEGER NOT NULL DEFAULT 0;
  UPDATE activity SET stranger = 1 WHERE refused IN ('not_paired', 'not_allowed');
  CREATE INDEX activity_stranger ON activity(stranger, id);
  ALTER TABLE pairing_requests ADD COLUMN requester TEXT;
  UPDATE pairing_requests SET requester = subject_id WHERE kind = 'sender';
  CREATE TABLE budget_holds (
    id TEXT PRIMARY KEY,
    day TEXT NOT NULL,
    amount_usd REAL NOT NULL,
    expires_at INTEGER NOT NULL
  );
  `,
  // 10: the reply outbox: replies a platform refused, retried until delivered or given up
  `
  CREATE TABLE outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('reply', 'send')),
    target TEXT NOT NULL,
    target_key TEXT NOT NULL,
    chat_key TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    status TEXT NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'sending')),
    owner TEXT,
    claim_until INTEGER
  );
  CREATE INDEX outbox_target ON outbox(target_key, id);
  CREATE INDEX outbox_due ON outbox(status, next_attempt_at);
  `,
  // 11: how an assistant reply that did not complete ended (aborted or failed) and what its
  // completion said, so a page reloaded later marks it as the live page did; rows before stay
  // without (completed)
  `
  ALTER TABLE history ADD COLUMN status TEXT CHECK (status IN ('aborted', 'failed'));
  ALTER TABLE history ADD COLUMN message TEXT;
  `,
];
