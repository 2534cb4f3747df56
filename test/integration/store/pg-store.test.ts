import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_MIGRATIONS } from '../../../src/core/store/pg-migrations.js';
import { createPgStore } from '../../../src/core/store/pg-store.js';
import type { Store } from '../../../src/core/store/types.js';
import { usePgCluster } from '../../helpers/pg-cluster.js';
import { describeOutboxContract, outboxEntry } from '../../unit/store/outbox-contract.js';
import { activity, describeStoreContract } from '../../unit/store/store-contract.js';

// One throwaway cluster for this file; each store gets a schema of its own on one database.
const pgCluster = usePgCluster();
let url = '';
let n = 0;
const opened: Store[] = [];
const open = (schema = `s${++n}`, migrations?: readonly string[]) => {
  const s = createPgStore({ url, schema, ...(migrations ? { migrations } : {}) });
  opened.push(s);
  return s;
};

/** A client of its own for the statements a test runs beside the store (ended whatever happens). */
async function withClient<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** A new schema as a store of an older release left it: the first `done` migrations applied. */
async function schemaAtVersion(done: number): Promise<string> {
  const schema = `m${++n}`;
  await open(schema, PG_MIGRATIONS.slice(0, done)).ready();
  return schema;
}

beforeAll(async () => {
  url = await pgCluster.database();
});

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
});

describeStoreContract('postgres', () => open());
describeOutboxContract('postgres', () => open());

describe('postgres store specifics', () => {
  it('migrates each schema once, also when several stores start on it at the same moment', async () => {
    const schema = `m${++n}`;
    const migrations = [...PG_MIGRATIONS, 'CREATE TABLE two (y INTEGER);'];
    const stores = Array.from({ length: 5 }, () => open(schema, migrations));
    await Promise.all(stores.map((s) => s.ready()));
    const later = open(schema, [...migrations, 'CREATE TABLE three (z INTEGER);']);
    await later.ready();
    await withClient(async (client) => {
      const versions = await client.query(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`);
      expect(versions.rows.map((r) => r.version)).toEqual(Array.from({ length: PG_MIGRATIONS.length + 2 }, (_, i) => i + 1));
      const tables = await client.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('two', 'three')`, [
        schema,
      ]);
      expect(tables.rows.map((r) => r.table_name).sort()).toEqual(['three', 'two']);
    });
  });

  it('keeps assistants apart: each schema has its own state', async () => {
    const a = open();
    const b = open();
    await a.saveSession({ key: 'k', engine: 'e', sessionId: 'a', createdAt: 1, updatedAt: 1 });
    expect(await b.getSession('k')).toBeUndefined();
    expect((await a.getSession('k'))?.sessionId).toBe('a');
  });

  it('claims a message for exactly one of many racing callers on separate pools', async () => {
    const schema = `r${++n}`;
    const hosts = [open(schema), open(schema), open(schema)];
    await Promise.all(hosts.map((s) => s.ready()));
    for (let round = 0; round < 5; round++) {
      const entry = { channel: 'channel_e', messageId: `m${round}`, chatKey: 'k', receivedAt: round, payload: '{}' };
      const claims = await Promise.all(
        hosts.flatMap((s, i) => [s.claimMessage({ ...entry, owner: `run-${i}` }), s.claimMessage({ ...entry, owner: `run-${i}` })]),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      // A later run taking over: of callers with one owner, only one wins.
      const takes = await Promise.all(hosts.map((s) => s.takeOverMessage('channel_e', `m${round}`, 'run-late')));
      expect(takes.filter(Boolean)).toHaveLength(1);
    }
  });

  it('hands each outbox entry to one of many gateways claiming at once, and a conversation to one of them at a time', async () => {
    const schema = `o${++n}`;
    const hosts = [open(schema), open(schema), open(schema)];
    await Promise.all(hosts.map((h) => h.ready()));
    const ids: number[] = [];
    for (let i = 0; i < 30; i++) ids.push(await hosts[0]!.addOutboxEntry(outboxEntry({ targetKey: `chat-${i % 10}`, text: `m${i}` })));
    const claims = await Promise.all(
      hosts.flatMap((h, i) => [h.claimOutboxEntries(`run-${i}`, 2_000, 60_000, 5), h.claimOutboxEntries(`run-${i}x`, 2_000, 60_000, 5)]),
    );
    const taken = claims.flat();
    expect(new Set(taken.map((e) => e.id)).size).toBe(taken.length);
    // Only the oldest entry of each of the ten conversations leads it.
    expect(taken.map((e) => e.id).sort((a, b) => a - b)).toEqual(ids.slice(0, 10));
  });

  it('removes a running turn for one caller, approves a pairing once, and counts every concurrent activity record', async () => {
    const schema = `c${++n}`;
    const [a, b] = [open(schema), open(schema)];
    const id = await a.addRunningTurn({ owner: { pid: 1, start: '1' }, sessionKey: 'k', source: 'http', sender: 'u', messagePreview: 'hi', startedAt: 1 });
    const removed = await Promise.all([a.removeRunningTurn(id), b.removeRunningTurn(id), a.removeRunningTurn(id), b.removeRunningTurn(id)]);
    expect(removed.filter(Boolean)).toHaveLength(1);
    // Another host's running turns are its own to reap: a pid means nothing on this machine.
    const elsewhere = createPgStore({ url, schema, host: 'other-host' });
    opened.push(elsewhere);
    await elsewhere.addRunningTurn({ owner: { pid: 1, start: '1' }, sessionKey: 'k', source: 'http', sender: 'u', messagePreview: 'there', startedAt: 1 });
    expect(await a.runningTurns()).toEqual([]);
    expect((await elsewhere.runningTurns()).map((t) => t.messagePreview)).toEqual(['there']);

    await a.openPairing({ channel: 'chat', kind: 'sender', id: 'x', createdAt: 0 }, { code: 'AAAAAAAA', ttlMs: 10_000, maxPending: 5 });
    const approvals = await Promise.all([a.approvePairing('AAAAAAAA', 1, 'cli'), b.approvePairing('AAAAAAAA', 1, 'http'), b.denyPairing('AAAAAAAA', 1)]);
    expect(approvals.filter(Boolean)).toHaveLength(1);

    // Many senders at once on two hosts: never more than maxPending live requests, never two for one sender.
    const opens = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 ? a : b).openPairing(
          { channel: 'busy', kind: 'sender', id: `u${i % 6}`, createdAt: 100 },
          { code: `CODE${String(i).padStart(4, '0')}`, ttlMs: 10_000, maxPending: 4 },
        ),
      ),
    );
    const live = await a.pairingRequests(100);
    expect(live.filter((r) => r.channel === 'busy')).toHaveLength(4);
    expect(new Set(live.map((r) => r.id)).size).toBe(live.length);
    expect(opens.filter((o) => o.status === 'full').length).toBeGreaterThan(0);

    await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).recordActivity(activity({ source: i % 4 ? 'http' : 'channel_e', costUsd: 0.25 }))));
    expect(await b.metrics()).toMatchObject({ totalMessages: 40, totalCostUsd: 10, messagesBySource: { http: 30, channel_e: 10 } });
    expect(await a.recentActivity(100)).toHaveLength(40);
  });

  it("migration 4 marks the strangers' records kept so far and the requester of senders' waiting codes", async () => {
    const schema = await schemaAtVersion(3);
    await withClient(async (client) => {
      const insert = `INSERT INTO ${schema}.activity (ts, ts_ms, source, sender, message_preview, response_preview, duration_ms, cost_usd, status, session_key, refused)
        VALUES ('1970-01-01T00:00:00.000Z', 0, 'c', 'u', $1, '', 1, 0, $2, 'k', $3)`;
      await client.query(insert, ['turn', 'completed', null]);
      await client.query(insert, ['stranger', 'refused', 'not_allowed']);
      await client.query(
        `INSERT INTO ${schema}.pairing_requests (code, channel, kind, subject_id, created_at, expires_at) VALUES ('AAAAAAAA', 'c', 'sender', 'eve', 0, 9e12), ('BBBBBBBB', 'c', 'chat', 'g1', 0, 9e12)`,
      );
      const now = open(schema);
      await now.ready();
      const rows = await client.query(`SELECT message_preview, stranger FROM ${schema}.activity ORDER BY id`);
      expect(rows.rows).toEqual([
        { message_preview: 'turn', stranger: false },
        { message_preview: 'stranger', stranger: true },
      ]);
      expect((await now.pairingRequests(0)).map((r) => [r.code, r.requester])).toEqual([
        ['AAAAAAAA', 'eve'],
        ['BBBBBBBB', undefined],
      ]);
    });
  });

  it('migration 6: history rows of before read with no status; replies stored after keep theirs', async () => {
    const schema = await schemaAtVersion(5);
    await withClient((client) => client.query(`INSERT INTO ${schema}.history (key, role, text, ts) VALUES ('k', 'assistant', 'a', 1)`));
    const now = open(schema);
    await now.appendHistory({ key: 'k', role: 'assistant', text: 'cut', ts: 2, status: 'aborted', message: 'Aborted' });
    expect(await now.readHistory('k')).toEqual([
      { key: 'k', role: 'assistant', text: 'a', ts: 1 },
      { key: 'k', role: 'assistant', text: 'cut', ts: 2, status: 'aborted', message: 'Aborted' },
    ]);
  });

  it('names the server, never the password, when it cannot connect', async () => {
    const dead = createPgStore({ url: 'postgres://bob:hunter2@127.0.0.1:1/x', schema: 'nope' });
    await expect(dead.ready()).rejects.toThrow(/cannot use the PostgreSQL store at postgres:\/\/bob:\*\*\*@127\.0\.0\.1:1\/x/);
    await expect(dead.getSession('k')).rejects.toThrow(/cannot use the PostgreSQL store/);
    await expect(dead.ready()).rejects.not.toThrow(/hunter2/);
    await dead.close();
  });
});
