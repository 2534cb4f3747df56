import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { FLEET_ENTRY_FORMAT } from '../../../src/core/fleet/entry.js';
import { createPgFleetTable } from '../../../src/core/fleet/pg-fleet-table.js';
import { createPgStore } from '../../../src/core/store/pg-store.js';
import { createSqliteStore } from '../../../src/core/store/sqlite-store.js';
import { formatLocalDay } from '../../../src/core/util/local-day.js';
import { collect, completionOf, createTestAssistant, writeTestAssistant } from '../../helpers/assistant.js';
import { runCommand } from '../../helpers/cli.js';
import { testdir } from '../../helpers/testdir.js';
import { usePgCluster } from '../../helpers/pg-cluster.js';
import { parseSseStrict, startTestServer } from '../../helpers/server.js';
import { activity } from '../../unit/store/store-contract.js';

/** The PostgreSQL store as a user meets it: chosen in service.yaml, migrated into, checked by doctor. */
const pgCluster = usePgCluster();
let url = '';

beforeAll(async () => {
  url = await pgCluster.database();
});

describe('an assistant on a PostgreSQL store', () => {
  it('runs turns on it (store.url from a ${VAR}), resumes the session, and never shows the URL', async () => {
    process.env.TEST_PG_URL = url;
    const s = await startTestServer({ yaml: 'store:\n  url: ${TEST_PG_URL}\n' });
    try {
      for (const [message, turn] of [
        ['hello', 1],
        ['again', 2],
      ] as const) {
        const events = parseSseStrict(await (await s.api('/chat', { json: { message, sessionKey: 'k1' } })).text());
        expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: `ECHO: ${message}\nTURN: ${turn}` });
      }
      const status = (await (await s.api('/api/status')).json()) as { metrics: { totalMessages: number } };
      expect(status.metrics.totalMessages).toBe(2);
      const config = await (await s.api('/api/config')).text();
      expect(config).not.toContain(url);
      expect(config).not.toContain('127.0.0.1:');

      // The state is on the server, in the assistant's own schema.
      const direct = createPgStore({ url, schema: 'assistant_tester' });
      try {
        expect((await direct.readHistory('k1')).map((h) => h.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
        // The session is known everywhere, resumable only where its engine made it.
        expect(await direct.getSession('k1')).toMatchObject({ key: 'k1', sessionId: null, turns: 2 });
        const here = createPgStore({ url, schema: 'assistant_tester', origin: `${os.hostname()}:${s.dir}` });
        expect((await here.getSession('k1'))?.sessionId).toEqual(expect.any(String));
        await here.close();
        expect(await direct.runningTurns()).toEqual([]);
      } finally {
        await direct.close();
      }
    } finally {
      await s.stop();
      delete process.env.TEST_PG_URL;
    }
  });
});

describe('a password in the store URL, in either form (issue 29)', () => {
  const password = 'pg-query-pass-8472';
  const withQuery = () => `${url}?password=${password}`;

  it('SERVICE_STORE_URL is masked like store.url: in turn text, activity records and /api/status', async () => {
    process.env.SERVICE_STORE_URL = withQuery();
    const s = await startTestServer({ yaml: 'store:\n  schema: masked_env\n' });
    try {
      const events = parseSseStrict(
        await (await s.api('/chat', { json: { message: `the password is ${password}, the URL ${withQuery()}`, sessionKey: 'k' } })).text(),
      );
      expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
      expect(JSON.stringify(events)).not.toContain(password);
      expect(JSON.stringify(events)).toContain('********');
      expect(JSON.stringify(await s.store.recentActivity(5))).not.toContain(password);
      const status = await (await s.api('/api/status')).text();
      expect(status).toContain('the password is ********');
      expect(status).not.toContain(password);
    } finally {
      await s.stop();
      delete process.env.SERVICE_STORE_URL;
    }
  });

  it('service doctor, service fleet ls and service store migrate never print it', async () => {
    const { dir } = writeTestAssistant({ yaml: 'store:\n  schema: masked_cli\n' });
    const doctor = await runCommand(['doctor', '-d', dir], { env: { SERVICE_STORE_URL: withQuery() } });
    expect(doctor.stdout).toMatch(/pass {2}state store: PostgreSQL postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+\?password=\*\*\* \(schema masked_cli\)/);
    const fleet = await runCommand(['fleet', 'ls', '--store', withQuery()], { env: { SERVICE_FLEET_DIR: testdir() } });
    expect(fleet.stdout).toContain('?password=***');
    const fleetJson = await runCommand(['fleet', 'ls', '--json', '--store', withQuery()], { env: { SERVICE_FLEET_DIR: testdir() } });
    const sqlite = createSqliteStore(path.join(dir, '.service', 'state.db'));
    await sqlite.close();
    const migrate = await runCommand(['store', 'migrate', '--to', withQuery(), '-d', dir]);
    expect(migrate.code).toBe(0);
    expect(migrate.stdout).toContain('?password=***');
    for (const r of [doctor, fleet, fleetJson, migrate]) expect(r.stdout + r.stderr).not.toContain(password);
  });
});

describe('the daily budget on two hosts sharing the store (issue 29)', () => {
  it("turns starting together on two gateways see each other's holds: the day ends at most one turn over the cap", async () => {
    process.env.TEST_PG_URL = url;
    const yaml = 'store:\n  url: ${TEST_PG_URL}\n  schema: budget_two_hosts\naccess:\n  dailyBudgetUsd: 0.05\n';
    const hosts = [createTestAssistant({ yaml }), createTestAssistant({ yaml })];
    try {
      const turns = hosts.flatMap((h, n) =>
        Array.from({ length: 6 }, (_, i) =>
          collect(h.assistant.chat('SLEEP:200 hi', { sessionKey: `host${n}:${i}`, source: 'channel_e', waitForCapacity: true })),
        ),
      );
      const done = (await Promise.all(turns)).map(completionOf);
      const ran = hosts[0]!.standIn.runs().length + hosts[1]!.standIn.runs().length;
      const spent = await hosts[0]!.store.dailyCost(formatLocalDay(Date.now()));
      expect(spent).toBeCloseTo(ran * 0.0123);
      expect(spent).toBeLessThanOrEqual(0.05 + 0.0123 + 1e-9);
      expect(done.filter((c) => c.message?.includes('The daily budget is spent'))).toHaveLength(12 - ran);
    } finally {
      await Promise.all(hosts.map((h) => h.close()));
      delete process.env.TEST_PG_URL;
    }
  });
});

describe('service store migrate --to <url>', () => {
  it('copies every table of the SQLite state into an empty schema, once', async () => {
    const { dir } = writeTestAssistant({ yaml: 'store:\n  schema: migrated\n' });
    const sqlite = createSqliteStore(path.join(dir, '.service', 'state.db'));
    await sqlite.saveSession({ key: 'k', engine: 'engine_b', sessionId: 's1', createdAt: 1, updatedAt: 2 });
    await sqlite.countSessionTurn('k');
    await sqlite.addChatSession({ chatKey: 'k', name: 'Main', sessionKey: 'k', createdAt: 1, current: true });
    for (let i = 0; i < 3; i++) await sqlite.appendHistory({ key: 'k', role: i % 2 ? 'assistant' : 'user', text: `m${i}`, ts: i });
    await sqlite.appendHistory({ key: 'k', role: 'assistant', text: 'cut', ts: 3, status: 'aborted', message: 'Aborted' });
    await sqlite.recordActivity(activity({ ts: new Date(2024, 4, 10, 12).toISOString(), costUsd: 0.5, escalated: true }));
    await sqlite.claimMessage({ channel: 'c', messageId: 'p1', chatKey: 'k', receivedAt: 5, payload: '{"x":1}', owner: 'run-1' });
    await sqlite.claimMessage({ channel: 'c', messageId: 'p0', chatKey: 'k', receivedAt: 5, payload: '{"x":0}' });
    await sqlite.openPairing({ channel: 'chat', kind: 'sender', id: 'bob', createdAt: Date.now() }, { code: 'BBBBBBBB', ttlMs: 3_600_000, maxPending: 3 });
    await sqlite.approvePairing('BBBBBBBB', Date.now(), 'cli');
    await sqlite.recordTaskRun({ taskId: 't', startedAt: 1, endedAt: 2, status: 'completed', durationMs: 1, costUsd: 0, preview: 'ok', delivered: true });
    await sqlite.setGroupBotTurns('g', 2);
    await sqlite.writeFailover({ consecutiveFailures: 1 });
    await sqlite.close();

    const r = await runCommand(['store', 'migrate', '--to', url, '-d', dir]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('(schema migrated)');
    expect(r.stdout).toContain('history: 4');

    const pg = createPgStore({ url, schema: 'migrated' });
    try {
      expect(await pg.getSession('k')).toEqual({ key: 'k', engine: 'engine_b', sessionId: 's1', createdAt: 1, updatedAt: 2, turns: 1 });
      expect((await pg.readHistory('k')).map((h) => h.text)).toEqual(['m0', 'm1', 'm2', 'cut']);
      expect((await pg.readHistory('k', 1))[0]).toMatchObject({ status: 'aborted', message: 'Aborted' });
      await pg.appendHistory({ key: 'k', role: 'user', text: 'after', ts: 9 }); // the id sequence continues after the copied ids
      expect((await pg.readHistory('k', 2)).map((h) => h.text)).toEqual(['cut', 'after']);
      expect(await pg.metrics()).toMatchObject({ totalMessages: 1, totalCostUsd: 0.5 });
      expect(await pg.recentActivity(5, { escalated: true })).toHaveLength(1);
      expect(await pg.dailyCost('2024-05-10')).toBe(0.5);
      expect((await pg.pendingMessages()).map((e) => [e.messageId, e.owner])).toEqual([
        ['p1', 'run-1'],
        ['p0', undefined],
      ]);
      expect(await pg.isGranted('chat', 'sender', 'bob')).toBe(true);
      expect(await pg.taskRuns('t', 5)).toEqual([expect.objectContaining({ status: 'completed', delivered: true })]);
      expect(await pg.groupBotTurns('g')).toBe(2);
      expect(await pg.readFailover()).toEqual({ consecutiveFailures: 1 });
      expect(await pg.chatSessions('k')).toEqual([{ chatKey: 'k', name: 'Main', sessionKey: 'k', createdAt: 1, current: true }]);
    } finally {
      await pg.close();
    }

    // A second run would mix two histories: refused, nothing written.
    const again = await runCommand(['store', 'migrate', '--to', url, '-d', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already holds state');
  });
});

describe('one database role per assistant (issue 29)', () => {
  const urlFrom = (stdout: string) => /\n {2}(postgres:\/\/\S+)\n/.exec(stdout)?.[1] ?? '';

  it("service store migrate --role: each assistant's role owns its schema and cannot touch another's; doctor says which roles can", async () => {
    const a = writeTestAssistant({ yaml: 'store:\n  schema: assistant_alpha\n' });
    const sqlite = createSqliteStore(path.join(a.dir, '.service', 'state.db'));
    await sqlite.appendHistory({ key: 'k', role: 'user', text: 'hello', ts: 1 });
    await sqlite.close();
    const b = writeTestAssistant({ yaml: 'store:\n  schema: assistant_beta\n' }); // nothing to copy: the role and its schema only

    const madeA = await runCommand(['store', 'migrate', '--to', url, '--role', '-d', a.dir]);
    expect(madeA.stderr).toBe('');
    expect(madeA.stdout).toContain('Copied 1 rows into');
    expect(madeA.stdout).toContain('Role assistant_alpha owns schema assistant_alpha');
    const urlA = urlFrom(madeA.stdout);
    expect(new URL(urlA).username).toBe('assistant_alpha');
    const madeB = await runCommand(['store', 'migrate', '--to', url, '--role', 'beta_bot', '-d', b.dir]);
    expect(madeB.code).toBe(0);
    const urlB = urlFrom(madeB.stdout);
    expect(new URL(urlB).username).toBe('beta_bot');
    // Running it again changes nothing and says the password is unchanged.
    const again = await runCommand(['store', 'migrate', '--to', url, '--role', 'beta_bot', '-d', b.dir]);
    expect(again.stdout).toContain('The role existed: its password is unchanged');

    // Each gateway runs on its own role: migrates its schema, writes its rows, joins the fleet.
    const storeB = createPgStore({ url: urlB, schema: 'assistant_beta' });
    await storeB.openPairing({ channel: 'chat', kind: 'sender', id: 'bob', createdAt: Date.now() }, { code: 'BBBBBBBB', ttlMs: 3_600_000, maxPending: 3 });
    expect(await storeB.approvePairing('BBBBBBBB', Date.now(), 'cli')).toMatchObject({ id: 'bob' });
    await storeB.close();
    const fleetA = createPgFleetTable({ url: urlA });
    const entry = { format: FLEET_ENTRY_FORMAT, name: 'alpha', engine: 'engine_b', host: '127.0.0.1', port: 1, url: 'http://127.0.0.1:1', pid: 1 };
    await fleetA.beat({ ...entry, startedAt: new Date().toISOString(), version: '0', dir: a.dir, hostname: 'h' }, 1000);
    expect((await fleetA.list()).map((e) => e.name)).toContain('alpha');
    await fleetA.remove({ hostname: 'h', pid: 1, port: 1 });
    await fleetA.close();
    const storeA = createPgStore({ url: urlA, schema: 'assistant_alpha' });
    expect((await storeA.readHistory('k')).map((h) => h.text)).toEqual(['hello']);
    await storeA.close();

    // With alpha's credentials, beta's approvals are out of reach.
    const asA = new pg.Client({ connectionString: urlA });
    await asA.connect();
    try {
      const attempt = (sql: string) =>
        asA.query(sql).then(
          () => 'allowed',
          (err: Error) => err.message,
        );
      expect(
        await attempt(
          `INSERT INTO assistant_beta.access_grants (channel, kind, subject_id, approved_at, approved_by) VALUES ('chat', 'sender', 'eve', 1, 'x')`,
        ),
      ).toMatch(/permission denied/);
      expect(await attempt('SELECT * FROM assistant_beta.access_grants')).toMatch(/permission denied/);
      expect(await attempt('CREATE TABLE assistant_beta.x (y int)')).toMatch(/permission denied/);
      expect(await attempt('CREATE SCHEMA intruder')).toMatch(/permission denied/);
    } finally {
      await asA.end();
    }

    const doctorA = await runCommand(['doctor', '-d', a.dir], { env: { SERVICE_STORE_URL: urlA } });
    expect(doctorA.stdout).toContain("pass  store role: can write no other assistant's schema");
    const doctorAdmin = await runCommand(['doctor', '-d', a.dir], { env: { SERVICE_STORE_URL: url } });
    expect(doctorAdmin.stdout).toMatch(/warn {2}store role: the role of store\.url can write other assistants' schemas \([^)]*assistant_beta[^)]*\)/);
    expect(doctorAdmin.stdout).toContain('store migrate --to <admin url> --role');
    expect(doctorAdmin.stdout).not.toContain('store role: can write no other');
  });

  it('service fleet ls shows the shared fleet table escaped: any assistant of the database can write a row', async () => {
    const fleet = createPgFleetTable({ url });
    const forged = 'evil\u001b[2J\nNAME  ROLE\u202e';
    const row = { format: FLEET_ENTRY_FORMAT, name: forged, role: 'x\ny', engine: 'engine_b', host: '127.0.0.1', port: 2, url: 'http://127.0.0.1:2', pid: 2 };
    await fleet.beat({ ...row, startedAt: new Date().toISOString(), version: '0', dir: '/x', hostname: 'h2' }, 60_000);
    try {
      const listed = await runCommand(['fleet', 'ls', '--store', url], { env: { SERVICE_FLEET_DIR: testdir() } });
      expect(listed.stdout).not.toMatch(/[\u001b\u202e]/);
      expect(listed.stdout).toContain('evil\\x1b[2J\\nNAME  ROLE\\u202e');
      expect(listed.stdout.match(/^NAME/gm)).toHaveLength(1);
    } finally {
      await fleet.remove({ hostname: 'h2', pid: 2, port: 2 });
      await fleet.close();
    }
  });

  it('--print-sql prints the script for a database administrator and changes nothing', async () => {
    const { dir } = writeTestAssistant({ yaml: 'store:\n  schema: assistant_gamma\n' });
    const printed = await runCommand(['store', 'migrate', '--to', url, '--print-sql', '-d', dir]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain('CREATE ROLE "assistant_gamma" LOGIN PASSWORD');
    expect(printed.stdout).toContain('CREATE SCHEMA IF NOT EXISTS "assistant_gamma" AUTHORIZATION "assistant_gamma";');
    expect(printed.stdout).toContain('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "service_fleet" TO "assistant_gamma";');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      expect((await admin.query(`SELECT 1 FROM pg_roles WHERE rolname = 'assistant_gamma'`)).rowCount).toBe(0);
      // As printed, it runs (one statement at a time, as psql would).
      await admin.query(printed.stdout);
      expect((await admin.query(`SELECT 1 FROM pg_roles WHERE rolname = 'assistant_gamma'`)).rowCount).toBe(1);
      await admin.query(printed.stdout); // and again, changing nothing
    } finally {
      await admin.end();
    }
  });
});

describe('service doctor', () => {
  it('checks the store connection, and names the server but never the password when it fails', async () => {
    const { dir } = writeTestAssistant();
    const ok = await runCommand(['doctor', '-d', dir], { env: { SERVICE_STORE_URL: url } });
    expect(ok.stdout).toMatch(/pass {2}state store: PostgreSQL postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+ \(schema assistant_tester\): connected/);
    const bad = await runCommand(['doctor', '-d', dir], { env: { SERVICE_STORE_URL: 'postgres://bob:hunter2@127.0.0.1:1/nowhere' } });
    expect(bad.stdout).toContain('FAIL  state store: cannot use the PostgreSQL store at postgres://bob:***@127.0.0.1:1/nowhere');
    expect(bad.stdout).not.toContain('hunter2');
    expect(bad.code).toBe(1);
    const plain = await runCommand(['doctor', '-d', dir], { env: { SERVICE_STORE_URL: '' } });
    expect(plain.stdout).toContain(`pass  state store: SQLite ${path.join(dir, '.service', 'state.db')}`);
  });
});
