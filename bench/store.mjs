#!/usr/bin/env node
// Store benchmark: the turn overhead of the PostgreSQL store beside the embedded SQLite one.
// Prints numbers, asserts nothing. Runs against the BUILT code: `node bench/store.mjs [--rounds 3] [--turns 40]`.
//
// A throwaway PostgreSQL cluster is started for it (initdb + pg_ctl in a temporary folder, as the
// tests do: 127.0.0.1 on a free port, trust, fsync off, as the `postgres` user when run as root),
// then each round starts `service gateway` twice on the stand-in engine, once per store, and
// runs sequential turns on one key: the median time from sending a turn to the end of its stream,
// and the gateway's own CPU per turn (/proc/<pid>/stat; the engine's processes are not counted).
// The engine (a node process per turn) dominates a turn; the difference between the two columns
// is what the store costs. fsync is off on the throwaway cluster, so a real server's commit
// latency (its disk, its network) comes on top. Without PostgreSQL's binaries it says so and exits 0.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { findPgBin, startPgCluster } from '../test/fakes/pg-cluster.mjs';
import { spawnGateway } from './gateway-process.mjs';
import { median } from './stats.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, turns: { type: 'string', default: '40' } } });
const ROUNDS = Number(opts.rounds);
const TURNS = Number(opts.turns);
const WARMUP = 3;
const TOKEN = 'bench-token';

let pgBin;
try {
  pgBin = findPgBin();
} catch {
  console.log('store bench: PostgreSQL server binaries (initdb, pg_ctl) not found; skipped (apt-get install postgresql)');
  process.exit(0);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'service-bench-store-'));
const binDir = path.join(tmp, 'bin');
for (const d of [binDir, path.join(tmp, 'fleet'), path.join(tmp, 'home')]) fs.mkdirSync(d);
fs.writeFileSync(
  path.join(binDir, 'claude'),
  `#!/bin/sh\nexec "${process.execPath}" "${path.join(ROOT, 'test', 'fakes', 'stand-in-engine.mjs')}" engine_b "$@"\n`,
  {
    mode: 0o755,
  },
);

// --- the throwaway cluster (the tests' own helper) ---

const cluster = await startPgCluster();
process.on('exit', () => {
  cluster.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
const pgUrl = cluster.url;

// --- a gateway on one store ---

async function startGateway(name, storeUrl) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'service.yaml'), `name: ${name}\nengine: engine_b\n`);
  const PATH = [binDir, ...(process.env.PATH ?? '').split(':').filter((p) => p && !p.includes('node_modules'))].join(':');
  const env = { ...process.env, PATH, NO_COLOR: '1', HOME: path.join(tmp, 'home'), SERVICE_FLEET_DIR: path.join(tmp, 'fleet') };
  env.SERVICE_STORE_URL = storeUrl ?? '';
  return spawnGateway({ dir, env, token: TOKEN });
}

function chat(base, message, agent) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(new URL('/chat', base), {
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ ms: performance.now() - t0, ok: res.statusCode === 200 && text.includes('ECHO:') }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ message, sessionKey: 'bench' }));
  });
}

const clk = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
function cpuMs(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / clk;
}

async function measure(name, storeUrl) {
  const gw = await startGateway(name, storeUrl);
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < WARMUP; i++) await chat(gw.url, `warm-up ${i}`, agent);
    const c0 = cpuMs(gw.pid);
    const times = [];
    let failed = 0;
    for (let i = 0; i < TURNS; i++) {
      const r = await chat(gw.url, `turn ${i}`, agent);
      times.push(r.ms);
      if (!r.ok) failed++;
    }
    const cpu = (cpuMs(gw.pid) - c0) / TURNS;
    agent.destroy();
    return { turnMs: median(times), cpu, failed };
  } finally {
    await gw.stop();
  }
}

console.log(
  `store bench: node ${process.version}, ${os.cpus().length} CPUs, PostgreSQL from ${pgBin}, load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(`${ROUNDS} rounds, each a fresh gateway per store, ${TURNS} sequential turns on one key (after ${WARMUP} warm-ups)`);
const rows = { sqlite: [], postgres: [] };
for (let i = 0; i < ROUNDS; i++) {
  // Alternating order, so a load change on a shared machine hits both alike.
  const order = i % 2 ? ['postgres', 'sqlite'] : ['sqlite', 'postgres'];
  for (const store of order) {
    const r = await measure(`bench_${store}_${i}`, store === 'postgres' ? pgUrl : undefined);
    rows[store].push(r);
    console.log(
      `  round ${i + 1} ${store.padEnd(8)}: turn ${r.turnMs.toFixed(1)} ms (median), gateway ${r.cpu.toFixed(2)} ms CPU/turn${r.failed ? `  !! ${r.failed} failed` : ''}`,
    );
  }
}
const med = (store, key) => median(rows[store].map((r) => r[key]));
console.log('\nsummary (median of the rounds)           sqlite   postgres   difference');
for (const [label, key] of [
  ['turn, send to end of stream (ms)', 'turnMs'],
  ['gateway CPU per turn (ms)', 'cpu'],
]) {
  const a = med('sqlite', key);
  const b = med('postgres', key);
  const diff = `${b - a >= 0 ? '+' : ''}${(b - a).toFixed(2)}`;
  console.log(`  ${label.padEnd(38)} ${a.toFixed(2).padStart(7)} ${b.toFixed(2).padStart(10)} ${diff.padStart(12)}`);
}
