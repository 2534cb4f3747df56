#!/usr/bin/env node
// Takeover benchmark: one assistant on two "hosts" (two copies of its directory) sharing a
// PostgreSQL store. Prints numbers, asserts nothing. Runs against the BUILT code:
// `node bench/takeover.mjs [--rounds 3] [--failover 15]`.
//
// Each round starts two gateways, waits for one to lead and the other to follow, then ends the
// leader, alternately with kill -9 (a host that dies: the follower must wait for the lease to run
// out) and SIGTERM (a clean stop hands the lease over at once), and times from the signal to the
// follower's "leader of the assistant now" line. No channels are configured: the time is the
// lease's, not a platform's connect. A throwaway cluster is started as the tests do; without
// PostgreSQL's binaries it says so and exits 0.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { findPgBin, startPgCluster } from '../test/fakes/pg-cluster.mjs';
import { spawnGateway } from './gateway-process.mjs';
import { median } from './stats.mjs';

const { values: opts } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, failover: { type: 'string', default: '15' } } });
const ROUNDS = Number(opts.rounds);
const FAILOVER = Number(opts.failover);
const TOKEN = 'bench-token';

let pgBin;
try {
  pgBin = findPgBin();
} catch {
  console.log('takeover bench: PostgreSQL server binaries (initdb, pg_ctl) not found; skipped (apt-get install postgresql)');
  process.exit(0);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'service-bench-takeover-'));
const cluster = await startPgCluster();
process.on('exit', () => {
  cluster.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));

const leads = (gw) => /leader of the assistant now/.test(gw.output());
const follows = (gw) => /following: /.test(gw.output());

async function waitUntil(cond, what, timeoutMs = 120_000) {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now();
}

async function round(i, signal) {
  const url = await cluster.createDatabase();
  const start = (host) => {
    const dir = path.join(tmp, `r${i}-${host}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'service.yaml'), `name: takeover-bench\nengine: engine_b\nstore:\n  url: ${url}\n  failoverSeconds: ${FAILOVER}\n`);
    const env = { ...process.env, NO_COLOR: '1', SERVICE_FLEET_DIR: path.join(tmp, `fleet-${i}-${host}`) };
    delete env.SERVICE_STORE_URL;
    return spawnGateway({ dir, env, token: TOKEN });
  };
  const a = await start('a');
  await waitUntil(() => leads(a), 'the first gateway to lead');
  const b = await start('b');
  await waitUntil(() => follows(b), 'the second gateway to follow');
  const t0 = performance.now();
  a.child.kill(signal);
  const t1 = await waitUntil(() => leads(b), 'the follower to take over');
  await a.exited;
  await b.stop();
  return t1 - t0;
}

console.log(`takeover bench: node ${process.version}, ${os.cpus().length} CPUs, PostgreSQL from ${pgBin}, failoverSeconds ${FAILOVER}`);
console.log(`${ROUNDS} rounds per way of ending the leader; time from the signal to the follower leading`);
const times = { SIGKILL: [], SIGTERM: [] };
for (let i = 0; i < ROUNDS; i++) {
  for (const signal of ['SIGKILL', 'SIGTERM']) {
    const ms = await round(`${i}-${signal}`, signal);
    times[signal].push(ms);
    console.log(`  round ${i + 1} ${signal === 'SIGKILL' ? 'kill -9' : 'SIGTERM'}: ${ms.toFixed(0)} ms`);
  }
}
console.log('\nsummary                              min   median      max');
for (const [label, key] of [
  ['kill -9 of the leader (ms)', 'SIGKILL'],
  ['clean stop of the leader (ms)', 'SIGTERM'],
]) {
  const v = times[key];
  console.log(
    `  ${label.padEnd(32)} ${Math.min(...v)
      .toFixed(0)
      .padStart(6)} ${median(v).toFixed(0).padStart(8)} ${Math.max(...v)
      .toFixed(0)
      .padStart(8)}`,
  );
}
console.log(`  (the lease lasts ${Math.round((FAILOVER * 2000) / 3)} ms; a follower tries every ${Math.min(1000, Math.round((FAILOVER * 2000) / 3 / 4))} ms)`);
