import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { advertisedUrl, FLEET_ENTRY_FORMAT, parseFleetEntry, type FleetEntry } from '../../../src/core/fleet/entry.js';
import { fleetPanelRows, joinFleet, mergeFleetEntries, peerAssistants } from '../../../src/core/fleet/membership.js';
import { isPidAlive } from '../../../src/core/fleet/process-alive.js';
import { createFleetDirectory, resolveFleetDir } from '../../../src/core/fleet/fleet-directory.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { createTestAssistant } from '../../helpers/assistant.js';
import { testdir } from '../../helpers/testdir.js';

const entry = (over: Partial<FleetEntry> = {}): FleetEntry => ({
  format: FLEET_ENTRY_FORMAT,
  name: 'alpha',
  role: 'Billing',
  engine: 'engine_b',
  host: '127.0.0.1',
  port: 3001,
  url: 'http://127.0.0.1:3001',
  pid: 1001,
  startedAt: '2025-01-01T00:00:00.000Z',
  version: '0.1.0',
  dir: '/srv/alpha',
  ...over,
});

describe('fleet registry', () => {
  it('defaults to ~/.service/fleet and SERVICE_FLEET_DIR overrides it', () => {
    expect(resolveFleetDir({}, '/home/me')).toBe('/home/me/.service/fleet');
    expect(resolveFleetDir({ SERVICE_FLEET_DIR: '/tmp/f' }, '/home/me')).toBe('/tmp/f');
    expect(resolveFleetDir({ SERVICE_FLEET_DIR: '  ' }, '/home/me')).toBe('/home/me/.service/fleet');
  });

  it('writes one private file per gateway, lists live ones oldest first, removes them on leave', () => {
    const dir = path.join(testdir(), 'fleet');
    const alive = new Set([1001, 1002]);
    const registry = createFleetDirectory({ dir, isAlive: (pid) => alive.has(pid) });
    expect(registry.list()).toEqual([]); // no directory yet
    const b = registry.register(entry({ name: 'beta', pid: 1002, port: 3002, url: 'http://127.0.0.1:3002', startedAt: '2025-01-02T00:00:00.000Z' }));
    const a = registry.register(entry());
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(a.file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir).sort()).toEqual(['gateway-1001-3001.json', 'gateway-1002-3002.json']); // no temp files left behind
    expect(registry.list().map((e) => e.name)).toEqual(['alpha', 'beta']);
    expect(JSON.parse(fs.readFileSync(a.file, 'utf8'))).toEqual(entry());

    a.update(entry({ role: 'Refunds' }));
    expect(registry.list()[0]?.role).toBe('Refunds');
    a.remove();
    a.remove();
    a.update(entry()); // after leaving, an update never brings the entry back
    expect(registry.list().map((e) => e.name)).toEqual(['beta']);
    b.remove();
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('ignores and deletes entries of dead processes; ignores files that are not entries', () => {
    const dir = testdir();
    const registry = createFleetDirectory({ dir, isAlive: (pid) => pid !== 2002 });
    registry.register(entry());
    const dead = registry.register(entry({ name: 'ghost', pid: 2002, port: 4000, url: 'http://127.0.0.1:4000' }));
    fs.writeFileSync(path.join(dir, 'notes.json'), '{"hello":1}');
    fs.writeFileSync(path.join(dir, 'broken.json'), '{"name": "half');
    fs.writeFileSync(path.join(dir, '.gateway-9-9.json.123.abcd.tmp'), 'partial');
    fs.writeFileSync(path.join(dir, 'evil.json'), JSON.stringify(entry({ name: 'evil', pid: 3003, url: 'javascript:alert(1)' })));
    expect(registry.list().map((e) => e.name)).toEqual(['alpha']);
    expect(fs.existsSync(dead.file)).toBe(false);
    // Files we cannot read as entries are not ours to delete.
    expect(fs.readdirSync(dir).sort()).toEqual(['.gateway-9-9.json.123.abcd.tmp', 'broken.json', 'evil.json', 'gateway-1001-3001.json', 'notes.json']);
  });

  it('reads entries of a newer format with extra fields, and drops a trailing slash of the URL', () => {
    const parsed = parseFleetEntry(JSON.stringify({ ...entry({ url: 'http://127.0.0.1:3001/' }), format: 2, tags: ['x'] }));
    expect(parsed).toMatchObject({ name: 'alpha', format: 2, url: 'http://127.0.0.1:3001' });
    expect(parsed).not.toHaveProperty('tags');
    expect(parseFleetEntry(JSON.stringify({ ...entry(), pid: -1 }))).toBeUndefined();
  });

  it('with a settled folder (entries read once, then reused): changes, new gateways and deaths still show at once', () => {
    // The folder's change time is judged by this clock: an hour on, every stamp is settled, so
    // list() reuses what it parsed until the folder changes.
    const dir = path.join(testdir(), 'fleet');
    const alive = new Set([1001, 1002, 1003]);
    const registry = createFleetDirectory({ dir, isAlive: (pid) => alive.has(pid), now: () => Date.now() + 3_600_000 });
    const a = registry.register(entry());
    registry.register(entry({ name: 'beta', pid: 1002, port: 3002, url: 'http://127.0.0.1:3002', startedAt: '2025-01-02T00:00:00.000Z' }));
    expect(registry.list().map((e) => e.name)).toEqual(['alpha', 'beta']);
    expect(registry.list().map((e) => e.name)).toEqual(['alpha', 'beta']);

    a.update(entry({ role: 'Refunds' })); // atomic rewrite: the folder changes
    expect(registry.list()[0]?.role).toBe('Refunds');
    const other = createFleetDirectory({ dir }); // another gateway on this machine
    other.register(entry({ name: 'gamma', pid: 1003, port: 3003, url: 'http://127.0.0.1:3003', startedAt: '2025-01-03T00:00:00.000Z' }));
    expect(registry.list().map((e) => e.name)).toEqual(['alpha', 'beta', 'gamma']);

    alive.delete(1002); // killed: no file changed, yet it is gone from the next list, and its file with it
    expect(registry.list().map((e) => e.name)).toEqual(['alpha', 'gamma']);
    expect(fs.readdirSync(dir).sort()).toEqual(['gateway-1001-3001.json', 'gateway-1003-3003.json']);
    expect(registry.list().map((e) => e.name)).toEqual(['alpha', 'gamma']);
  });

  it('tells live processes from dead ones, zombies included', () => {
    expect(isPidAlive(process.pid)).toBe(true);
    const done = spawnSync(process.execPath, ['-e', '']);
    expect(isPidAlive(done.pid ?? 0)).toBe(false);
    expect(isPidAlive(0)).toBe(false);
  });

  it('advertises a wildcard bind on loopback', () => {
    expect(advertisedUrl('127.0.0.1', 80)).toBe('http://127.0.0.1:80');
    expect(advertisedUrl('0.0.0.0', 3000)).toBe('http://127.0.0.1:3000');
    expect(advertisedUrl('::', 3000)).toBe('http://[::1]:3000');
    expect(advertisedUrl('::1', 3000)).toBe('http://[::1]:3000');
    // For peers on other machines (the database fleet), a wildcard bind is advertised by host name.
    expect(advertisedUrl('0.0.0.0', 3000, 'build-1')).toBe('http://build-1:3000');
    expect(advertisedUrl('::', 3000, 'build-1')).toBe('http://build-1:3000');
    expect(advertisedUrl('127.0.0.1', 3000, 'build-1')).toBe('http://127.0.0.1:3000');
  });

  it('peers are every entry but this process; the panel marks this gateway and links each dashboard', () => {
    const entries = [entry(), entry({ name: 'self', pid: 7, role: undefined })];
    const self = { pid: 7, hostname: 'h1' };
    expect(peerAssistants(entries, self)).toEqual([{ name: 'alpha', role: 'Billing', url: 'http://127.0.0.1:3001', host: 'h1' }]);
    expect(fleetPanelRows(entries, self)).toEqual([
      expect.objectContaining({ name: 'alpha', self: false, hostname: 'h1', dashboardUrl: 'http://127.0.0.1:3001/' }),
      expect.objectContaining({ name: 'self', self: true }),
    ]);
  });

  it('a process on another host with this pid is a peer, not this gateway', () => {
    const entries = [entry({ name: 'self', pid: 7, hostname: 'h1' }), entry({ name: 'remote', pid: 7, hostname: 'h2', url: 'http://10.0.0.2:3001' })];
    const self = { pid: 7, hostname: 'h1' };
    expect(peerAssistants(entries, self)).toEqual([{ name: 'remote', role: 'Billing', url: 'http://10.0.0.2:3001', host: 'h2' }]);
    expect(fleetPanelRows(entries, self).map((r) => [r.name, r.hostname, r.self])).toEqual([
      ['self', 'h1', true],
      ['remote', 'h2', false],
    ]);
  });
});

describe('mergeFleetEntries', () => {
  const at = (n: number) => `2025-01-0${n}T00:00:00.000Z`;
  it("lists the folder's entries and the database's rows once each, oldest first, each with its host", () => {
    const local = [entry({ name: 'here', pid: 10, port: 3001, startedAt: at(2) })];
    const shared = [
      entry({ name: 'here', pid: 10, port: 3001, hostname: 'h1', url: 'http://h1:3001', startedAt: at(2) }), // the same gateway
      entry({ name: 'restarted', pid: 9, port: 3001, hostname: 'h1', startedAt: at(1) }), // same host and URL: its old row
      entry({ name: 'other-folder', pid: 11, port: 3002, hostname: 'h1', url: 'http://127.0.0.1:3002', startedAt: at(3) }),
      entry({ name: 'remote', pid: 10, port: 3001, hostname: 'h2', startedAt: at(1) }), // same pid, port and URL on another host
    ];
    expect(mergeFleetEntries(local, shared, 'h1').map((e) => [e.name, e.hostname, e.pid])).toEqual([
      ['remote', 'h2', 10],
      ['here', 'h1', 10],
      ['other-folder', 'h1', 11],
    ]);
    expect(mergeFleetEntries(local, [], 'h1')).toEqual([{ ...local[0], hostname: 'h1' }]);
    expect(mergeFleetEntries([], shared.slice(3), 'h1')).toEqual(shared.slice(3));
  });

  it('never lists one gateway twice and never loses one (property)', () => {
    const key = (e: FleetEntry) => `${e.hostname}/${e.pid}/${e.port}`;
    const gw = fc.record({ pid: fc.integer({ min: 1, max: 4 }), port: fc.integer({ min: 1, max: 3 }), host: fc.constantFrom('h1', 'h2') });
    fc.assert(
      fc.property(fc.uniqueArray(gw, { selector: (g) => `${g.host}/${g.pid}/${g.port}` }), fc.func(fc.boolean()), (gws, inFolder) => {
        // URLs unique per gateway here, so only host + pid + port decide.
        const rows = gws.map((g) => entry({ pid: g.pid, port: g.port, hostname: g.host, url: `http://${g.host}-${g.pid}:${g.port}` }));
        const local = rows.filter((r) => r.hostname === 'h1' && inFolder(key(r))).map(({ hostname: _, ...r }) => r);
        const merged = mergeFleetEntries(local, rows, 'h1');
        expect(merged.map(key).sort()).toEqual(rows.map(key).sort());
      }),
    );
  });
});

describe('joinFleet', () => {
  it('registers with the bound port, follows name and role changes in service.yaml, leaves cleanly', () => {
    const t = createTestAssistant({ yaml: 'persona:\n  role: Billing\n' });
    const registry = createFleetDirectory({ dir: testdir() });
    const m = joinFleet({
      registry,
      config: t.config,
      host: '0.0.0.0',
      port: 43210,
      dir: t.dir,
      version: '9.9.9',
      log: createSilentLogger(),
      now: () => Date.UTC(2025, 0, 1),
      hostname: 'h1',
    });
    expect(registry.list()).toEqual([
      {
        format: 1,
        name: 'tester',
        role: 'Billing',
        engine: 'engine_b',
        host: '0.0.0.0',
        port: 43210,
        url: 'http://127.0.0.1:43210',
        pid: process.pid,
        startedAt: '2025-01-01T00:00:00.000Z',
        version: '9.9.9',
        dir: t.dir,
        hostname: 'h1',
      },
    ]);
    t.config.edit((doc) => doc.setIn(['persona', 'role'], 'Refunds'));
    expect(registry.list()[0]?.role).toBe('Refunds');
    m.leave();
    expect(registry.list()).toEqual([]);
    t.config.edit((doc) => doc.setIn(['name'], 'renamed'));
    expect(registry.list()).toEqual([]); // no longer following the config
    t.close();
  });

  it('a fleet directory that cannot be written costs peer awareness, not the gateway', () => {
    const t = createTestAssistant();
    const blocker = path.join(testdir(), 'file');
    fs.writeFileSync(blocker, '');
    const warnings: string[] = [];
    const log = { ...createSilentLogger(), warn: (m: string) => void warnings.push(m) };
    const m = joinFleet({
      registry: createFleetDirectory({ dir: path.join(blocker, 'fleet') }),
      config: t.config,
      host: '127.0.0.1',
      port: 1,
      dir: t.dir,
      version: '1',
      log,
      hostname: 'h1',
    });
    expect(m.entry).toBeUndefined();
    expect(warnings.join('\n')).toContain('peers on this machine will not see this gateway');
    m.leave();
    t.close();
  });
});
