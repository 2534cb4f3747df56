import path from 'node:path';
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
    expect(s.getSession('a')).toEqual({ key: 'a', engine: 'engine_b', sessionId: 's2', createdAt: 1, updatedAt: 5 });
    s.saveSession({ key: 'b', engine: 'engine_d', sessionId: null, createdAt: 2, updatedAt: 2 });
    expect(s.listSessions().map((r) => r.key).sort()).toEqual(['a', 'b']);
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

  it('stores JSON values by key', () => {
    const s = make();
    expect(s.getValue('x')).toBeUndefined();
    s.setValue('x', { a: [1, 2] });
    s.setValue('x', { a: [3] });
    expect(s.getValue('x')).toEqual({ a: [3] });
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
