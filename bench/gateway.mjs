#!/usr/bin/env node
// Gateway benchmark: prints numbers, asserts nothing. Runs against the BUILT code (`npm run build`
// first): `node bench/gateway.mjs [--turns 50] [--health-seconds 5]`.
//
// The real `service gateway` runs as a child process, exactly as a user starts it, with the stand-in
// engine (test/fakes/stand-in-engine.mjs behind a wrapper named `claude`, as test/helpers/stand-in.ts
// makes it) first on PATH. Measured from the outside:
// 1. gateway CPU per chat turn: the gateway PID's own utime+stime from /proc/<pid>/stat, so the
//    engine processes (its children) are not counted; they are shown apart (cutime+cstime);
// 2. GET /health throughput and latency over 8 keep-alive connections;
// 3. time to headers / first body byte of a turn queued behind a running one on the same key;
// 4. the gateway's RSS after start and after the load;
// 5. CLI cold start (`--version`) next to a bare `node -e 0`.
// Linux only (/proc). This process and the gateway share the machine's CPUs, so the throughput
// figure is for both together: it is a relative number, for comparing builds on one machine.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { median, ms, quantile } from './stats.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'bin', 'service.js');
const { values: opts } = parseArgs({
  options: {
    turns: { type: 'string', default: '50' },
    'health-seconds': { type: 'string', default: '5' },
  },
});
const TURNS = Number(opts.turns);
const HEALTH_MS = Number(opts['health-seconds']) * 1000;
const WARMUP = 3; // first turns pay for JIT, the SQLite statements' first use, lazy imports
const QUEUED_RUNS = 5;
const TOKEN = 'bench-token';

if (!fs.existsSync(path.join(ROOT, 'dist', 'cli.js'))) {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
if (!fs.existsSync('/proc/self/stat')) {
  console.error('this bench reads /proc: Linux only');
  process.exit(1);
}

// --- formatting (statistics: stats.mjs) ---

const mb = (kb) => `${(kb / 1024).toFixed(1)} MB`;
const sleep = (t) => new Promise((r) => setTimeout(r, t));

// --- /proc readers ---

let CLK_TCK = 100;
try {
  CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // getconf missing: 100 is what Linux uses on every common architecture
}
/** CPU ms of the process itself (utime+stime, fields 14-15) and of its reaped children (cutime+cstime, 16-17). */
function cpuOf(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: split after its closing ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3
  const tick = (n) => (Number(f[n - 3]) * 1000) / CLK_TCK;
  return { self: tick(14) + tick(15), children: tick(16) + tick(17) };
}
const rssKb = (pid) => Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

// --- temp directories: assistant, stand-in bin, fleet, HOME and the stand-in's session files ---

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'service-bench-gw-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const dir = path.join(tmp, 'assistant');
const binDir = path.join(tmp, 'bin');
for (const d of [dir, binDir, path.join(tmp, 'fleet'), path.join(tmp, 'home')]) fs.mkdirSync(d);
fs.writeFileSync(path.join(dir, 'service.yaml'), 'name: bench\nengine: engine_b\n');
const standIn = path.join(ROOT, 'test', 'fakes', 'stand-in-engine.mjs');
fs.writeFileSync(path.join(binDir, 'claude'), `#!/bin/sh\nexec "${process.execPath}" "${standIn}" engine_b "$@"\n`, { mode: 0o755 });

// --- the gateway process ---

async function startGateway() {
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
  const t0 = performance.now();
  const child = spawn(process.execPath, [CLI, 'gateway', '--port', '0', '--token', TOKEN, '-d', dir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start in 20 s:\n${out}`)), 20_000);
    const check = () => {
      const m = /is serving on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', check);
    void exited.then((e) => reject(new Error(`gateway exited early (${JSON.stringify(e)}):\n${out}`)));
  });
  return { child, url, exited, startMs: performance.now() - t0, output: () => out };
}

// --- HTTP client: node:http rather than fetch, to see the headers and the first body chunk apart ---

/** One request; times from sending to the response headers, the first body chunk and the end. */
function request(base, method, pathname, { body, agent } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const r = { headers: NaN, firstByte: NaN, end: NaN, status: 0, text: '' };
    const req = http.request(new URL(pathname, base), {
      method,
      agent: agent ?? false, // no agent: a fresh connection, nothing pooled between measurements
      headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    });
    req.on('response', (res) => {
      r.headers = performance.now() - t0;
      r.status = res.statusCode;
      res.setEncoding('utf8');
      res.on('data', (d) => {
        if (Number.isNaN(r.firstByte)) r.firstByte = performance.now() - t0;
        r.text += d;
      });
      res.on('end', () => resolve({ ...r, end: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}
const chat = (base, message, sessionKey) => request(base, 'POST', '/chat', { body: { message, sessionKey } });
/** A turn counts when the stand-in's answer came back; a failed one is reported, not thrown. */
const answered = (r) => r.status === 200 && r.text.includes('ECHO:');

// --- the measurements ---

async function sequentialTurns(gw) {
  for (let i = 0; i < WARMUP; i++) await chat(gw.url, `warm-up ${i}`, 'cpu');
  const runs = [];
  const c0 = cpuOf(gw.child.pid);
  const t0 = performance.now();
  for (let i = 0; i < TURNS; i++) runs.push(await chat(gw.url, `bench turn ${i}`, 'cpu'));
  const wall = performance.now() - t0;
  const c1 = cpuOf(gw.child.pid);
  const failed = runs.filter((r) => !answered(r)).length;
  const col = (k) => runs.map((r) => r[k]);
  console.log(`\nPOST /chat, ${TURNS} sequential turns on one session key (after ${WARMUP} warm-up turns)`);
  console.log(
    `  gateway CPU (own utime+stime)     ${ms((c1.self - c0.self) / TURNS)} per turn   (${(c1.self - c0.self).toFixed(0)} ms in total, ${(1000 / CLK_TCK).toFixed(0)} ms resolution)`,
  );
  console.log(`  engine CPU (reaped children)      ${ms((c1.children - c0.children) / TURNS)} per turn   (sh + node stand-in, for scale)`);
  console.log(
    `  wall per turn                      median ${ms(median(col('end')))}   p90 ${ms(quantile(col('end'), 0.9))}   (${ms(wall / TURNS)} mean incl. client)`,
  );
  console.log(`  request → response headers        median ${ms(median(col('headers')))}   p90 ${ms(quantile(col('headers'), 0.9))}`);
  console.log(`  request → first body byte         median ${ms(median(col('firstByte')))}   p90 ${ms(quantile(col('firstByte'), 0.9))}`);
  if (failed) console.log(`  !! ${failed} of ${TURNS} turns did not answer; first: ${runs.find((r) => !answered(r)).text.slice(0, 300)}`);
}

async function healthThroughput(gw) {
  // 8 loops over an 8-socket keep-alive pool: each loop keeps one connection busy.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const latencies = [];
  let errors = 0;
  const c0 = cpuOf(gw.child.pid);
  const t0 = performance.now();
  const deadline = t0 + HEALTH_MS;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (performance.now() < deadline) {
        const r = await request(gw.url, 'GET', '/health', { agent }).catch(() => ({ status: 0 }));
        if (r.status === 200) latencies.push(r.end);
        else errors++;
      }
    }),
  );
  const elapsed = performance.now() - t0;
  const c1 = cpuOf(gw.child.pid);
  agent.destroy();
  console.log(`\nGET /health, 8 concurrent keep-alive connections for ${(elapsed / 1000).toFixed(1)} s`);
  console.log(
    `  throughput                        ${((latencies.length / elapsed) * 1000).toFixed(0).padStart(7)} req/s   (${latencies.length} requests, ${errors} errors)`,
  );
  console.log(
    `  latency                            median ${ms(median(latencies))}   p90 ${ms(quantile(latencies, 0.9))}   p99 ${ms(quantile(latencies, 0.99))}`,
  );
  console.log(
    `  gateway CPU per request           ${(((c1.self - c0.self) / latencies.length) * 1000).toFixed(0).padStart(7)} µs   (gateway busy ${(((c1.self - c0.self) / elapsed) * 100).toFixed(0)}% of one core)`,
  );
}

// Headers and first byte are timed apart because Node sends the headers only with the first body
// bytes (see src/server/sse.ts, openingComment): the two coincide unless the route writes early.
async function queuedTurns(gw) {
  const runs = [];
  const running = async () => (await request(gw.url, 'GET', '/api/status').then((r) => JSON.parse(r.text))).turns?.running ?? 0;
  for (let i = 0; i < QUEUED_RUNS; i++) {
    const first = chat(gw.url, `SLEEP:2000 blocker ${i}`, 'q').then((r) => ({ ...r, doneAt: performance.now() }));
    first.catch(() => undefined); // awaited below; a failure must not be an unhandled rejection meanwhile
    // Send the second turn only once the first one is really running (not merely sent), so it queues.
    const t0 = performance.now();
    while ((await running()) < 1 && performance.now() - t0 < 5_000) await sleep(20);
    const sentAt = performance.now();
    const [a, b] = await Promise.all([first, chat(gw.url, `queued ${i}`, 'q')]);
    runs.push({ ...b, blockerLeft: a.doneAt - sentAt, ok: answered(a) && answered(b) });
  }
  const col = (k) => runs.map((r) => r[k]);
  console.log(`\nA turn queued behind a running SLEEP:2000 turn on the same key, ${QUEUED_RUNS} runs (from sending the queued request)`);
  console.log(
    `  → response headers                median ${ms(median(col('headers')))}   (${col('headers')
      .map((x) => x.toFixed(0))
      .join(', ')})`,
  );
  console.log(
    `  → first body byte                 median ${ms(median(col('firstByte')))}   (${col('firstByte')
      .map((x) => x.toFixed(0))
      .join(', ')})`,
  );
  console.log(`  → end of the queued turn          median ${ms(median(col('end')))}`);
  console.log(`  (the running turn ended           median ${ms(median(col('blockerLeft')))} after the queued request was sent)`);
  const bad = runs.filter((r) => !r.ok).length;
  if (bad) console.log(`  !! ${bad} of ${QUEUED_RUNS} runs had a turn that did not answer`);
}

function coldStart() {
  const time = (args) => {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, args, { cwd: tmp, stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } });
    return { ms: performance.now() - t0, ok: r.status === 0 };
  };
  const runs = { cli: [], bare: [] };
  for (let i = 0; i < 10; i++) {
    // Interleaved, so that load changes on a shared machine hit both alike.
    runs.cli.push(time([CLI, '--version']));
    runs.bare.push(time(['-e', '0']));
  }
  const m = (xs) => median(xs.map((x) => x.ms));
  console.log(`\nCLI cold start, 10 runs each, interleaved`);
  console.log(
    `  node bin/service.js --version      median ${ms(m(runs.cli))}   min ${ms(Math.min(...runs.cli.map((x) => x.ms)))}${runs.cli.every((x) => x.ok) ? '' : '   !! some runs failed'}`,
  );
  console.log(`  node -e 0                          median ${ms(m(runs.bare))}   min ${ms(Math.min(...runs.bare.map((x) => x.ms)))}`);
  console.log(`  ours on top of bare node           median ${ms(m(runs.cli) - m(runs.bare))}`);
}

// --- main ---

console.log(
  `gateway bench: node ${process.version}, ${os.cpus().length} CPUs, CLK_TCK ${CLK_TCK}, load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const benchStart = performance.now();
const gw = await startGateway();
let stopped = false;
// Never leave a gateway behind, whatever fails below.
process.on('exit', () => {
  if (!stopped && gw.child.exitCode === null) gw.child.kill('SIGKILL');
});
try {
  // "Right after start": the serving line is printed once it listens and the channels are started.
  const rssStart = rssKb(gw.child.pid);
  const cpuStart = cpuOf(gw.child.pid);
  console.log(`\nGateway start: serving line after ${ms(gw.startMs)}, CPU so far ${ms(cpuStart.self)}, RSS ${mb(rssStart)}`);
  await sequentialTurns(gw);
  await healthThroughput(gw);
  await queuedTurns(gw);
  // After the load: give pending timers and GC a moment so this is an idle figure, not a peak.
  await sleep(500);
  console.log(`\nGateway RSS (VmRSS): ${mb(rssStart)} right after start, ${mb(rssKb(gw.child.pid))} after the load above`);
} finally {
  const t0 = performance.now();
  gw.child.kill('SIGTERM');
  const timer = setTimeout(() => gw.child.kill('SIGKILL'), 15_000);
  const { code, signal } = await gw.exited;
  clearTimeout(timer);
  stopped = true;
  console.log(`Gateway stop: SIGTERM → exit ${code ?? signal} in ${ms(performance.now() - t0)}`);
}
coldStart();
console.log(
  `\ntotal ${((performance.now() - benchStart) / 1000).toFixed(1)} s; load average at the end: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
