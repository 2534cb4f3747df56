#!/usr/bin/env node
// Gateway benchmark: prints numbers, asserts nothing. Runs against the BUILT code (`npm run build`
// first): `node bench/gateway.mjs [--rounds 3] [--turns 50] [--health-seconds 3] [--cold 15]`.
//
// The real `service gateway` runs as a child process, exactly as a user starts it, with the stand-in
// engine (test/fakes/stand-in-engine.mjs behind a wrapper named `claude`, as test/helpers/stand-in.ts
// makes it) first on PATH. Each round starts a fresh gateway and measures, from the outside:
// 1. RSS (VmRSS) 1 s after it first answered /health (idle);
// 2. gateway CPU per chat turn over sequential turns: the gateway PID's own utime+stime from
//    /proc/<pid>/stat, so the engine processes (its children) are not counted;
// 3. GET /health throughput over 8 keep-alive connections, with a lean raw-socket client (node's
//    http client costs as much CPU per request as the gateway, so with it req/s measures the
//    client), and the gateway's CPU per request;
// 4. time to the response headers of a turn queued behind a running one on the same key;
// 5. RSS after load: 50 keys x 4 turns at concurrency 10, then 1 s of quiet.
// Then CLI cold start (`--version`) against a bare `node -e 0`, interleaved samples.
// Each round then measures three floors the same way, steps 1-3 and 5 (bench/floor-gateway.mjs: a
// bare node server that starts the same engine per turn and relays its lines, nothing else; the
// same after loading and using once the chosen packages: commander, yaml, zod, better-sqlite3, h3,
// listhen, execa; and the relay itself built on h3, listhen and execa): what any gateway that
// starts a process per turn pays on node and on those packages, so the rest is ours. The goals
// are printed as the gateway's gaps to the second floor.
// The summary gives minimum / median / maximum over the rounds (over the samples for cold start),
// and each floor's median.
// Linux only (/proc). This process and the gateway share the machine's CPUs: the figures are for
// comparing builds on one machine, run on a quiet one.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { spawnGateway } from './gateway-process.mjs';
import { median } from './stats.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'bin', 'service.js');
const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    turns: { type: 'string', default: '50' },
    'health-seconds': { type: 'string', default: '3' },
    cold: { type: 'string', default: '15' },
  },
});
const ROUNDS = Number(opts.rounds);
const TURNS = Number(opts.turns);
const HEALTH_MS = Number(opts['health-seconds']) * 1000;
const COLD_N = Number(opts.cold);
const WARMUP = 3; // first turns pay for JIT, the SQLite statements' first use, lazy imports
const QUEUED_RUNS = 3;
const TOKEN = 'bench-token';

if (!fs.existsSync(path.join(ROOT, 'dist', 'cli.js'))) {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
if (!fs.existsSync('/proc/self/stat')) {
  console.error('this bench reads /proc: Linux only');
  process.exit(1);
}

const sleep = (t) => new Promise((r) => setTimeout(r, t));

// --- /proc readers ---

let CLK_TCK = 100;
try {
  CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // getconf missing: 100 is what Linux uses on every common architecture
}
/** CPU ms of the process itself (utime+stime, fields 14-15). */
function cpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: split after its closing ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}
const rssMiB = (pid) => Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;

// --- temp directories: assistant, stand-in bin, fleet, HOME and the stand-in's session files ---

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'service-bench-gw-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const binDir = path.join(tmp, 'bin');
for (const d of [binDir, path.join(tmp, 'fleet'), path.join(tmp, 'home')]) fs.mkdirSync(d);
const standIn = path.join(ROOT, 'test', 'fakes', 'stand-in-engine.mjs');
fs.writeFileSync(path.join(binDir, 'claude'), `#!/bin/sh\nexec "${process.execPath}" "${standIn}" engine_b "$@"\n`, { mode: 0o755 });

// --- the gateway process ---

function gatewayEnv() {
  // PATH: the stand-in first, and no node_modules/.bin (where the real `claude` may live).
  const PATH = [binDir, ...(process.env.PATH ?? '').split(':').filter((p) => p && !p.includes('node_modules'))].join(':');
  const env = {
    ...process.env,
    PATH,
    NO_COLOR: '1',
    HOME: path.join(tmp, 'home'),
    SERVICE_FLEET_DIR: path.join(tmp, 'fleet'),
    STANDIN_STATE_DIR: path.join(tmp, 'standin'),
  };
  delete env.SERVICE_TOKEN; // --token wins anyway; keep the environment from looking like it matters
  return env;
}

async function startGateway(round) {
  const dir = path.join(tmp, `assistant-${round}`);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'service.yaml'), 'name: bench\nengine: engine_b\n');
  return spawnGateway({ dir, env: gatewayEnv(), token: TOKEN });
}

/** mode: 'bare', 'libs' (the chosen packages loaded and used once) or 'stack' (the relay itself on h3, listhen and execa). */
const startFloor = (mode) =>
  spawnGateway({ env: gatewayEnv(), argv: [path.join(ROOT, 'bench', 'floor-gateway.mjs'), ...(mode === 'bare' ? [] : [`--${mode}`])] });

// --- HTTP clients ---

/** One request over node:http; times from sending to the response headers and the end. */
function request(base, method, pathname, { body, agent } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const r = { headers: NaN, end: NaN, status: 0, text: '' };
    const req = http.request(new URL(pathname, base), {
      method,
      agent: agent ?? false,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    });
    req.on('response', (res) => {
      r.headers = performance.now() - t0;
      r.status = res.statusCode;
      res.setEncoding('utf8');
      res.on('data', (d) => (r.text += d));
      res.on('end', () => resolve({ ...r, end: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}
const chat = (base, message, sessionKey, agent) => request(base, 'POST', '/chat', { body: { message, sessionKey }, agent });
/** A turn counts when the stand-in's answer came back. */
const answered = (r) => r.status === 200 && r.text.includes('ECHO:');

/**
 * GET /health as fast as `connections` raw keep-alive sockets allow: one request in flight per
 * socket, responses parsed only as far as status line and Content-Length (or chunked end).
 */
async function rawHealth(base, connections, durationMs) {
  const { hostname, port } = new URL(base);
  const deadline = performance.now() + durationMs;
  let ok = 0;
  let bad = 0;
  const loop = () =>
    new Promise((resolve) => {
      const socket = net.connect(Number(port), hostname);
      let buf = '';
      const send = () => (performance.now() < deadline ? socket.write(`GET /health HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`) : socket.end());
      socket.setEncoding('latin1');
      socket.on('connect', send);
      socket.on('data', (d) => {
        buf += d;
        for (;;) {
          const head = buf.indexOf('\r\n\r\n');
          if (head < 0) return;
          const headers = buf.slice(0, head);
          const length = /content-length:\s*(\d+)/i.exec(headers);
          let end;
          if (length) end = head + 4 + Number(length[1]);
          else {
            const chunkedEnd = buf.indexOf('\r\n0\r\n\r\n', head);
            if (chunkedEnd < 0) return;
            end = chunkedEnd + 7;
          }
          if (buf.length < end) return;
          if (headers.startsWith('HTTP/1.1 200')) ok++;
          else bad++;
          buf = buf.slice(end);
          send();
        }
      });
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
    });
  const t0 = performance.now();
  await Promise.all(Array.from({ length: connections }, loop));
  return { ok, bad, seconds: (performance.now() - t0) / 1000 };
}

// --- one round ---

async function round(i, { floor } = {}) {
  const gw = floor ? await startFloor(floor) : await startGateway(i);
  const pid = gw.child.pid;
  try {
    // Idle: the serving line is printed once it listens; one /health, then 1 s of quiet.
    await request(gw.url, 'GET', '/health');
    await sleep(1_000);
    const rssIdle = rssMiB(pid);

    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let t = 0; t < WARMUP; t++) await chat(gw.url, `warm-up ${t}`, 'cpu', keepAlive);
    const c0 = cpuMs(pid);
    const turns = [];
    for (let t = 0; t < TURNS; t++) turns.push(await chat(gw.url, `bench turn ${t}`, 'cpu', keepAlive));
    const cpuPerTurn = (cpuMs(pid) - c0) / TURNS;
    keepAlive.destroy();
    const failed = turns.filter((r) => !answered(r)).length;

    const h0 = cpuMs(pid);
    const health = await rawHealth(gw.url, 8, HEALTH_MS);
    const healthCpuUs = ((cpuMs(pid) - h0) / Math.max(1, health.ok)) * 1000;

    const queued = floor ? NaN : await queuedHeaders(gw.url);

    // Load: 50 keys x 4 turns, 10 at a time (the default maxConcurrent), then 1 s of quiet.
    let next = 0;
    let loadFailed = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < 50) {
          const key = `load-${next++}`;
          for (let t = 0; t < 4; t++) if (!answered(await chat(gw.url, `load turn ${t}`, key))) loadFailed++;
        }
      }),
    );
    await sleep(1_000);
    const rssLoad = rssMiB(pid);
    return {
      rssIdle,
      cpuPerTurn,
      healthRps: health.ok / health.seconds,
      healthCpuUs,
      queued,
      rssLoad,
      problems: [
        failed && `${failed}/${TURNS} sequential turns failed`,
        health.bad && `${health.bad} /health answers not 200`,
        loadFailed && `${loadFailed}/200 load turns failed`,
      ].filter(Boolean),
    };
  } finally {
    await gw.stop();
  }
}

/** Headers of a turn sent while another turn of the same key runs (median of QUEUED_RUNS). */
async function queuedHeaders(base) {
  const times = [];
  for (let q = 0; q < QUEUED_RUNS; q++) {
    const key = `queued-${q}`;
    const first = chat(base, 'SLEEP:1000 blocker', key);
    first.catch(() => undefined); // awaited below
    // Send the second turn only once the first one is really running, so it queues.
    const t0 = performance.now();
    const running = async () => JSON.parse((await request(base, 'GET', '/api/status')).text).turns?.running ?? 0;
    while ((await running()) < 1 && performance.now() - t0 < 5_000) await sleep(10);
    const [, second] = await Promise.all([first, chat(base, `queued ${q}`, key)]);
    times.push(second.headers);
  }
  return median(times);
}

function coldStart() {
  const time = (args) => {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, args, { cwd: tmp, stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } });
    return { ms: performance.now() - t0, ok: r.status === 0 };
  };
  time(['-e', '0']); // warm-ups, dropped
  time([CLI, '--version']);
  const above = [];
  let failed = 0;
  for (let i = 0; i < COLD_N; i++) {
    // Pairs in alternating order, so that load changes on a shared machine hit both alike.
    let bare;
    let ours;
    if (i % 2) {
      bare = time(['-e', '0']);
      ours = time([CLI, '--version']);
    } else {
      ours = time([CLI, '--version']);
      bare = time(['-e', '0']);
    }
    if (!ours.ok) failed++;
    above.push(ours.ms - bare.ms);
  }
  return { above, failed };
}

// --- main ---

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
console.log(`gateway bench: node ${process.version}, ${os.cpus().length} CPUs, CLK_TCK ${CLK_TCK}, load average ${load()}`);
console.log(
  `${ROUNDS} rounds, each a fresh gateway: ${TURNS} sequential turns, /health for ${HEALTH_MS / 1000} s, ${QUEUED_RUNS} queued turns, 200 turns of load`,
);
const benchStart = performance.now();
const rounds = [];
const floors = [];
const libFloors = [];
const stackFloors = [];
const show = (label, r) =>
  console.log(
    `  ${label}: idle ${r.rssIdle.toFixed(1)} MiB, ${r.cpuPerTurn.toFixed(2)} ms CPU/turn, /health ${r.healthRps.toFixed(0)} req/s (${r.healthCpuUs.toFixed(0)} µs CPU each)${Number.isNaN(r.queued) ? '' : `, queued headers ${r.queued.toFixed(1)} ms`}, after load ${r.rssLoad.toFixed(1)} MiB${r.problems.length ? `  !! ${r.problems.join('; ')}` : ''}`,
  );
for (let i = 0; i < ROUNDS; i++) {
  const r = await round(i);
  rounds.push(r);
  show(`round ${i + 1}`, r);
  const f = await round(i, { floor: 'bare' });
  floors.push(f);
  show(`floor ${i + 1}`, f);
  const l = await round(i, { floor: 'libs' });
  libFloors.push(l);
  show(`floor+libs ${i + 1}`, l);
  const k = await round(i, { floor: 'stack' });
  stackFloors.push(k);
  show(`floor+stack ${i + 1}`, k);
}
const cold = coldStart();

const column = (list, key) => list.map((r) => r[key]);
const pad = (x, digits) => `${x.toFixed(digits)}`.padStart(9);
/** min / median / max of `values`, and the two floors' medians of `floorKey` when they measure it. */
const row = (label, values, unit, digits = 1, floorKey) => {
  const s = [...values].sort((a, b) => a - b);
  const floorsOf = floorKey ? [floors, libFloors, stackFloors].map((list) => pad(median(column(list, floorKey)), digits)).join('  ') : '';
  console.log(`  ${label.padEnd(38)} ${pad(s[0], digits)} ${pad(median(s), digits)} ${pad(s[s.length - 1], digits)} ${floorsOf.padEnd(31)} ${unit}`);
};
/** A figure every round and both floors measure. */
const measured = (label, key, unit, digits) => row(label, column(rounds, key), unit, digits, key);
console.log(`\nsummary${' '.repeat(34)}      min    median       max     floor floor+libs floor+stack`);
measured('gateway CPU per turn', 'cpuPerTurn', 'ms', 2);
measured('RSS idle (1 s after first /health)', 'rssIdle', 'MiB', 1);
measured('RSS after load (200 turns, 1 s quiet)', 'rssLoad', 'MiB', 1);
measured('GET /health, 8 raw keep-alive sockets', 'healthRps', 'req/s', 0);
measured('  gateway CPU per /health', 'healthCpuUs', 'µs', 0);
row('queued turn: response headers', column(rounds, 'queued'), 'ms');
row(`cold start: --version minus node -e 0`, cold.above, `ms (${COLD_N} pairs)`);
if (cold.failed) console.log(`  !! ${cold.failed} --version runs failed`);

// The goals (docs/performance.md) are gaps to the floor with the chosen packages, in this run.
const gap = (key) => median(column(rounds, key)) - median(column(libFloors, key));
console.log('\ngoals: the gateway against floor+libs (medians of this run)');
const goal = (label, value, limit, unit) =>
  console.log(
    `  ${label.padEnd(38)} ${value >= 0 ? '+' : ''}${value.toFixed(2)} ${unit} (goal: at most +${limit} ${unit}) ${value <= limit ? 'met' : 'NOT met'}`,
  );
goal('CPU per turn', gap('cpuPerTurn'), 2, 'ms');
goal('RSS idle', gap('rssIdle'), 4, 'MiB');
goal('RSS after load', gap('rssLoad'), 10, 'MiB');
console.log(`\ntotal ${((performance.now() - benchStart) / 1000).toFixed(1)} s; load average at the end: ${load()}`);
