import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../../src/core/store/sqlite-store.js';
import { backupSqliteStore, readStoreFile, restoreSqliteStore } from '../../../src/core/store/sqlite-backup.js';
import { runCli } from '../../helpers/cli.js';
import { startGatewayProcess } from '../../helpers/gateway-process.js';
import { parseSseStrict } from '../../helpers/server.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { poll } from '../../helpers/wait.js';

/**
 * Issue 35, item 5: `service store backup FILE` while a gateway runs (SQLite's online backup),
 * `service store restore FILE` into a stopped directory, and everything the store keeps
 * surviving the round trip.
 */
const TOKEN = 'backup-token-0123456789';
const YAML = `name: keeper\nengine: engine_b\ngateway:\n  token: ${TOKEN}\ntasks:\n  - { id: daily, name: Daily, schedule: "0 9 * * *", prompt: "SAY:daily report" }\n`;
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

async function chat(url: string, message: string, sessionKey: string): Promise<Array<Record<string, unknown>>> {
  const res = await fetch(`${url}/chat`, { method: 'POST', headers, body: JSON.stringify({ message, sessionKey }) });
  return parseSseStrict(await res.text()) as Array<Record<string, unknown>>;
}

describe('service store backup / restore', () => {
  it('a backup taken during a turn, restored into a new directory: the conversation goes on with its engine session and history', async () => {
    const standIn = createStandIn();
    const env = { ...standIn.env, SERVICE_TOKEN: '' };
    const first = testdir({ 'service.yaml': YAML });
    const a = await startGatewayProcess(first, [], env);
    const one = await chat(a.url, 'hello', 'alice');
    const sessionId = one.find((e) => e.type === 'done')?.sessionId;
    expect(sessionId).toEqual(expect.any(String));
    expect((await fetch(`${a.url}/api/tasks/daily/run`, { method: 'POST', headers })).status).toBe(200);

    // The backup runs while a turn is running on the same session.
    const hanging = chat(a.url, 'HANG', 'alice');
    await poll(async () => ((await (await fetch(`${a.url}/api/status`, { headers })).json()) as { turns: { running: number } }).turns.running === 1);
    const file = path.join(testdir(), 'keeper.backup');
    const backup = await runCli(['store', 'backup', file, '-d', first]);
    expect(backup.stderr).toBe('');
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(/^Backed up .*state\.db to .*keeper\.backup: \d+ KB, store schema \d+; 1 sessions, .*3 history, .*1 task runs/);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['keeper.backup']); // one file, nothing beside it
    await fetch(`${a.url}/abort`, { method: 'POST', headers, body: '{"sessionKey":"alice"}' });
    await hanging;
    // Refused while the gateway runs there, whatever --force says.
    const busy = await runCli(['store', 'restore', file, '-d', first, '--force']);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain('another gateway is already running');
    await a.stop();

    const second = testdir({ 'service.yaml': YAML });
    const restore = await runCli(['store', 'restore', file, '-d', second]);
    expect(restore.stderr).toBe('');
    expect(restore.code).toBe(0);
    expect(restore.stdout).toContain(`into ${path.join(second, '.service', 'state.db')}`);

    const b = await startGatewayProcess(second, [], env);
    const next = await chat(b.url, 'again', 'alice');
    expect(next.find((e) => e.type === 'done')?.sessionId).toBe(sessionId);
    expect(next.at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    expect(standIn.runs().at(-1)?.argv).toEqual(expect.arrayContaining(['--resume', sessionId]));
    const runs = (await (await fetch(`${b.url}/api/tasks/daily/history`, { headers })).json()) as { runs: Array<{ status: string }> };
    expect(runs.runs.map((r) => r.status)).toEqual(['completed']);
    await b.stop();

    const restored = createSqliteStore(path.join(second, '.service', 'state.db'));
    try {
      expect((await restored.readHistory('alice')).map((h) => h.text)).toEqual([
        'hello',
        'ECHO: hello\nTURN: 1',
        'HANG',
        'again',
        expect.stringMatching(/^ECHO: again/),
      ]);
    } finally {
      await restored.close();
    }
  });

  it('sessions, named sessions, inbox, access grants and task history survive; the state replaced is kept', async () => {
    const db = path.join(testdir(), 'state.db');
    const store = createSqliteStore(db);
    await store.saveSession({ key: 'k', engine: 'e', sessionId: 'sess-1', createdAt: 1, updatedAt: 2 });
    await store.appendHistory({ key: 'k', role: 'user', text: 'hi', ts: 3 });
    await store.claimMessage({ channel: 'c', messageId: 'm1', chatKey: 'c:1', receivedAt: 4, payload: '{"x":1}', owner: 'run-1' });
    await store.openPairing({ channel: 'c', kind: 'sender', id: 'u1', label: 'U', createdAt: 5 }, { code: 'ABCD2345', ttlMs: 60_000, maxPending: 3 });
    await store.approvePairing('ABCD2345', 6, 'cli');
    await store.recordTaskRun({ taskId: 't', startedAt: 7, endedAt: 8, status: 'completed', durationMs: 1, costUsd: 0.5, preview: 'done' });
    const file = path.join(testdir(), 'b.db');
    const summary = await backupSqliteStore(db, file);
    expect(summary.rows).toMatchObject({ sessions: 1, history: 1, inbox: 1, access_grants: 1, task_runs: 1 });
    await store.appendHistory({ key: 'k', role: 'user', text: 'after the backup', ts: 9 });
    await store.close();

    await expect(backupSqliteStore(db, file)).rejects.toThrow(/exists/);
    const into = path.join(testdir(), 'new', '.service', 'state.db');
    await restoreSqliteStore(file, into);
    const { previous } = await restoreSqliteStore(file, db, new Date('2030-01-02T03:04:05.678Z'));
    expect(previous).toBe(`${db}.before-restore-2030-01-02T03-04-05-678Z`);
    expect(readStoreFile(previous ?? '').rows.history).toBe(2);
    for (const restored of [into, db]) {
      const s = createSqliteStore(restored);
      try {
        expect(await s.getSession('k')).toMatchObject({ sessionId: 'sess-1', engine: 'e' });
        expect((await s.readHistory('k')).map((h) => h.text)).toEqual(['hi']);
        expect(await s.pendingMessages()).toMatchObject([{ channel: 'c', messageId: 'm1', payload: '{"x":1}' }]);
        expect(await s.isGranted('c', 'sender', 'u1')).toBe(true);
        expect(await s.taskRuns('t', 10)).toMatchObject([{ status: 'completed', costUsd: 0.5 }]);
        expect(fs.statSync(restored).mode & 0o777).toBe(0o600);
      } finally {
        await s.close();
      }
    }
  });

  it('refuses what is not a backup of a store, one from a newer version, and state it would replace without --force', async () => {
    const dir = testdir({ 'service.yaml': YAML, 'notes.txt': 'not a database at all, just text that is long enough to be a file' });
    for (const [file, why] of [
      [path.join(dir, 'notes.txt'), /is not a backup of a service store/],
      [path.join(dir, 'missing.db'), /does not exist/],
    ] as const) {
      const r = await runCli(['store', 'restore', file, '-d', dir]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(why);
    }
    expect(fs.existsSync(path.join(dir, '.service'))).toBe(false); // refused before the directory was touched
    const other = path.join(testdir(), 'other.db');
    const plain = createSqliteStore(other);
    plain.db.exec('CREATE TABLE extra (x)');
    plain.db.pragma('user_version = 999');
    await plain.close();
    expect(() => readStoreFile(other)).toThrow(/made by a newer version of service \(store schema 999/);

    const nothing = await runCli(['store', 'backup', path.join(dir, 'b.db'), '-d', dir]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('has no state to back up yet');
    fs.mkdirSync(path.join(dir, '.service'));
    const db = createSqliteStore(path.join(dir, '.service', 'state.db'));
    await db.close();
    expect((await runCli(['store', 'backup', path.join(dir, 'b.db'), '-d', dir])).code).toBe(0);
    const again = await runCli(['store', 'restore', path.join(dir, 'b.db'), '-d', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('add --force to replace it');
    expect((await runCli(['store', 'restore', path.join(dir, 'b.db'), '-d', dir, '--force', '--json'])).stdout).toContain('"previous"');
  });
});
