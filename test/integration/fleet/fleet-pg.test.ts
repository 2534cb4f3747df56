import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { FLEET_ENTRY_FORMAT } from '../../../src/core/fleet/entry.js';
import { createSharedFleet } from '../../../src/core/fleet/shared-fleet.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { createPgFleetTable } from '../../../src/core/fleet/pg-fleet-table.js';
import { runCommand } from '../../helpers/cli.js';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { startPgCluster, usePgCluster } from '../../helpers/pg-cluster.js';
import { createStandIn, type StandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { poll, until } from '../../helpers/wait.js';

/**
 * The fleet across hosts: real `service gateway` processes of different assistants whose store is
 * one PostgreSQL database, each with a fleet folder of its own (so the folder cannot introduce
 * them), find each other through the database: in `service fleet ls`, the dashboard's fleet data
 * and the peer list of the assistant context. A SIGKILLed gateway drops out once its heartbeat is
 * missed; a clean stop deletes its row before the process exits; a fleet the gateway cannot
 * register in never stops it.
 */
const pgCluster = usePgCluster();

const host = os.hostname();
// Stale after 3 × 1 s: short for the test, long enough that a busy machine never lets a live gateway's row expire.
const HEARTBEAT = '1000';

const assistant = (name: string, role: string, token: string, storeUrl: string) =>
  testdir({ 'service.yaml': `name: ${name}\nengine: engine_b\npersona:\n  role: ${role}\ngateway:\n  token: ${token}\nstore:\n  url: ${storeUrl}\n` });

interface Listed {
  dir: string;
  database?: string;
  databaseError?: string;
  gateways: Array<Record<string, unknown>>;
}

const fleetLs = async (args: string[], fleetDir: string): Promise<Listed> => {
  const r = await runCommand(['fleet', 'ls', '--json', ...args], { env: { SERVICE_FLEET_DIR: fleetDir, SERVICE_STORE_URL: '' } });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Listed;
};

const fleetPanel = async (g: GatewayProcess, token: string) =>
  ((await (await fetch(`${g.url}/api/fleet`, { headers: { authorization: `Bearer ${token}` } })).json()) as { peers: Array<Record<string, unknown>> }).peers;

const chat = async (g: GatewayProcess, token: string, message: string) => {
  const res = await fetch(`${g.url}/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message }),
  });
  expect(await res.text()).toContain('"status":"completed"');
};

const contextOf = (dir: string) => fs.readFileSync(path.join(dir, 'CLAUDE.md'), 'utf8');

const withClient = async <T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> => {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
};

/** The fleet rows of a pid (none while the first gateway is still creating the table). */
const rowsOf = (url: string, pid: number | undefined) =>
  withClient(url, async (c) => {
    try {
      return (await c.query('SELECT * FROM service_fleet.gateways WHERE pid = $1', [pid])).rows as Array<Record<string, unknown>>;
    } catch (err) {
      if ((err as { code?: string }).code === '42P01') return [];
      throw err;
    }
  });

/** A gateway on the stand-in engine with the short heartbeat, registering in `fleetDir`; nothing taken from the caller's environment. */
const gatewayEnv = (standIn: StandIn, fleetDir: string): NodeJS.ProcessEnv => ({
  ...standIn.env,
  SERVICE_TOKEN: '',
  SERVICE_STORE_URL: '',
  SERVICE_FLEET_HEARTBEAT_MS: HEARTBEAT,
  SERVICE_FLEET_DIR: fleetDir,
});

describe('the fleet in a PostgreSQL store', () => {
  it('two assistants with separate fleet folders see each other through the database; SIGKILL drops out when stale, SIGTERM at once', async () => {
    const url = await pgCluster.database();
    const standIn = createStandIn();
    const alphaFleet = testdir({}, 'service-fleet-');
    const betaFleet = testdir({}, 'service-fleet-');
    const alphaDir = assistant('alpha', 'Answers billing questions', 'tok-alpha-1234567', url);
    const betaDir = assistant('beta', 'Runs the servers', 'tok-beta-12345678', url);
    const alpha = await startGatewayProcess(alphaDir, [], gatewayEnv(standIn, alphaFleet));
    const beta = await startGatewayProcess(betaDir, [], gatewayEnv(standIn, betaFleet));
    let gamma: GatewayProcess | undefined;
    try {
      // Alpha's folder alone knows alpha only.
      expect((await fleetLs([], alphaFleet)).gateways.map((g) => g.name)).toEqual(['alpha']);

      // `fleet ls -d <assistant>` finds the database as the gateway does (store.url) and lists both once.
      const listed = await poll(async () => {
        const l = await fleetLs(['-d', alphaDir], alphaFleet);
        return l.gateways.length === 2 && l;
      });
      expect(listed.database).toBe(url);
      expect(listed.gateways).toEqual([
        expect.objectContaining({ name: 'alpha', url: alpha.url, pid: alpha.child.pid, hostname: host, dir: alphaDir, healthy: true }),
        {
          format: FLEET_ENTRY_FORMAT,
          name: 'beta',
          role: 'Runs the servers',
          engine: 'engine_b',
          host: '127.0.0.1',
          port: Number(new URL(beta.url).port),
          url: beta.url,
          pid: beta.child.pid,
          startedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          version: expect.any(String),
          dir: betaDir,
          hostname: host,
          healthy: true,
        },
      ]);
      // --store and SERVICE_STORE_URL name the database without an assistant directory, from an empty folder.
      const elsewhere = testdir({}, 'service-fleet-');
      expect((await fleetLs(['--store', url], elsewhere)).gateways.map((g) => g.name)).toEqual(['alpha', 'beta']);
      const viaEnv = await runCommand(['fleet', 'ls'], { env: { SERVICE_FLEET_DIR: elsewhere, SERVICE_STORE_URL: url } });
      expect(viaEnv.stdout).toMatch(/^NAME\s+ROLE\s+ENGINE\s+HOST\s+URL\s+PID\s+UP\s+HEALTH$/m);
      expect(viaEnv.stdout).toMatch(new RegExp(`^beta\\s+Runs the servers\\s+engine_b\\s+${host}\\s+${beta.url}\\s+${beta.child.pid}\\s+\\S+\\s+ok \\(`, 'm'));

      // The row's heartbeat is the server's time, and it expires after 3 beats.
      const [row] = await rowsOf(url, beta.child.pid);
      expect(row).toMatchObject({ name: 'beta', hostname: host, heartbeat_ms: 1000 });
      expect((row?.expires_at as Date).getTime() - (row?.heartbeat_at as Date).getTime()).toBe(3000);

      // The dashboard's fleet data: this gateway marked, the peer from the database probed and linked, with its host.
      const panel = await poll(async () => {
        const p = await fleetPanel(alpha, 'tok-alpha-1234567');
        return p.length === 2 && p;
      });
      expect(panel).toEqual([
        expect.objectContaining({ name: 'alpha', self: true, hostname: host }),
        expect.objectContaining({ name: 'beta', role: 'Runs the servers', self: false, healthy: true, hostname: host, dashboardUrl: `${beta.url}/` }),
      ]);

      // The peer list in each assistant's context (the cache the dashboard showed is the one the turn reads).
      await chat(alpha, 'tok-alpha-1234567', 'hello alpha');
      expect(contextOf(alphaDir)).toContain(`- beta (Runs the servers): ${beta.url} on ${host}\n`);
      expect(contextOf(alphaDir)).not.toContain('- alpha (');
      await poll(async () => (await fleetPanel(beta, 'tok-beta-12345678')).length === 2);
      await chat(beta, 'tok-beta-12345678', 'hello beta');
      expect(contextOf(betaDir)).toContain(`- alpha (Answers billing questions): ${alpha.url} on ${host}\n`);

      // A role changed in service.yaml reaches the database, and so alpha's panel.
      fs.writeFileSync(
        path.join(betaDir, 'service.yaml'),
        fs.readFileSync(path.join(betaDir, 'service.yaml'), 'utf8').replace('Runs the servers', 'Keeps the lights on'),
      );
      await poll(async () => (await fleetPanel(alpha, 'tok-alpha-1234567')).some((p) => p.role === 'Keeps the lights on'));

      // SIGKILL: beta cannot delete its row; it drops out once stale, and alpha's heartbeat deletes it.
      expect(await beta.stop('SIGKILL')).toBeNull();
      await poll(async () => (await fleetLs(['-d', alphaDir], alphaFleet)).gateways.length === 1);
      expect((await fleetLs(['-d', alphaDir], alphaFleet)).gateways.map((g) => g.name)).toEqual(['alpha']);
      await poll(async () => (await fleetPanel(alpha, 'tok-alpha-1234567')).length === 1);
      await until(async () => (await rowsOf(url, beta.child.pid)).length === 0);
      await chat(alpha, 'tok-alpha-1234567', 'anyone there?');
      expect(contextOf(alphaDir)).not.toContain('Peer assistants');

      // SIGTERM: the row is gone by the time the process has exited.
      const gammaDir = assistant('gamma', 'Writes reports', 'tok-gamma-1234567', url);
      gamma = await startGatewayProcess(gammaDir, [], gatewayEnv(standIn, testdir({}, 'service-fleet-')));
      await until(async () => (await rowsOf(url, gamma?.child.pid)).length === 1);
      expect(await gamma.stop('SIGTERM')).toBe(0);
      expect(await rowsOf(url, gamma.child.pid)).toEqual([]);
    } finally {
      await beta.stop('SIGKILL');
      await gamma?.stop('SIGKILL');
      expect(await alpha.stop('SIGTERM')).toBe(0);
    }
    expect(await withClient(url, async (c) => (await c.query('SELECT * FROM service_fleet.gateways')).rows)).toEqual([]);
  });

  it('a gateway whose database refuses the fleet table still starts, serves and is listed from its folder', async () => {
    const admin = await pgCluster.database();
    const db = new URL(admin).pathname.slice(1);
    // The role may create its own schema, but the shared one belongs to someone else.
    await withClient(admin, async (c) => {
      await c.query(`CREATE ROLE limited_${db} LOGIN`);
      await c.query(`GRANT CREATE ON DATABASE ${db} TO limited_${db}`);
      await c.query('CREATE SCHEMA service_fleet');
    });
    const url = admin.replace('postgres@', `limited_${db}@`);
    const standIn = createStandIn();
    const fleetDir = testdir({}, 'service-fleet-');
    const dir = assistant('lonely', 'Works alone', 'tok-lonely-123456', url);
    const g = await startGatewayProcess(dir, [], gatewayEnv(standIn, fleetDir));
    try {
      await until(() => g.output().includes('cannot register in the fleet of'));
      await chat(g, 'tok-lonely-123456', 'still here?');
      const r = await runCommand(['fleet', 'ls', '--json', '-d', dir], { env: { SERVICE_FLEET_DIR: fleetDir, SERVICE_STORE_URL: '' } });
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('cannot read the fleet of');
      const listed = JSON.parse(r.stdout) as Listed;
      expect(listed.databaseError).toEqual(expect.any(String));
      expect(listed.databaseError).not.toContain('cannot use the PostgreSQL store'); // the server's reason, not the store's wording
      expect(listed.gateways).toEqual([expect.objectContaining({ name: 'lonely', url: g.url, hostname: host, healthy: true })]);
    } finally {
      expect(await g.stop('SIGTERM')).toBe(0);
    }
  });
});

describe('a fleet database that cannot be reached', () => {
  it('a gateway whose database goes away keeps serving, is listed from its folder, and stops cleanly', async () => {
    const own = await startPgCluster(); // stopped in the middle: not the file's shared one
    try {
      const url = await own.createDatabase();
      const standIn = createStandIn();
      const fleetDir = testdir({}, 'service-fleet-');
      const dir = assistant('orphan', 'Outlives its database', 'tok-orphan-123456', url);
      const g = await startGatewayProcess(dir, [], gatewayEnv(standIn, fleetDir));
      try {
        await until(async () => (await rowsOf(url, g.child.pid)).length === 1);
        own.stop();
        await until(() => g.output().includes('cannot register in the fleet of'));
        expect((await fetch(`${g.url}/health`)).status).toBe(200);
        const listed = await fleetLs(['-d', dir], fleetDir);
        expect(listed.databaseError).toEqual(expect.any(String));
        expect(listed.gateways).toEqual([expect.objectContaining({ name: 'orphan', url: g.url, healthy: true })]);
      } finally {
        expect(await g.stop('SIGTERM')).toBe(0);
      }
    } finally {
      own.stop();
    }
  });

  it('costs fleet awareness only: registering warns once and lists nothing, leaving resolves; fleet ls lists the folder', async () => {
    const closed = `postgres://postgres@127.0.0.1:${await findClosedPort()}/nowhere`;
    const warnings: string[] = [];
    const log = { ...createSilentLogger(), warn: (m: string) => void warnings.push(m) };
    let opened = 0;
    const shared = createSharedFleet({
      heartbeatMs: 50,
      log,
      openTable: (u) => {
        opened++;
        return createPgFleetTable({ url: u, connectTimeoutMs: 2_000 });
      },
    });
    const reg = shared.register(
      {
        format: FLEET_ENTRY_FORMAT,
        name: 'x',
        engine: 'engine_b',
        host: '127.0.0.1',
        port: 1,
        url: 'http://127.0.0.1:1',
        pid: process.pid,
        startedAt: new Date().toISOString(),
        version: '0',
        dir: '/x',
        hostname: host,
      },
      closed,
    );
    await until(() => opened >= 3, undefined, 'three heartbeats, each on a new pool');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`cannot register in the fleet of ${closed}`);
    expect(shared.entries()).toEqual([]);
    await reg.remove();

    const r = await runCommand(['fleet', 'ls', '--json', '--store', closed], { env: { SERVICE_FLEET_DIR: testdir({}, 'service-fleet-') } });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`cannot read the fleet of ${closed}`);
    expect(JSON.parse(r.stdout)).toMatchObject({ database: closed, databaseError: expect.any(String), gateways: [] });
  });
});

/** A port nothing listens on: bound, then released. */
function findClosedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
