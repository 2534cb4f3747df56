import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../../src/core/store/sqlite-store.js';
import { runCommand } from '../../helpers/cli.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/** `service access list|approve|deny|revoke` for real, without a gateway (the state database only). */
describe('service access (in-process)', () => {
  const setup = async () => {
    const dir = testdir({
      'service.yaml': minimalYaml('engine_b', 'access:\n  allow: ["chat:alice"]\n  chats: ["chat:g1"]\n  admins: ["chat:alice"]\n  dailyBudgetUsd: 3\n'),
    });
    const store = createSqliteStore(path.join(dir, '.service', 'state.db'));
    const at = Date.now() - 5 * 60_000;
    await store.openPairing({ channel: 'chat', kind: 'sender', id: 'bob', label: 'Bob', createdAt: at }, { code: 'BBBBBBBB', ttlMs: 3_600_000, maxPending: 3 });
    await store.openPairing(
      { channel: 'chat', kind: 'chat', id: 'g2', label: 'asked by Carol', createdAt: at },
      { code: 'GGGGGGGG', ttlMs: 3_600_000, maxPending: 3 },
    );
    await store.close();
    return dir;
  };

  it('list shows the policies, allowed senders and chats, admins and the pending codes with their age', async () => {
    const dir = await setup();
    const res = await runCommand(['access', 'list', '-d', dir]);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toContain('Direct messages: pairing    Groups: pairing');
    expect(res.stdout).toContain('Rate limit: 20 messages per 60 s per sender    Daily budget: $3.00 a day (spent today: $0.00)');
    expect(res.stdout).toMatch(/Allowed senders\n {2}ID\s+FROM\s+NAME\s+APPROVED\n {2}chat:alice\s+service\.yaml\n/);
    expect(res.stdout).toMatch(/Allowed group chats\n.*\n {2}chat:g1\s+service\.yaml\n/);
    expect(res.stdout).toMatch(/Admins\n {2}chat:alice\n/);
    expect(res.stdout).toMatch(/ {2}BBBBBBBB\s+sender chat:bob\s+Bob\s+5 min\n/);
    expect(res.stdout).toMatch(/ {2}GGGGGGGG\s+group chat:g2\s+asked by Carol\s+5 min\n/);
    expect(res.stdout).toContain('Approve one with: ');

    const json = JSON.parse((await runCommand(['access', 'list', '--json', '-d', dir])).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ dm: 'pairing', admins: ['chat:alice'], pending: [{ code: 'BBBBBBBB' }, { code: 'GGGGGGGG' }], todayCostUsd: 0 });
  });

  it('approve, deny and revoke; unknown codes and configured entries are errors that say what to do', async () => {
    const dir = await setup();
    expect(await runCommand(['access', 'deny', 'GGGGGGGG', '-d', dir])).toMatchObject({ code: 0, stdout: 'Denied the pairing code GGGGGGGG of chat:g2.\n' });
    expect(await runCommand(['access', 'approve', 'bbbb-bbbb', '-d', dir])).toMatchObject({
      code: 0,
      stdout: 'Approved chat:bob (Bob): they can use the assistant now.\n',
    });
    expect((await runCommand(['access', 'list', '-d', dir])).stdout).toMatch(/ {2}chat:bob\s+pairing\s+Bob\s+\d{4}-\d\d-\d\d \d\d:\d\d by cli\n/);

    const unknown = await runCommand(['access', 'approve', 'GGGGGGGG', '-d', dir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('error: No pending pairing has the code GGGGGGGG (codes expire after an hour).');
    expect(unknown.stderr).toContain('access list` shows what there is');

    expect(await runCommand(['access', 'revoke', 'chat:bob', '-d', dir])).toMatchObject({ code: 0, stdout: expect.stringContaining('Revoked chat:bob') });
    const configured = await runCommand(['access', 'revoke', 'chat:alice', '-d', dir]);
    expect(configured.code).toBe(1);
    expect(configured.stderr).toContain('chat:alice is listed in service.yaml (access.allow, access.admins); remove it there.');
  });

  it("list and approve print a stranger's display name escaped: no terminal escapes, no forged lines (issue 29)", async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b') });
    const store = createSqliteStore(path.join(dir, '.service', 'state.db'));
    const evil = 'Eve\u001b]0;owned\u0007\u001b[2J\nAllowed senders\n  chat:root  service.yaml\u202e\u0085';
    await store.openPairing(
      { channel: 'chat', kind: 'sender', id: 'eve\u001b[31m', label: evil, createdAt: Date.now() },
      { code: 'EEEEEEEE', ttlMs: 3_600_000, maxPending: 3 },
    );
    await store.close();
    const listing = await runCommand(['access', 'list', '-d', dir]);
    expect(listing.code).toBe(0);
    expect(listing.stdout).not.toMatch(/[\u001b\u0007\u0085\u202e]/);
    expect(listing.stdout).toContain('Eve\\x1b]0;owned\\x07\\x1b[2J\\nAllowed senders\\n  chat:root  service.yaml\\u202e\\x85');
    expect(listing.stdout).toContain('sender chat:eve\\x1b[31m');
    expect(listing.stdout.match(/^Allowed senders$/gm)).toHaveLength(1);
    const json = await runCommand(['access', 'list', '--json', '-d', dir]);
    expect(json.stdout).not.toMatch(/[\u001b\u0007\u0085\u202e]/);
    expect((JSON.parse(json.stdout) as { pending: Array<{ label: string }> }).pending[0]?.label).toBe(evil);
    const approved = await runCommand(['access', 'approve', 'EEEEEEEE', '-d', dir]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).not.toMatch(/[\u001b\u0007\u0085\u202e]/);
    expect(approved.stdout.trimEnd().split('\n')).toHaveLength(1);
  });

  it('needs an assistant directory, and creates nothing elsewhere', async () => {
    const dir = testdir({});
    const res = await runCommand(['access', 'list', '-d', dir]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`${path.join(dir, 'service.yaml')} does not exist`);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
