import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { AppError } from '../errors.js';
import { toAsyncStore } from './async-store.js';
import { MIGRATIONS } from './migrations.js';
import { createSqliteAccessStore } from './sqlite-access.js';
import { createSqliteActivityStore } from './sqlite-activity.js';
import { createSqliteChannelStateStore } from './sqlite-channel-state.js';
import { createSqliteChatSessionStore } from './sqlite-chat-sessions.js';
import { createSqliteOutboxStore } from './sqlite-outbox.js';
import { HISTORY_PER_KEY, type HistoryEntry, TASK_RUNS_KEPT, TASK_SLOTS_KEPT_MS, type TaskRun, type Store, type SyncOf } from './types.js';
import { parseFailoverRow, parseHistoryRow, parseRunningTurnRow, parseSessionRow, parseTaskRunRow, type Row } from './rows.js';

/**
 * The store in SQLite at .service/state.db: WAL so readers never block the writer, a busy
 * timeout so a second process (`service chat`, `service cron run`) waits instead of failing,
 * and every multi-row change in one transaction.
 */
export function createSqliteStore(file: string, opts: { migrations?: readonly string[] } = {}): Store & { db: Database.Database } {
  const db = openDatabase(file, opts.migrations ?? MIGRATIONS);

  const q = {
    getSession: db.prepare('SELECT key, engine, session_id, created_at, updated_at, turns FROM sessions WHERE key = ?'),
    saveSession: db.prepare(
      `INSERT INTO sessions (key, engine, session_id, created_at, updated_at) VALUES (@key, @engine, @sessionId, @createdAt, @updatedAt)
       ON CONFLICT(key) DO UPDATE SET engine = excluded.engine, session_id = excluded.session_id, updated_at = excluded.updated_at`,
    ),
    deleteSession: db.prepare('DELETE FROM sessions WHERE key = ?'),
    listSessions: db.prepare('SELECT key, engine, session_id, created_at, updated_at, turns FROM sessions ORDER BY updated_at DESC'),
    countTurn: db.prepare('UPDATE sessions SET turns = turns + 1 WHERE key = ?'),
    staleKeys: db.prepare('SELECT key FROM sessions WHERE updated_at < ?'),
    appendHistory: db.prepare('INSERT INTO history (key, role, text, ts, status, message) VALUES (@key, @role, @text, @ts, @status, @message)'),
    trimHistory: db.prepare('DELETE FROM history WHERE key = ? AND id <= (SELECT id FROM history WHERE key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)'),
    readHistory: db.prepare('SELECT key, role, text, ts, status, message FROM (SELECT * FROM history WHERE key = ? ORDER BY id DESC LIMIT ?) ORDER BY id ASC'),
    clearHistory: db.prepare('DELETE FROM history WHERE key = ?'),
    insertRun: db.prepare(
      `INSERT INTO task_runs (task_id, started_at, ended_at, status, duration_ms, cost_usd, preview, error, delivered)
       VALUES (@taskId, @startedAt, @endedAt, @status, @durationMs, @costUsd, @preview, @error, @delivered)`,
    ),
    trimRuns: db.prepare('DELETE FROM task_runs WHERE task_id = ? AND id <= (SELECT id FROM task_runs WHERE task_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)'),
    runs: db.prepare('SELECT * FROM task_runs WHERE task_id = ? ORDER BY id DESC LIMIT ?'),
    claimSlot: db.prepare('INSERT OR IGNORE INTO task_slots (task_id, at) VALUES (?, ?)'),
    forgetSlots: db.prepare('DELETE FROM task_slots WHERE task_id = ? AND at < ?'),
    addRunningTurn: db.prepare(
      `INSERT INTO running_turns (owner_pid, owner_start, session_key, source, sender, message_preview, started_at)
       VALUES (@ownerPid, @ownerStart, @sessionKey, @source, @sender, @messagePreview, @startedAt)`,
    ),
    setRunningProcesses: db.prepare('UPDATE running_turns SET processes = ? WHERE id = ?'),
    removeRunningTurn: db.prepare('DELETE FROM running_turns WHERE id = ?'),
    runningTurns: db.prepare('SELECT * FROM running_turns ORDER BY id'),
    readFailover: db.prepare('SELECT consecutive_failures, fallback_since FROM provider_state WHERE id = 1'),
    writeFailover: db.prepare(
      `INSERT INTO provider_state (id, consecutive_failures, fallback_since) VALUES (1, ?, ?)
       ON CONFLICT(id) DO UPDATE SET consecutive_failures = excluded.consecutive_failures, fallback_since = excluded.fallback_since`,
    ),
  };

  const { prune: pruneChatSessions, ...chatSessions } = createSqliteChatSessionStore(db);
  const prune = db.transaction((cutoff: number) => {
    const keys = (q.staleKeys.all(cutoff) as Row[]).map((r) => String(r.key));
    for (const key of keys) {
      q.deleteSession.run(key);
      q.clearHistory.run(key);
    }
    pruneChatSessions(cutoff);
    return keys.length;
  });
  const append = db.transaction((e: HistoryEntry) => {
    q.appendHistory.run({ key: e.key, role: e.role, text: e.text, ts: e.ts, status: e.status ?? null, message: e.message ?? null });
    q.trimHistory.run(e.key, e.key, HISTORY_PER_KEY);
  });
  const claimSlot = db.transaction((taskId: string, at: number) => {
    q.forgetSlots.run(taskId, at - TASK_SLOTS_KEPT_MS);
    return q.claimSlot.run(taskId, at).changes === 1;
  });
  const recordRun = db.transaction((r: TaskRun) => {
    q.insertRun.run({ ...r, error: r.error ?? null, delivered: r.delivered === undefined ? null : r.delivered ? 1 : 0 });
    q.trimRuns.run(r.taskId, r.taskId, TASK_RUNS_KEPT);
  });
  const sync: SyncOf<Store> = {
    ...createSqliteAccessStore(db),
    ...createSqliteOutboxStore(db),
    ...chatSessions,
    ...createSqliteActivityStore(db),
    ...createSqliteChannelStateStore(db),
    getSession: (key) => {
      const r = q.getSession.get(key) as Row | undefined;
      return r ? parseSessionRow(r) : undefined;
    },
    saveSession: (r) => void q.saveSession.run(r),
    deleteSession: (key) => void q.deleteSession.run(key),
    listSessions: () => (q.listSessions.all() as Row[]).map(parseSessionRow),
    countSessionTurn: (key) => void q.countTurn.run(key),
    pruneSessions: (cutoff) => prune(cutoff),
    appendHistory: (e) => append(e),
    readHistory: (key, limit) => (q.readHistory.all(key, limit ?? -1) as Row[]).map(parseHistoryRow),
    clearHistory: (key) => void q.clearHistory.run(key),
    recordTaskRun: (r) => recordRun(r),
    claimTaskSlot: (taskId, at) => claimSlot(taskId, at),
    taskRuns: (taskId, limit) => (q.runs.all(taskId, limit) as Row[]).map(parseTaskRunRow),
    addRunningTurn: (t) =>
      Number(
        q.addRunningTurn.run({
          ownerPid: t.owner.pid,
          ownerStart: t.owner.start,
          sessionKey: t.sessionKey,
          source: t.source,
          sender: t.sender,
          messagePreview: t.messagePreview,
          startedAt: t.startedAt,
        }).lastInsertRowid,
      ),
    setRunningTurnProcesses: (id, processes) => void q.setRunningProcesses.run(JSON.stringify(processes), id),
    removeRunningTurn: (id) => q.removeRunningTurn.run(id).changes === 1,
    runningTurns: () => (q.runningTurns.all() as Row[]).map(parseRunningTurnRow),
    readFailover: () => {
      const r = q.readFailover.get() as Row | undefined;
      return parseFailoverRow(r);
    },
    writeFailover: (state) => void q.writeFailover.run(state.consecutiveFailures, state.fallbackSince ?? null),
    ready: () => undefined,
    close: () => {
      if (db.open) db.close();
    },
  };
  return { ...toAsyncStore<Store>(sync), db };
}

// --- internal ---

function openDatabase(file: string, migrations: readonly string[]): Database.Database {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 10000');
    db.pragma('synchronous = NORMAL');
    migrate(db, migrations);
    return db;
  } catch (err) {
    throw new AppError('store_unusable', `cannot use the state database ${file}: ${(err as Error).message}`, {
      hint: 'if the file is damaged, move it away; sessions and history start fresh',
      cause: err,
    });
  }
}

function migrate(db: Database.Database, migrations: readonly string[]): void {
  const version = () => Number(db.pragma('user_version', { simple: true }));
  if (version() >= migrations.length) return;
  // IMMEDIATE takes the write lock first, so two processes cannot both run migration N.
  db.transaction(() => {
    for (let v = version(); v < migrations.length; v++) {
      db.exec(migrations[v] ?? '');
      db.pragma(`user_version = ${v + 1}`);
    }
  }).immediate();
}
