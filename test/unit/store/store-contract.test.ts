import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../../src/core/store/memory-store.js';
import { MIGRATIONS } from '../../../src/core/store/migrations.js';
import { createSqliteStore } from '../../../src/core/store/sqlite-store.js';
import { testdir } from '../../helpers/testdir.js';
import { describeOutboxContract } from './outbox-contract.js';
import { activity, describeStoreContract } from './store-contract.js';

describeStoreContract('memory', () => createMemoryStore());
describeStoreContract('sqlite', () => createSqliteStore(path.join(testdir(), '.service', 'state.db')));
describeOutboxContract('memory', () => createMemoryStore());
describeOutboxContract('sqlite', () => createSqliteStore(path.join(testdir(), '.service', 'state.db')));

/** A state database as a release before left it: the first `done` migrations applied, still open to fill. */
function databaseAtVersion(done: number): { file: string; old: Database.Database } {
  const file = path.join(testdir(), '.service', 'state.db');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const old = new Database(file);
  for (const m of MIGRATIONS.slice(0, done)) old.exec(m);
  old.pragma(`user_version = ${done}`);
  return { file, old };
}

describe('sqlite store specifics', () => {
  it('persists across reopen and uses WAL with a busy timeout', async () => {
    const file = path.join(testdir(), '.service', 'state.db');
    const a = createSqliteStore(file);
    await a.saveSession({ key: 'k', engine: 'engine_b', sessionId: 's', createdAt: 1, updatedAt: 1 });
    await a.recordActivity(activity());
    expect(a.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(Number(a.db.pragma('busy_timeout', { simple: true }))).toBeGreaterThan(1000);
    await a.close();
    const b = createSqliteStore(file);
    expect((await b.getSession('k'))?.sessionId).toBe('s');
    expect((await b.metrics()).totalMessages).toBe(1);
    await b.close();
  });

  it('carries the key-value state of databases made before migration 4 over into typed state', async () => {
    const { file, old } = databaseAtVersion(3); // a database as the releases before migration 4 left it
    old.prepare('INSERT INTO kv (key, value) VALUES (?, ?)').run('group.botTurns.channel_d:C1', '5');
    old.prepare('INSERT INTO kv (key, value) VALUES (?, ?)').run('provider.failover', JSON.stringify({ consecutiveFailures: 0, fallbackSince: 77 }));
    old.close();
    const s = createSqliteStore(file);
    expect(await s.groupBotTurns('channel_d:C1')).toBe(5);
    expect(await s.readFailover()).toEqual({ consecutiveFailures: 0, fallbackSince: 77 });
    await s.close();
  });

  it('runs numbered migrations once, also when a second connection opens the same file', async () => {
    const file = path.join(testdir(), 'state.db');
    const migrations = [...MIGRATIONS, 'CREATE TABLE two (y INTEGER);'];
    const a = createSqliteStore(file, { migrations });
    const b = createSqliteStore(file, { migrations });
    expect(Number(b.db.pragma('user_version', { simple: true }))).toBe(migrations.length);
    await a.close();
    await b.close();
    const c = createSqliteStore(file, { migrations: [...migrations, 'CREATE TABLE three (z INTEGER);'] });
    expect(Number(c.db.pragma('user_version', { simple: true }))).toBe(migrations.length + 1);
    expect(c.db.prepare("SELECT name FROM sqlite_master WHERE name IN ('two','three') ORDER BY name").all()).toEqual([{ name: 'three' }, { name: 'two' }]);
    await c.close();
  });

  it('names the file when it is not a database', async () => {
    const dir = testdir({ 'state.db': 'this is not sqlite at all, just text padding padding padding padding padding padding padding padding' });
    expect(() => createSqliteStore(path.join(dir, 'state.db'))).toThrow(new RegExp(`cannot use the state database ${dir}/state.db`));
  });
});

describe('sqlite store: migration 6', () => {
  it('carries the cost of the activity kept so far into the per-day totals (the local day of each record)', async () => {
    const { file, old } = databaseAtVersion(5);
    const insert = old.prepare(
      `INSERT INTO activity (ts, source, sender, message_preview, response_preview, duration_ms, cost_usd, status, session_key) VALUES (?, 'http', 'u', 'm', 'r', 1, ?, 'completed', 'k')`,
    );
    const noon = new Date(2024, 4, 10, 12).getTime();
    insert.run(new Date(noon).toISOString(), 0.5);
    insert.run(new Date(noon + 60_000).toISOString(), 0.25);
    old.close();
    const s = createSqliteStore(file);
    expect(await s.dailyCost('2024-05-10')).toBeCloseTo(0.75);
    expect((await s.recentActivity(5)).every((r) => r.refused === undefined)).toBe(true);
    await s.close();
  });
});

describe('sqlite store: migration 7', () => {
  it('adds named sessions to a database of version 6; existing sessions start with 0 turns', async () => {
    const { file, old } = databaseAtVersion(6);
    old.prepare(`INSERT INTO sessions (key, engine, session_id, created_at, updated_at) VALUES ('k', 'engine_b', 's', 1, 2)`).run();
    old.close();
    const s = createSqliteStore(file);
    expect(await s.getSession('k')).toEqual({ key: 'k', engine: 'engine_b', sessionId: 's', createdAt: 1, updatedAt: 2, turns: 0 });
    expect(await s.addChatSession({ chatKey: 'k', name: 'main', sessionKey: 'k', createdAt: 1, current: true })).toBe(true);
    await s.close();
  });
});

describe('sqlite store: migration 9', () => {
  it("marks the strangers' records kept so far and the requester of waiting codes of senders", async () => {
    const { file, old } = databaseAtVersion(8);
    const insert = old.prepare(
      `INSERT INTO activity (ts, source, sender, message_preview, response_preview, duration_ms, cost_usd, status, session_key, refused) VALUES (?, 'c', 'u', ?, '', 1, 0, ?, 'k', ?)`,
    );
    const ts = new Date(0).toISOString();
    insert.run(ts, 'turn', 'completed', null);
    insert.run(ts, 'stranger', 'refused', 'not_paired');
    insert.run(ts, 'fast', 'refused', 'rate_limited');
    const pair = old.prepare(`INSERT INTO pairing_requests (code, channel, kind, subject_id, created_at, expires_at) VALUES (?, 'c', ?, ?, 0, 9e12)`);
    pair.run('AAAAAAAA', 'sender', 'eve');
    pair.run('BBBBBBBB', 'chat', 'g1');
    old.close();
    const s = createSqliteStore(file);
    expect(s.db.prepare('SELECT message_preview, stranger FROM activity ORDER BY id').all()).toEqual([
      { message_preview: 'turn', stranger: 0 },
      { message_preview: 'stranger', stranger: 1 },
      { message_preview: 'fast', stranger: 0 },
    ]);
    expect((await s.pairingRequests(0)).map((r) => [r.code, r.requester])).toEqual([
      ['AAAAAAAA', 'eve'],
      ['BBBBBBBB', undefined],
    ]);
    await s.close();
  });
});

describe('sqlite store: migration 11', () => {
  it('a database of version 10 opens with its history read as before (no status), and keeps the status of later replies', async () => {
    const { file, old } = databaseAtVersion(10);
    const insert = old.prepare('INSERT INTO history (key, role, text, ts) VALUES (?, ?, ?, ?)');
    insert.run('k', 'user', 'q', 1);
    insert.run('k', 'assistant', 'a', 2);
    old.close();
    const s = createSqliteStore(file);
    expect(await s.readHistory('k')).toEqual([
      { key: 'k', role: 'user', text: 'q', ts: 1 },
      { key: 'k', role: 'assistant', text: 'a', ts: 2 },
    ]);
    await s.appendHistory({ key: 'k', role: 'assistant', text: 'cut', ts: 3, status: 'aborted', message: 'Aborted' });
    expect((await s.readHistory('k', 1))[0]).toEqual({ key: 'k', role: 'assistant', text: 'cut', ts: 3, status: 'aborted', message: 'Aborted' });
    await s.close();
  });
});
