import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/**
 * A throwaway PostgreSQL cluster for tests and `bench/store.mjs` (plain JavaScript so both use this
 * one; types in pg-cluster.d.mts): initdb in a temporary folder, the server on 127.0.0.1
 * at a free port with its unix socket in that folder, trust authentication, fsync off. Started
 * once per test file (`beforeAll`) and stopped and removed after it (`afterAll`, and an exit hook
 * in case the worker ends before that). PostgreSQL refuses to run as root, so as root (here and in
 * CI) the cluster runs as the unprivileged `postgres` user Debian's package creates.
 *
 * The binaries come from PG_BIN, else the newest /usr/lib/postgresql/<version>/bin (Debian keeps
 * them off PATH), else PATH. Without them the tests fail and say what to install: a skipped store
 * suite would look green while testing nothing.
 */
const STARTED = new Set();
process.once('exit', () => {
  for (const stop of STARTED) stop();
});

export function findPgBin(env = process.env) {
  const has = (dir) => fs.existsSync(path.join(dir, 'initdb')) && fs.existsSync(path.join(dir, 'pg_ctl'));
  if (env.PG_BIN && has(env.PG_BIN)) return env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => has(path.join(root, v, 'bin')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return path.join(root, versions[0], 'bin');
  for (const dir of (env.PATH ?? '').split(path.delimiter)) if (dir && has(dir)) return dir;
  throw new Error(
    'PostgreSQL server binaries (initdb, pg_ctl) not found in PG_BIN, /usr/lib/postgresql/<version>/bin or PATH: ' +
      'install them (`apt-get install postgresql`, as .ci/run does) to run the PostgreSQL store tests',
  );
}

export async function startPgCluster() {
  const bin = findPgBin();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-pg-'));
  const data = path.join(root, 'data');
  const asRoot = process.getuid?.() === 0;
  const user = asRoot ? readUser('postgres') : undefined;
  if (asRoot && !user)
    throw new Error("running as root, and there is no `postgres` user to run the throwaway PostgreSQL cluster as (install Debian's postgresql package)");
  if (user) fs.chownSync(root, user.uid, user.gid);
  const run = (cmd, args) => {
    const argv = user ? ['runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args]] : [path.join(bin, cmd), args];
    return execFileSync(argv[0], argv[1], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
  };
  const port = await findFreePort();
  let started = false;
  const stop = () => {
    if (started) {
      started = false;
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already gone
      }
    }
    STARTED.delete(stop);
    fs.rmSync(root, { recursive: true, force: true });
  };
  STARTED.add(stop);
  try {
    run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync']);
    const opts = `-c listen_addresses=127.0.0.1 -p ${port} -k ${root} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
    started = true;
    run('pg_ctl', ['-D', data, '-l', path.join(root, 'server.log'), '-o', opts, '-w', '-t', '120', 'start']);
  } catch (err) {
    const log = readLog(path.join(root, 'server.log'));
    stop();
    const e = err;
    throw new Error(`cannot start the throwaway PostgreSQL cluster: ${e.stderr?.toString().trim() || e.message}${log ? `\n${log}` : ''}`);
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let n = 0;
  return {
    url,
    port,
    async createDatabase() {
      const name = `t${process.pid}_${++n}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    stop,
  };
}

// --- internal ---

function readUser(name) {
  const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) return undefined;
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

function readLog(file) {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-10).join('\n');
  } catch {
    return '';
  }
}

function findFreePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
