import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../../src/core/store/memory-store.js';
import { MIGRATIONS } from '../../../src/core/store/migrations.js';
import { createSqliteStore } from '../../../src/core/store/sqlite-store.js';
import { ACTIVITY_KEPT, HISTORY_PER_KEY, type ActivityRecord, type Store } from '../../../src/core/store/types.js';
import { testdir } from '../../helpers/testdir.js';

const activity = (over: Partial<ActivityRecord> = {}): ActivityRecord => ({
  ts: new Date(0).toISOString(),
  source: 'http',
  sender: 'u',
  messagePreview: 'hi',
  responsePreview: 'hello',
  durationMs: 100,
  costUsd: 0.5,
  status: 'completed',
  sessionKey: 'k',
  ...over,
});

const implementations: Array<[string, () => Store]> = [
  ['memory', () => createMemoryStore()],
  ['sqlite', () => createSqliteStore(path.join(testdir(), '.service', 'state.db'))],
];

describe.each(implementations)('%s store (one contract)', (_name, make) => {
  it('saves, updates, lists and deletes sessions', () => {
    const s = make();
    expect(s.getSession('a')).toBeUndefined();
    s.saveSession({ key: 'a', engine: 'engine_b', sessionId: 's1', createdAt: 1, updatedAt: 1 });
    s.saveSession({ key: 'a', engine: 'engine_b', sessionId: 's2', createdAt: 99, updatedAt: 5 });
    expect(s.getSession('a')).toEqual({ key: 'a', engine: 'engine_b', sessionId: 's2', createdAt: 1, updatedAt: 5, turns: 0 });
    s.saveSession({ key: 'b', engine: 'engine_d', sessionId: null, createdAt: 2, updatedAt: 2 });
    expect(
      s
        .listSessions()
        .map((r) => r.key)
        .sort(),
    ).toEqual(['a', 'b']);
    s.deleteSession('a');
    expect(s.getSession('a')).toBeUndefined();
    s.close();
  });

  it('prunes idle sessions with their history, keeps fresh ones', () => {
    const s = make();
    s.saveSession({ key: 'old', engine: 'e', sessionId: 'x', createdAt: 1, updatedAt: 1_000 });
    s.saveSession({ key: 'new', engine: 'e', sessionId: 'y', createdAt: 1, updatedAt: 5_000 });
    s.appendHistory({ key: 'old', role: 'user', text: 'forget me', ts: 1 });
    s.appendHistory({ key: 'new', role: 'user', text: 'keep me', ts: 1 });
    expect(s.pruneSessions(2_000)).toBe(1);
    expect(s.getSession('old')).toBeUndefined();
    expect(s.readHistory('old')).toEqual([]);
    expect(s.readHistory('new').map((h) => h.text)).toEqual(['keep me']);
    s.close();
  });

  it('keeps history oldest first, bounded per key, clearable', () => {
    const s = make();
    for (let i = 0; i < HISTORY_PER_KEY + 5; i++) s.appendHistory({ key: 'k', role: i % 2 ? 'assistant' : 'user', text: `m${i}`, ts: i });
    const all = s.readHistory('k');
    expect(all).toHaveLength(HISTORY_PER_KEY);
    expect(all[0]?.text).toBe('m5');
    expect(s.readHistory('k', 2).map((h) => h.text)).toEqual([`m${HISTORY_PER_KEY + 3}`, `m${HISTORY_PER_KEY + 4}`]);
    s.clearHistory('k');
    expect(s.readHistory('k')).toEqual([]);
    s.close();
  });

  it('folds activity into metrics that outlive the bounded activity list', () => {
    const s = make();
    s.recordActivity(activity({ source: 'http', durationMs: 100, costUsd: 0.25 }));
    s.recordActivity(activity({ source: 'channel_e', durationMs: 300, costUsd: 0.5, status: 'failed', error: 'boom' }));
    s.recordActivity(activity({ source: 'channel_e', durationMs: 200, costUsd: 0, escalated: true }));
    expect(s.metrics()).toEqual({ totalMessages: 3, totalCostUsd: 0.75, avgDurationMs: 200, messagesBySource: { http: 1, channel_e: 2 } });
    expect(s.recentActivity(2).map((r) => r.durationMs)).toEqual([200, 300]);
    expect(s.recentActivity(10, { statuses: ['failed'] })).toEqual([expect.objectContaining({ error: 'boom', status: 'failed' })]);
    expect(s.recentActivity(10, { escalated: true })).toHaveLength(1);
    s.close();
  });

  it('bounds the activity list', () => {
    const s = make();
    for (let i = 0; i < ACTIVITY_KEPT + 3; i++) s.recordActivity(activity({ durationMs: i }));
    expect(s.recentActivity(ACTIVITY_KEPT + 10)).toHaveLength(ACTIVITY_KEPT);
    expect(s.metrics().totalMessages).toBe(ACTIVITY_KEPT + 3);
    s.close();
  });

  it('keeps group reply counts per chat and the provider failover state, typed', () => {
    const s = make();
    expect(s.groupBotTurns('channel_e:g1')).toBe(0);
    s.setGroupBotTurns('channel_e:g1', 3);
    s.setGroupBotTurns('channel_e:g2', 1);
    s.setGroupBotTurns('channel_e:g1', 4);
    expect([s.groupBotTurns('channel_e:g1'), s.groupBotTurns('channel_e:g2')]).toEqual([4, 1]);
    expect(s.readFailover()).toEqual({ consecutiveFailures: 0 });
    s.writeFailover({ consecutiveFailures: 0, fallbackSince: 1234 });
    expect(s.readFailover()).toEqual({ consecutiveFailures: 0, fallbackSince: 1234 });
    s.writeFailover({ consecutiveFailures: 2 });
    expect(s.readFailover()).toEqual({ consecutiveFailures: 2 });
    s.close();
  });
});

describe('sqlite store specifics', () => {
  it('persists across reopen and uses WAL with a busy timeout', () => {
    const file = path.join(testdir(), '.service', 'state.db');
    const a = createSqliteStore(file);
    a.saveSession({ key: 'k', engine: 'engine_b', sessionId: 's', createdAt: 1, updatedAt: 1 });
    a.recordActivity(activity());
    expect(a.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(Number(a.db.pragma('busy_timeout', { simple: true }))).toBeGreaterThan(1000);
    a.close();
    const b = createSqliteStore(file);
    expect(b.getSession('k')?.sessionId).toBe('s');
    expect(b.metrics().totalMessages).toBe(1);
    b.close();
  });

  it('carries the key-value state of databases made before migration 4 over into typed state', () => {
    const file = path.join(testdir(), '.service', 'state.db');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const old = new Database(file); // a database as the releases before migration 4 left it
    for (const m of MIGRATIONS.slice(0, 3)) old.exec(m);
    old.pragma('user_version = 3');
    old.prepare('INSERT INTO kv (key, value) VALUES (?, ?)').run('group.botTurns.channel_d:C1', '5');
    old.prepare('INSERT INTO kv (key, value) VALUES (?, ?)').run('provider.failover', JSON.stringify({ consecutiveFailures: 0, fallbackSince: 77 }));
    old.close();
    const s = createSqliteStore(file);
    expect(s.groupBotTurns('channel_d:C1')).toBe(5);
    expect(s.readFailover()).toEqual({ consecutiveFailures: 0, fallbackSince: 77 });
    s.close();
  });

  it('runs numbered migrations once, also when a second connection opens the same file', () => {
    const file = path.join(testdir(), 'state.db');
    const migrations = [...MIGRATIONS, 'CREATE TABLE two (y INTEGER);'];
    const a = createSqliteStore(file, { migrations });
    const b = createSqliteStore(file, { migrations });
    expect(Number(b.db.pragma('user_version', { simple: true }))).toBe(migrations.length);
    a.close();
    b.close();
    const c = createSqliteStore(file, { migrations: [...migrations, 'CREATE TABLE three (z INTEGER);'] });
    expect(Number(c.db.pragma('user_version', { simple: true }))).toBe(migrations.length + 1);
    expect(c.db.prepare("SELECT name FROM sqlite_master WHERE name IN ('two','three') ORDER BY name").all()).toEqual([{ name: 'three' }, { name: 'two' }]);
    c.close();
  });

  it('names the file when it is not a database', async () => {
    const dir = testdir({ 'state.db': 'this is not sqlite at all, just text padding padding padding padding padding padding padding padding' });
    expect(() => createSqliteStore(path.join(dir, 'state.db'))).toThrow(new RegExp(`cannot use the state database ${dir}/state.db`));
  });
});

describe.each(implementations)('%s store: message ledger and group context (one contract)', (_name, make) => {
  it('claims a platform message once; pending entries keep their payload until done', () => {
    const s = make();
    const entry = { channel: 'channel_e', messageId: '1:10', chatKey: 'channel_e:dm:1', receivedAt: 100, payload: '{"text":"hi"}' };
    expect(s.claimMessage(entry)).toBe(true);
    expect(s.claimMessage({ ...entry, receivedAt: 200 })).toBe(false);
    expect(s.claimMessage({ ...entry, messageId: '1:11', receivedAt: 50 })).toBe(true);
    expect(s.claimMessage({ ...entry, channel: 'channel_d' })).toBe(true); // same id on another channel is another message
    expect(s.pendingMessages().map((e) => e.messageId)).toEqual(['1:11', '1:10', '1:10']);
    expect(s.pendingMessages()[1]).toEqual({ ...entry, status: 'pending' });
    s.markMessageDone('channel_e', '1:10');
    expect(s.pendingMessages().map((e) => `${e.channel}/${e.messageId}`)).toEqual(['channel_e/1:11', 'channel_d/1:10']);
    expect(s.claimMessage(entry)).toBe(false); // still remembered once done
    s.close();
  });

  it('a later run takes over what an earlier one left pending, exactly once and never what it holds itself', () => {
    const s = make();
    const entry = { channel: 'channel_e', messageId: '7', chatKey: 'k', receivedAt: 1, payload: '{}' };
    s.claimMessage({ ...entry, owner: 'run-1' });
    s.claimMessage({ ...entry, messageId: '8', owner: 'run-2' });
    s.claimMessage({ ...entry, messageId: '9' }); // claimed before owners were recorded
    expect(s.takeOverMessage('channel_e', '7', 'run-2')).toBe(true);
    expect(s.takeOverMessage('channel_e', '7', 'run-2')).toBe(false); // already its own
    expect(s.takeOverMessage('channel_e', '7', 'run-3')).toBe(true); // yet another restart may take it again
    expect(s.takeOverMessage('channel_e', '8', 'run-2')).toBe(false); // the live path of this run holds it
    expect(s.takeOverMessage('channel_e', '9', 'run-2')).toBe(true);
    expect(s.takeOverMessage('channel_e', 'unknown', 'run-2')).toBe(false);
    s.markMessageDone('channel_e', '8');
    expect(s.takeOverMessage('channel_e', '8', 'run-3')).toBe(false); // done is done
    expect(s.pendingMessages().map((e) => [e.messageId, e.owner])).toEqual([
      ['7', 'run-3'],
      ['9', 'run-2'],
    ]);
    s.close();
  });

  it('records running turns with their processes; removal succeeds once', () => {
    const s = make();
    const a = s.addRunningTurn({ owner: { pid: 10, start: '99' }, sessionKey: 'k', source: 'http', sender: 'http', messagePreview: 'hi', startedAt: 5 });
    const b = s.addRunningTurn({ owner: { pid: 11, start: '7' }, sessionKey: 'j', source: 'channel_e', sender: 'ann', messagePreview: 'yo', startedAt: 6 });
    s.setRunningTurnProcesses(a, [
      { pid: 200, start: '1000' },
      { pid: 201, start: '1001' },
    ]);
    expect(s.runningTurns()).toEqual([
      {
        id: a,
        owner: { pid: 10, start: '99' },
        sessionKey: 'k',
        source: 'http',
        sender: 'http',
        messagePreview: 'hi',
        startedAt: 5,
        processes: [
          { pid: 200, start: '1000' },
          { pid: 201, start: '1001' },
        ],
      },
      { id: b, owner: { pid: 11, start: '7' }, sessionKey: 'j', source: 'channel_e', sender: 'ann', messagePreview: 'yo', startedAt: 6, processes: [] },
    ]);
    expect(s.removeRunningTurn(a)).toBe(true);
    expect(s.removeRunningTurn(a)).toBe(false);
    expect(s.runningTurns().map((t) => t.id)).toEqual([b]);
    s.close();
  });

  it('purges only processed entries older than the cutoff', () => {
    const s = make();
    s.claimMessage({ channel: 'c', messageId: 'old-done', chatKey: 'k', receivedAt: 10 });
    s.claimMessage({ channel: 'c', messageId: 'old-pending', chatKey: 'k', receivedAt: 10, payload: '{}' });
    s.claimMessage({ channel: 'c', messageId: 'old-ledger-only', chatKey: 'k', receivedAt: 10 });
    s.claimMessage({ channel: 'c', messageId: 'new-done', chatKey: 'k', receivedAt: 1000 });
    s.markMessageDone('c', 'old-done');
    s.markMessageDone('c', 'new-done');
    expect(s.purgeMessages(500)).toBe(2);
    expect(s.claimMessage({ channel: 'c', messageId: 'old-done', chatKey: 'k', receivedAt: 2000 })).toBe(true);
    expect(s.claimMessage({ channel: 'c', messageId: 'new-done', chatKey: 'k', receivedAt: 2000 })).toBe(false);
    expect(s.pendingMessages().map((e) => e.messageId)).toEqual(['old-pending', 'old-done']);
    s.close();
  });

  it('keeps recent group messages per chat, oldest first, bounded', () => {
    const s = make();
    for (let i = 0; i < 210; i++) s.appendGroupMessage({ chatKey: 'g', ts: i, sender: `u${i % 3}`, text: `m${i}`, fromBot: i % 5 === 0 });
    s.appendGroupMessage({ chatKey: 'other', ts: 1, sender: 'x', text: 'elsewhere', fromBot: false });
    expect(s.recentGroupMessages('g', 3)).toEqual([
      { chatKey: 'g', ts: 207, sender: 'u0', text: 'm207', fromBot: false },
      { chatKey: 'g', ts: 208, sender: 'u1', text: 'm208', fromBot: false },
      { chatKey: 'g', ts: 209, sender: 'u2', text: 'm209', fromBot: false },
    ]);
    expect(s.recentGroupMessages('g', 1000)).toHaveLength(200);
    expect(s.recentGroupMessages('g', 0)).toEqual([]);
    expect(s.recentGroupMessages('other', 5).map((m) => m.text)).toEqual(['elsewhere']);
    s.close();
  });
});

describe.each(implementations)('%s store: activity timeline (one contract)', (_name, make) => {
  it('counts kept activity per bucket from `since`, oldest first, only non-empty buckets', () => {
    const s = make();
    const at = (ms: number, costUsd = 0.5) => s.recordActivity(activity({ ts: new Date(ms).toISOString(), costUsd }));
    const t0 = Date.UTC(2025, 0, 1, 12, 0, 0);
    at(t0 - 1); // before the window
    at(t0, 0.25);
    at(t0 + 59_999, 0.25);
    at(t0 + 60_000);
    at(t0 + 5 * 60_000 + 123);
    at(t0 + 5 * 60_000 + 456);
    expect(s.activityTimeline(t0, 60_000)).toEqual([
      { start: t0, count: 2, costUsd: 0.5 },
      { start: t0 + 60_000, count: 1, costUsd: 0.5 },
      { start: t0 + 5 * 60_000, count: 2, costUsd: 1 },
    ]);
    expect(s.activityTimeline(t0 + 60 * 60_000, 60_000)).toEqual([]);
    expect(s.activityTimeline(t0 - 1, 3_600_000)).toEqual([{ start: t0 - 1, count: 6, costUsd: 2.5 }]);
    s.close();
  });
});

describe.each(implementations)('%s store: task runs and known chats (one contract)', (_name, make) => {
  it('keeps the last 100 runs per task, newest first', () => {
    const s = make();
    for (let i = 0; i < 105; i++) {
      s.recordTaskRun({
        taskId: 'daily',
        startedAt: i,
        endedAt: i + 1,
        status: i % 2 ? 'completed' : 'failed',
        durationMs: 1,
        costUsd: 0,
        preview: `run ${i}`,
        ...(i % 2 ? { delivered: true } : { error: 'boom' }),
      });
    }
    s.recordTaskRun({ taskId: 'other', startedAt: 1, endedAt: 2, status: 'skipped', durationMs: 0, costUsd: 0, preview: '' });
    const runs = s.taskRuns('daily', 1000);
    expect(runs).toHaveLength(100);
    expect(runs[0]).toEqual({ taskId: 'daily', startedAt: 104, endedAt: 105, status: 'failed', durationMs: 1, costUsd: 0, preview: 'run 104', error: 'boom' });
    expect(runs[1]).toMatchObject({ preview: 'run 103', delivered: true });
    expect(runs.at(-1)?.preview).toBe('run 5');
    expect(s.taskRuns('other', 5)).toEqual([{ taskId: 'other', startedAt: 1, endedAt: 2, status: 'skipped', durationMs: 0, costUsd: 0, preview: '' }]);
    s.close();
  });

  it('remembers chats per channel with the newest message seen and the fetch cursor', () => {
    const s = make();
    s.noteChat({ channel: 'channel_d', chatId: 'C1', chatType: 'group', lastSeen: 50 });
    s.noteChat({ channel: 'channel_d', chatId: 'C1', chatType: 'group', lastSeen: 20 });
    s.noteChat({ channel: 'channel_d', chatId: 'D1', chatType: 'direct', lastSeen: 10 });
    s.noteChat({ channel: 'channel_f', chatId: 'X', chatType: 'group', lastSeen: 1 });
    s.setChatFetched('channel_d', 'C1', 99);
    expect(s.knownChats('channel_d')).toEqual([
      { channel: 'channel_d', chatId: 'C1', chatType: 'group', lastSeen: 50, fetchedUntil: 99 },
      { channel: 'channel_d', chatId: 'D1', chatType: 'direct', lastSeen: 10 },
    ]);
    s.close();
  });
});

describe.each(implementations)('%s store: access control (one contract)', (_name, make) => {
  const ask = (id: string, createdAt: number, channel = 'chat') => ({ channel, kind: 'sender' as const, id, label: `name ${id}`, createdAt });
  const opts = (code: string) => ({ code, ttlMs: 1_000, maxPending: 2 });

  it('opens one live pairing per sender, at most maxPending per channel; expired ones make room and free their code', () => {
    const s = make();
    expect(s.openPairing(ask('a', 0), opts('AAAAAAAA'))).toEqual({
      status: 'created',
      request: { code: 'AAAAAAAA', channel: 'chat', kind: 'sender', id: 'a', label: 'name a', createdAt: 0, expiresAt: 1_000 },
    });
    expect(s.openPairing(ask('a', 500), opts('XXXXXXXX'))).toMatchObject({ status: 'existing', request: { code: 'AAAAAAAA', createdAt: 0 } });
    expect(s.openPairing(ask('b', 500), opts('AAAAAAAA'))).toEqual({ status: 'collision' });
    expect(s.openPairing(ask('b', 500), opts('BBBBBBBB'))).toMatchObject({ status: 'created' });
    expect(s.openPairing(ask('c', 600), opts('CCCCCCCC'))).toEqual({ status: 'full' });
    expect(s.openPairing(ask('c', 600, 'other'), opts('CCCCCCCC'))).toMatchObject({ status: 'created' }); // per channel
    // The same id as a chat is another subject.
    expect(s.openPairing({ ...ask('a', 600), kind: 'chat' }, { ...opts('DDDDDDDD'), maxPending: 5 })).toMatchObject({ status: 'created' });
    expect(s.pairingRequests(999).map((r) => r.code)).toEqual(['AAAAAAAA', 'BBBBBBBB', 'CCCCCCCC', 'DDDDDDDD']);
    expect(s.pairingRequests(1_000).map((r) => r.code)).toEqual(['BBBBBBBB', 'CCCCCCCC', 'DDDDDDDD']);
    expect(s.openPairing(ask('e', 1_000), { ...opts('AAAAAAAA'), maxPending: 9 })).toMatchObject({ status: 'created' });
    s.close();
  });

  it('approve turns a live request into a grant once; deny drops it; expired codes do neither; revoke removes both kinds', () => {
    const s = make();
    s.openPairing(ask('a', 0), opts('AAAAAAAA'));
    s.openPairing({ channel: 'chat', kind: 'chat', id: 'g', createdAt: 0 }, opts('GGGGGGGG'));
    s.openPairing(ask('x', 0, 'other'), opts('XXXXXXXX'));
    expect(s.approvePairing('AAAAAAAA', 1_000, 'cli')).toBeUndefined(); // expired at 1000
    s.openPairing(ask('a', 1_000), opts('A2A2A2A2'));
    expect(s.isGranted('chat', 'sender', 'a')).toBe(false);
    expect(s.approvePairing('A2A2A2A2', 1_500, 'cli')).toEqual({
      channel: 'chat',
      kind: 'sender',
      id: 'a',
      label: 'name a',
      approvedAt: 1_500,
      approvedBy: 'cli',
    });
    expect(s.approvePairing('A2A2A2A2', 1_500, 'cli')).toBeUndefined();
    expect(s.isGranted('chat', 'sender', 'a')).toBe(true);
    expect(s.isGranted('chat', 'chat', 'a')).toBe(false);
    expect(s.isGranted('other', 'sender', 'a')).toBe(false);
    s.openPairing({ channel: 'chat', kind: 'chat', id: 'a', createdAt: 1_500 }, opts('CHATCHAT'));
    expect(s.approvePairing('CHATCHAT', 1_600, 'http')).toEqual({ channel: 'chat', kind: 'chat', id: 'a', approvedAt: 1_600, approvedBy: 'http' });
    s.openPairing(ask('b', 1_600), opts('BBBBBBBB'));
    expect(s.denyPairing('BBBBBBBB', 1_700)).toMatchObject({ code: 'BBBBBBBB', id: 'b' });
    expect(s.denyPairing('BBBBBBBB', 1_700)).toBeUndefined();
    expect(s.pairingRequests(1_700)).toEqual([]);
    expect(s.accessGrants().map((g) => `${g.kind}:${g.id}`)).toEqual(['sender:a', 'chat:a']);
    expect(s.revokeGrant('chat', 'a').map((g) => g.kind)).toEqual(['chat', 'sender']);
    expect(s.revokeGrant('chat', 'a')).toEqual([]);
    expect(s.accessGrants()).toEqual([]);
    s.close();
  });

  it('keeps refused records with their reason, and the cost of each local day beyond the bounded activity list', () => {
    const s = make();
    const noon = new Date(2024, 4, 10, 12).getTime();
    s.recordActivity(activity({ ts: new Date(noon).toISOString(), costUsd: 0.25 }));
    s.recordActivity(activity({ ts: new Date(noon + 3_600_000).toISOString(), costUsd: 0.5 }));
    s.recordActivity(activity({ ts: new Date(noon + 86_400_000).toISOString(), costUsd: 1 }));
    s.recordActivity(activity({ status: 'refused', refused: 'not_paired', costUsd: 0, error: 'not paired', ts: new Date(noon).toISOString() }));
    expect(s.dailyCost('2024-05-10')).toBeCloseTo(0.75);
    expect(s.dailyCost('2024-05-11')).toBe(1);
    expect(s.dailyCost('2024-05-12')).toBe(0);
    expect(s.recentActivity(10, { statuses: ['refused'] })).toEqual([
      expect.objectContaining({ status: 'refused', refused: 'not_paired', error: 'not paired' }),
    ]);
    expect(s.recentActivity(10, { statuses: ['completed'] }).every((r) => r.refused === undefined)).toBe(true);
    for (let i = 0; i < ACTIVITY_KEPT + 5; i++) s.recordActivity(activity({ ts: new Date(noon).toISOString(), costUsd: 0 }));
    expect(s.dailyCost('2024-05-10')).toBeCloseTo(0.75); // the records are gone, the day's cost is not
    s.close();
  });
});

describe('sqlite store: migration 6', () => {
  it('carries the cost of the activity kept so far into the per-day totals (the local day of each record)', () => {
    const file = path.join(testdir(), '.service', 'state.db');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const old = new Database(file);
    for (const m of MIGRATIONS.slice(0, 5)) old.exec(m);
    old.pragma('user_version = 5');
    const insert = old.prepare(
      `INSERT INTO activity (ts, source, sender, message_preview, response_preview, duration_ms, cost_usd, status, session_key) VALUES (?, 'http', 'u', 'm', 'r', 1, ?, 'completed', 'k')`,
    );
    const noon = new Date(2024, 4, 10, 12).getTime();
    insert.run(new Date(noon).toISOString(), 0.5);
    insert.run(new Date(noon + 60_000).toISOString(), 0.25);
    old.close();
    const s = createSqliteStore(file);
    expect(s.dailyCost('2024-05-10')).toBeCloseTo(0.75);
    expect(s.recentActivity(5).every((r) => r.refused === undefined)).toBe(true);
    s.close();
  });
});

describe.each(implementations)('%s store: named sessions per chat (one contract)', (_name, make) => {
  const chat = 'channel_e:dm:1001';
  const named = (name: string, createdAt: number, current = false) => ({
    chatKey: chat,
    name,
    sessionKey: `${chat}#${name.toLowerCase()}`,
    createdAt,
    current,
  });

  it('adds sessions (one current per chat), switches, renames and removes them; names ignore case', () => {
    const s = make();
    expect(s.chatSessions(chat)).toEqual([]);
    expect(s.addChatSession({ ...named('main', 1, true), sessionKey: chat })).toBe(true);
    expect(s.addChatSession(named('Ideas', 2, true))).toBe(true);
    expect(s.chatSessions(chat).map((c) => [c.name, c.current])).toEqual([
      ['main', false],
      ['Ideas', true],
    ]);
    // Taken name (any case) or taken key: refused, nothing changes.
    expect(s.addChatSession(named('IDEAS', 3))).toBe(false);
    expect(s.addChatSession({ ...named('other', 3), sessionKey: chat })).toBe(false);
    expect(s.switchChatSession(chat, 'MAIN')).toBe(true);
    expect(s.chatSessions(chat).find((c) => c.current)?.name).toBe('main');
    expect(s.switchChatSession(chat, 'nope')).toBe(false);
    expect(s.renameChatSession(chat, 'ideas', 'plans')).toBe(true);
    expect(s.renameChatSession(chat, 'plans', 'Main')).toBe(false);
    expect(s.renameChatSession(chat, 'plans', 'PLANS')).toBe(true); // a change of case of its own name
    expect(s.chatSessions(chat).map((c) => [c.name, c.sessionKey])).toEqual([
      ['main', chat],
      ['PLANS', `${chat}#ideas`],
    ]);
    expect(s.removeChatSession(chat, 'plans')).toMatchObject({ name: 'PLANS', sessionKey: `${chat}#ideas` });
    expect(s.removeChatSession(chat, 'plans')).toBeUndefined();
    expect(s.allChatSessions().map((c) => c.name)).toEqual(['main']);
    s.close();
  });

  it('counts turns per engine session; pruning removes named sessions left without an engine session', () => {
    const s = make();
    s.saveSession({ key: `${chat}#busy`, engine: 'e', sessionId: 'x', createdAt: 1, updatedAt: 5_000 });
    s.countSessionTurn(`${chat}#busy`);
    s.countSessionTurn(`${chat}#busy`);
    s.countSessionTurn('no-such-key');
    s.saveSession({ key: `${chat}#busy`, engine: 'e', sessionId: 'y', createdAt: 1, updatedAt: 6_000 });
    expect(s.getSession(`${chat}#busy`)?.turns).toBe(2);
    s.saveSession({ key: `${chat}#idle`, engine: 'e', sessionId: 'z', createdAt: 1, updatedAt: 1_000 });
    s.addChatSession(named('busy', 1));
    s.addChatSession(named('idle', 1));
    s.addChatSession(named('empty-old', 1)); // never used, created before the cutoff
    s.addChatSession(named('empty-new', 9_000, true)); // never used yet, created after it
    expect(s.pruneSessions(2_000)).toBe(1);
    expect(s.chatSessions(chat).map((c) => c.name)).toEqual(['busy', 'empty-new']);
    s.close();
  });
});

describe('sqlite store: migration 7', () => {
  it('adds named sessions to a database of version 6; existing sessions start with 0 turns', () => {
    const file = path.join(testdir(), '.service', 'state.db');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const old = new Database(file);
    for (const m of MIGRATIONS.slice(0, 6)) old.exec(m);
    old.pragma('user_version = 6');
    old.prepare(`INSERT INTO sessions (key, engine, session_id, created_at, updated_at) VALUES ('k', 'engine_b', 's', 1, 2)`).run();
    old.close();
    const s = createSqliteStore(file);
    expect(s.getSession('k')).toEqual({ key: 'k', engine: 'engine_b', sessionId: 's', createdAt: 1, updatedAt: 2, turns: 0 });
    expect(s.addChatSession({ chatKey: 'k', name: 'main', sessionKey: 'k', createdAt: 1, current: true })).toBe(true);
    s.close();
  });
});
