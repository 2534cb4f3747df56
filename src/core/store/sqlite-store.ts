import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { AppError } from '../errors.js';
import { formatLocalDay } from '../util/local-day.js';
import { toAsyncStore } from './async-store.js';
import { MIGRATIONS } from './migrations.js';
import { createSqliteAccessStore } from './sqlite-access.js';
import { createSqliteChatSessionStore } from './sqlite-chat-sessions.js';
import { createSqliteOutboxStore } from './sqlite-outbox.js';
import {
  ACTIVITY_KEPT,
  GROUP_MESSAGES_PER_CHAT,
  HISTORY_PER_KEY,
  isStrangerRecord,
  STRANGER_ACTIVITY_KEPT,
  type ActivityRecord,
  type Metrics,
  TASK_RUNS_KEPT,
  TASK_SLOTS_KEPT_MS,
  type TaskRun,
  type Store,
  type SyncOf,
} from './types.js';
import {
  parseActivityRow,
  parseInboxRow,
  parseFailoverRow,
  parseKnownChatRow,
  parseRunningTurnRow,
  parseSessionRow,
  parseTaskRunRow,
  type Row,
} from './rows.js';

/**
 * The store in SQLite at .service/state.db: WAL so readers never block the writer, a busy
 * timeout so a second process (`service chat`, `service cron run`) waits instead of failing,
 * and every multi-row change in one transaction.
 */
export function createSqliteStore(file: string, opts: { migrations?: readonly string[] } = {}): Store & { db: Database.Database } {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  let db: Database.Database;
  try {
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 10000');
    db.pragma('synchronous = NORMAL');
    migrate(db, opts.migrations ?? MIGRATIONS);
  } catch (err) {
    throw new AppError('store_unusable', `cannot use the state database ${file}: ${(err as Error).message}`, {
      hint: 'if the file is damaged, move it away; sessions and history start fresh',
      cause: err,
    });
  }

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
    appendHistory: db.prepare('INSERT INTO history (key, role, text, ts) VALUES (?, ?, ?, ?)'),
    trimHistory: db.prepare('DELETE FROM history WHERE key = ? AND id <= (SELECT id FROM history WHERE key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)'),
    readHistory: db.prepare('SELECT key, role, text, ts FROM (SELECT * FROM history WHERE key = ? ORDER BY id DESC LIMIT ?) ORDER BY id ASC'),
    clearHistory: db.prepare('DELETE FROM history WHERE key = ?'),
    insertActivity: db.prepare(
      `INSERT INTO activity (ts, source, sender, message_preview, response_preview, duration_ms, cost_usd, status, session_key, error, escalated, refused, stranger)
       VALUES (@ts, @source, @sender, @messagePreview, @responsePreview, @durationMs, @costUsd, @status, @sessionKey, @error, @escalated, @refused, @stranger)`,
    ),
    addDailyCost: db.prepare('INSERT INTO daily_cost (day, cost_usd) VALUES (?, ?) ON CONFLICT(day) DO UPDATE SET cost_usd = cost_usd + excluded.cost_usd'),
    dailyCost: db.prepare('SELECT cost_usd FROM daily_cost WHERE day = ?'),
    // Each kind of record is kept apart (strangers' own bound, see STRANGER_ACTIVITY_KEPT).
    trimActivity: db.prepare(
      'DELETE FROM activity WHERE stranger = @stranger AND id <= (SELECT id FROM activity WHERE stranger = @stranger ORDER BY id DESC LIMIT 1 OFFSET @keep)',
    ),
    addMetrics: db.prepare(
      `INSERT INTO metrics (source, count, cost_usd, duration_ms) VALUES (?, 1, ?, ?)
       ON CONFLICT(source) DO UPDATE SET count = count + 1, cost_usd = cost_usd + excluded.cost_usd, duration_ms = duration_ms + excluded.duration_ms`,
    ),
    metrics: db.prepare('SELECT source, count, cost_usd, duration_ms FROM metrics'),
    // ts is toISOString() text, so the string comparison uses the index order and the julianday
    // arithmetic turns it into unix ms (rounded: julianday is a float) for the bucket number.
    timeline: db.prepare(
      `SELECT bucket, COUNT(*) AS count, SUM(cost_usd) AS cost_usd FROM (
         SELECT (CAST(ROUND((julianday(ts) - 2440587.5) * 86400000) AS INTEGER) - @since) / @bucketMs AS bucket, cost_usd
         FROM activity WHERE ts >= @sinceIso
       ) WHERE bucket >= 0 GROUP BY bucket ORDER BY bucket`,
    ),
    claimMessage: db.prepare(
      `INSERT INTO inbox (channel, message_id, chat_key, received_at, status, payload, owner) VALUES (@channel, @messageId, @chatKey, @receivedAt, 'pending', @payload, @owner)
       ON CONFLICT(channel, message_id) DO NOTHING`,
    ),
    takeOver: db.prepare(
      `UPDATE inbox SET owner = @owner WHERE channel = @channel AND message_id = @messageId AND status = 'pending' AND (owner IS NULL OR owner != @owner)`,
    ),
    markDone: db.prepare(`UPDATE inbox SET status = 'done', payload = NULL WHERE channel = ? AND message_id = ?`),
    pending: db.prepare(`SELECT * FROM inbox WHERE status = 'pending' ORDER BY received_at ASC, rowid ASC`),
    purgeInbox: db.prepare(`DELETE FROM inbox WHERE (status = 'done' OR payload IS NULL) AND received_at < ?`),
    appendGroup: db.prepare('INSERT INTO group_messages (chat_key, message_id, ts, sender, text, from_bot) VALUES (?, ?, ?, ?, ?, ?)'),
    trimGroup: db.prepare(
      'DELETE FROM group_messages WHERE chat_key = ? AND id <= (SELECT id FROM group_messages WHERE chat_key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)',
    ),
    recentGroup: db.prepare('SELECT * FROM (SELECT * FROM group_messages WHERE chat_key = ? ORDER BY id DESC LIMIT ?) ORDER BY id ASC'),
    insertRun: db.prepare(
      `INSERT INTO task_runs (task_id, started_at, ended_at, status, duration_ms, cost_usd, preview, error, delivered)
       VALUES (@taskId, @startedAt, @endedAt, @status, @durationMs, @costUsd, @preview, @error, @delivered)`,
    ),
    trimRuns: db.prepare('DELETE FROM task_runs WHERE task_id = ? AND id <= (SELECT id FROM task_runs WHERE task_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)'),
    runs: db.prepare('SELECT * FROM task_runs WHERE task_id = ? ORDER BY id DESC LIMIT ?'),
    claimSlot: db.prepare('INSERT OR IGNORE INTO task_slots (task_id, at) VALUES (?, ?)'),
    forgetSlots: db.prepare('DELETE FROM task_slots WHERE task_id = ? AND at < ?'),
    noteChat: db.prepare(
      `INSERT INTO chats (channel, chat_id, chat_type, last_seen) VALUES (@channel, @chatId, @chatType, @lastSeen)
       ON CONFLICT(channel, chat_id) DO UPDATE SET chat_type = excluded.chat_type, last_seen = MAX(last_seen, excluded.last_seen)`,
    ),
    chats: db.prepare('SELECT * FROM chats WHERE channel = ? ORDER BY chat_id'),
    chatFetched: db.prepare('UPDATE chats SET fetched_until = ? WHERE channel = ? AND chat_id = ?'),
    addRunningTurn: db.prepare(
      `INSERT INTO running_turns (owner_pid, owner_start, session_key, source, sender, message_preview, started_at)
       VALUES (@ownerPid, @ownerStart, @sessionKey, @source, @sender, @messagePreview, @startedAt)`,
    ),
    setRunningProcesses: db.prepare('UPDATE running_turns SET processes = ? WHERE id = ?'),
    removeRunningTurn: db.prepare('DELETE FROM running_turns WHERE id = ?'),
    runningTurns: db.prepare('SELECT * FROM running_turns ORDER BY id'),
    botTurns: db.prepare('SELECT bot_turns FROM group_state WHERE chat_key = ?'),
    addBotTurn: db.prepare(
      'INSERT INTO group_state (chat_key, bot_turns) VALUES (?, 1) ON CONFLICT(chat_key) DO UPDATE SET bot_turns = bot_turns + 1 RETURNING bot_turns',
    ),
    setBotTurns: db.prepare('INSERT INTO group_state (chat_key, bot_turns) VALUES (?, ?) ON CONFLICT(chat_key) DO UPDATE SET bot_turns = excluded.bot_turns'),
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
  const append = db.transaction((key: string, role: string, text: string, ts: number) => {
    q.appendHistory.run(key, role, text, ts);
    q.trimHistory.run(key, key, HISTORY_PER_KEY);
  });
  const appendGroup = db.transaction((chatKey: string, messageId: string | null, ts: number, sender: string, text: string, fromBot: boolean) => {
    q.appendGroup.run(chatKey, messageId, ts, sender, text, fromBot ? 1 : 0);
    q.trimGroup.run(chatKey, chatKey, GROUP_MESSAGES_PER_CHAT);
  });
  const claimSlot = db.transaction((taskId: string, at: number) => {
    q.forgetSlots.run(taskId, at - TASK_SLOTS_KEPT_MS);
    return q.claimSlot.run(taskId, at).changes === 1;
  });
  const recordRun = db.transaction((r: TaskRun) => {
    q.insertRun.run({ ...r, error: r.error ?? null, delivered: r.delivered === undefined ? null : r.delivered ? 1 : 0 });
    q.trimRuns.run(r.taskId, r.taskId, TASK_RUNS_KEPT);
  });
  const record = db.transaction((r: ActivityRecord) => {
    const stranger = isStrangerRecord(r) ? 1 : 0;
    q.insertActivity.run({ ...r, error: r.error ?? null, escalated: r.escalated ? 1 : 0, refused: r.refused ?? null, stranger });
    q.addMetrics.run(r.source, r.costUsd, r.durationMs);
    if (r.costUsd !== 0) q.addDailyCost.run(formatLocalDay(Date.parse(r.ts)), r.costUsd);
    q.trimActivity.run({ stranger, keep: stranger ? STRANGER_ACTIVITY_KEPT : ACTIVITY_KEPT });
  });

  const sync: SyncOf<Store> = {
    ...createSqliteAccessStore(db),
    ...createSqliteOutboxStore(db),
    ...chatSessions,
    getSession: (key) => {
      const r = q.getSession.get(key) as Row | undefined;
      return r ? parseSessionRow(r) : undefined;
    },
    saveSession: (r) => void q.saveSession.run(r),
    deleteSession: (key) => void q.deleteSession.run(key),
    listSessions: () => (q.listSessions.all() as Row[]).map(parseSessionRow),
    countSessionTurn: (key) => void q.countTurn.run(key),
    pruneSessions: (cutoff) => prune(cutoff),
    appendHistory: (e) => append(e.key, e.role, e.text, e.ts),
    readHistory: (key, limit) =>
      (q.readHistory.all(key, limit ?? -1) as Row[]).map((r) => ({
        key: String(r.key),
        role: r.role as 'user' | 'assistant',
        text: String(r.text),
        ts: Number(r.ts),
      })),
    clearHistory: (key) => void q.clearHistory.run(key),
    recordActivity: (r) => record(r),
    recentActivity(limit, filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter?.statuses?.length) {
        where.push(`status IN (${filter.statuses.map(() => '?').join(', ')})`);
        params.push(...filter.statuses);
      }
      if (filter?.escalated !== undefined) {
        where.push('escalated = ?');
        params.push(filter.escalated ? 1 : 0);
      }
      const sql = `SELECT * FROM activity ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
      return (db.prepare(sql).all(...params, limit) as Row[]).map(parseActivityRow);
    },
    activityTimeline(since, bucketMs) {
      const rows = q.timeline.all({
        since: BigInt(Math.floor(since)),
        bucketMs: BigInt(Math.max(1, Math.floor(bucketMs))),
        sinceIso: new Date(since).toISOString(),
      }) as Row[];
      return rows.map((r) => ({ start: since + Number(r.bucket) * bucketMs, count: Number(r.count), costUsd: Number(r.cost_usd) }));
    },
    dailyCost: (day) => Number((q.dailyCost.get(day) as Row | undefined)?.cost_usd ?? 0),
    metrics(): Metrics {
      const rows = q.metrics.all() as Row[];
      const count = rows.reduce((n, r) => n + Number(r.count), 0);
      const duration = rows.reduce((n, r) => n + Number(r.duration_ms), 0);
      return {
        totalMessages: count,
        totalCostUsd: rows.reduce((n, r) => n + Number(r.cost_usd), 0),
        avgDurationMs: count === 0 ? 0 : Math.round(duration / count),
        messagesBySource: Object.fromEntries(rows.map((r) => [String(r.source), Number(r.count)])),
      };
    },
    claimMessage: (e) => q.claimMessage.run({ ...e, payload: e.payload ?? null, owner: e.owner ?? null }).changes === 1,
    takeOverMessage: (channel, messageId, owner) => q.takeOver.run({ channel, messageId, owner }).changes === 1,
    markMessageDone: (channel, messageId) => void q.markDone.run(channel, messageId),
    pendingMessages: () => (q.pending.all() as Row[]).map(parseInboxRow),
    purgeMessages: (cutoff) => q.purgeInbox.run(cutoff).changes,
    appendGroupMessage: (m) => appendGroup(m.chatKey, m.messageId ?? null, m.ts, m.sender, m.text, m.fromBot),
    recentGroupMessages: (chatKey, limit) =>
      limit <= 0
        ? []
        : (q.recentGroup.all(chatKey, limit) as Row[]).map((r) => ({
            chatKey: String(r.chat_key),
            ...(r.message_id === null ? {} : { messageId: String(r.message_id) }),
            ts: Number(r.ts),
            sender: String(r.sender),
            text: String(r.text),
            fromBot: Boolean(r.from_bot),
          })),
    recordTaskRun: (r) => recordRun(r),
    claimTaskSlot: (taskId, at) => claimSlot(taskId, at),
    taskRuns: (taskId, limit) => (q.runs.all(taskId, limit) as Row[]).map(parseTaskRunRow),
    noteChat: (c) => void q.noteChat.run(c),
    knownChats: (channel) => (q.chats.all(channel) as Row[]).map(parseKnownChatRow),
    setChatFetched: (channel, chatId, until) => void q.chatFetched.run(until, channel, chatId),
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
    groupBotTurns: (chatKey) => Number((q.botTurns.get(chatKey) as Row | undefined)?.bot_turns ?? 0),
    setGroupBotTurns: (chatKey, turns) => void q.setBotTurns.run(chatKey, turns),
    addGroupBotTurn: (chatKey) => Number((q.addBotTurn.get(chatKey) as Row).bot_turns),
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
