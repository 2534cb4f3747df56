#!/usr/bin/env node
// Configuration PATCH benchmark: prints numbers, asserts nothing. Runs against the BUILT code
// (`npm run build` first): `node bench/config-patch.mjs [--reps 5]`.
//
// A real `service gateway` child process (no engine turn is started: PATCH never runs one) with a
// service.yaml written to a given size: tasks with prompts, comments and `${VAR}` placeholders,
// so write-back has lines to carry over. Measured from the outside:
// 1. PATCH cost against the size of the list it carries: `tasks` with 1, 10, 100, 1,000 items,
//    on a fresh small file (each PATCH alternates one item, so every one writes the file);
// 2. PATCH cost against the file's size (5 KB, 50 KB, 500 KB): a one-scalar change (`timeout`),
//    and a list of 100 `persona.boundaries` (the tasks, and so the file's size, stay);
// 3. GET /health latency, one request in flight on its own keep-alive socket (from a thread of its
//    own), while large PATCHes (1,000 tasks on a 500 KB file) are applied back to back: during the
//    first (which also arms 400 new tasks) and during the others;
// 4. what an over-limit PATCH costs (5,000 `persona.boundaries`, the issue's case): its status
//    and time.
// Each row: the PATCH's status, the median round trip, the gateway's CPU per PATCH (its
// utime+stime from /proc/<pid>/stat over all repetitions) and the part of it its main thread
// spent (/proc/<pid>/task/<pid>/stat: the event loop's share, the rest is the PATCH worker
// thread's and V8's helpers'). Linux only (/proc).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { spawnGateway } from './gateway-process.mjs';
import { median, quantile } from './stats.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({ options: { reps: { type: 'string', default: '5' } } });
const REPS = Number(opts.reps);
const TOKEN = 'bench-token';

if (!fs.existsSync(path.join(ROOT, 'dist', 'cli.js'))) {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
if (!fs.existsSync('/proc/self/stat')) {
  console.error('this bench reads /proc: Linux only');
  process.exit(1);
}

let CLK_TCK = 100;
try {
  CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // getconf missing: 100 is what Linux uses on every common architecture
}
/** CPU ms of a process (utime+stime), or of one of its threads with `tid` (the main thread's is the pid). */
function cpuMs(pid, tid) {
  const stat = fs.readFileSync(tid ? `/proc/${pid}/task/${tid}/stat` : `/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'service-bench-patch-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
process.on('SIGINT', () => process.exit(130));
for (const d of ['fleet', 'home']) fs.mkdirSync(path.join(tmp, d));
const env = { ...process.env, NO_COLOR: '1', HOME: path.join(tmp, 'home'), SERVICE_FLEET_DIR: path.join(tmp, 'fleet'), BENCH_TEAM: 'the platform team' };
delete env.SERVICE_TOKEN;

// --- configuration text ---

const PROMPT = 'Read the open issues of the repository, group them by area, and write a short summary of what changed since yesterday. ';
const task = (i, variant = '') => ({
  id: `task-${i}`,
  name: `Task number ${i}`,
  schedule: `${i % 60} ${i % 24} * * *`,
  prompt: `${PROMPT.repeat(6)}(${i}${variant})`,
});
const taskYaml = (t, i) => `  # task ${i}: kept by hand\n  - id: ${t.id}\n    name: ${t.name}\n    schedule: "${t.schedule}"\n    prompt: ${t.prompt}\n`;

/** A service.yaml of about `bytes` bytes: a commented header, then tasks. */
function configText(bytes) {
  let text = `# Bench assistant\nname: bench   # shown in the dashboard\nengine: engine_b\ntimeout: 600 # seconds\nsystemPrompt: "You help \${BENCH_TEAM}"\n\ngroupChat:\n  # who the bot answers in groups\n  groupPolicy: mention-only\n`;
  if (bytes > text.length) text += 'tasks:\n';
  for (let i = 0; text.length < bytes; i++) text += taskYaml(task(i), i);
  return text;
}

// --- HTTP ---

function request(base, method, pathname, { body, agent } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(new URL(pathname, base), {
      method,
      agent: agent ?? false,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, text, ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function withGateway(name, text, fn) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'service.yaml'), text);
  const gw = await spawnGateway({ dir, env, token: TOKEN });
  try {
    await request(gw.url, 'GET', '/health');
    return await fn(gw);
  } finally {
    await gw.stop();
  }
}

/**
 * One warm-up PATCH, then REPS more: status, median round trip, CPU per PATCH (after the warm-up),
 * and the time window of each (absolute ms). Bodies are serialised before the first is sent.
 */
async function measurePatches(gw, bodies) {
  const texts = Array.from({ length: REPS + 1 }, (_, r) => JSON.stringify(bodies(r - 1)));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const statuses = new Set();
  const windows = [];
  const send = async (body) => {
    const from = now();
    const res = await request(gw.url, 'PATCH', '/api/config', { body, agent });
    windows.push([from, now()]);
    statuses.add(res.status);
    return res;
  };
  const first = await send(texts[0]);
  const times = [];
  const c0 = cpuMs(gw.pid);
  const m0 = cpuMs(gw.pid, gw.pid);
  for (let r = 1; r <= REPS; r++) times.push((await send(texts[r])).ms);
  const cpu = (cpuMs(gw.pid) - c0) / REPS;
  const mainCpu = (cpuMs(gw.pid, gw.pid) - m0) / REPS;
  agent.destroy();
  return { status: [...statuses].join('/'), ms: median(times), cpu, mainCpu, windows, error: first.status === 200 ? '' : JSON.parse(first.text).error };
}

const listPatch = (n) => (rep) => ({ tasks: Array.from({ length: n }, (_, i) => task(i, i === n - 1 ? `-${rep}` : '')) });
const scalarPatch = (rep) => ({ timeout: 600 + rep + 2 });
const boundariesPatch = (n) => (rep) => ({
  persona: { boundaries: Array.from({ length: n }, (_, i) => `Never share internal document ${i} ${i === n - 1 ? rep : ''}`) },
});

const fmt = (x, digits = 1) => x.toFixed(digits).padStart(9);
const line = (label, bytes, r) =>
  console.log(
    `  ${label.padEnd(34)} ${String(Math.round(bytes / 1024)).padStart(6)} KB  ${String(r.status).padStart(7)} ${fmt(r.ms)} ms ${fmt(r.cpu)} ms ${fmt(r.mainCpu)} ms${r.error ? `  (${r.error.slice(0, 90)})` : ''}`,
  );

const now = () => performance.timeOrigin + performance.now();

/**
 * GET /health one at a time on one keep-alive socket, 2 ms apart, while `busy` runs. The probe
 * runs on a thread of its own: this thread serialises and sends megabytes of PATCH bodies, and
 * its own pauses must not count as the gateway's. Samples: [sent at (absolute ms), round trip, ok].
 */
async function healthDuring(gw, busy) {
  const probe = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    const http = require('node:http');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const now = () => performance.timeOrigin + performance.now();
    let stop = false;
    parentPort.on('message', () => (stop = true));
    const samples = [];
    const get = () => new Promise((resolve) => {
      const req = http.get(workerData.url + '/health', { agent }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode === 200)); });
      req.on('error', () => resolve(false)); // a reset: the keep-alive timer ran out while the gateway could not read
    });
    (async () => {
      while (!stop) {
        const sent = now();
        const ok = await get();
        samples.push([sent, now() - sent, ok]);
        await new Promise((r) => setTimeout(r, 2));
      }
      parentPort.postMessage(samples);
    })();`,
    { eval: true, workerData: { url: gw.url } },
  );
  await new Promise((r) => setTimeout(r, 1000)); // a baseline before the first PATCH
  const result = await busy();
  const samples = await new Promise((resolve) => {
    probe.once('message', resolve);
    probe.postMessage('stop');
  });
  await probe.terminate();
  return { result, samples };
}

/** The /health samples sent within the given windows: count, median, p99, max, failures. */
function healthIn(samples, windows) {
  const within = samples.filter(([sent]) => windows.some(([from, to]) => sent >= from && sent <= to));
  const ms = within.map(([, rt]) => rt);
  const failed = within.filter(([, , ok]) => !ok).length;
  if (ms.length === 0) return 'no samples';
  return `${ms.length} answers, median ${median(ms).toFixed(1)} ms, p99 ${quantile(ms, 0.99).toFixed(1)} ms, max ${Math.max(...ms).toFixed(1)} ms${failed ? `, ${failed} failed (reset or not 200)` : ''}`;
}

// --- main ---

console.log(`config PATCH bench: node ${process.version}, ${os.cpus().length} CPUs, CLK_TCK ${CLK_TCK}, ${REPS} PATCHes per row after one warm-up`);
console.log(
  `  ${'PATCH'.padEnd(34)} ${'file'.padStart(9)}  ${'status'.padStart(7)} ${'round trip'.padStart(12)} ${'CPU'.padStart(12)} ${'main thread'.padStart(12)}`,
);
const benchStart = performance.now();

console.log('1. against the list it carries (a fresh file)');
await withGateway('lists', configText(0), async (gw) => {
  for (const n of [1, 10, 100, 1000]) {
    const r = await measurePatches(gw, listPatch(n));
    line(`tasks: ${n} items`, fs.statSync(path.join(tmp, 'lists', 'service.yaml')).size, r);
  }
});

console.log('2. against the file it edits');
for (const kb of [5, 50, 500]) {
  const text = configText(kb * 1024);
  await withGateway(`file-${kb}`, text, async (gw) => {
    line('timeout: one scalar', text.length, await measurePatches(gw, scalarPatch));
  });
  await withGateway(`file-list-${kb}`, text, async (gw) => {
    line('persona.boundaries: 100 items', text.length, await measurePatches(gw, boundariesPatch(100)));
  });
}

console.log('3. GET /health while large PATCHes are applied (tasks: 1,000 items on a 500 KB file)');
await withGateway('health', configText(500 * 1024), async (gw) => {
  const { result, samples } = await healthDuring(gw, () => measurePatches(gw, listPatch(1000)));
  line('tasks: 1,000 items', fs.statSync(path.join(tmp, 'health', 'service.yaml')).size, result);
  console.log(`  /health during the first PATCH: ${healthIn(samples, result.windows.slice(0, 1))}`);
  console.log(`  /health during the next ${REPS}:     ${healthIn(samples, result.windows.slice(1))}`);
  console.log(`  /health before the first PATCH: ${healthIn(samples, [[0, result.windows[0][0]]])}`);
});

console.log("4. over the limit: the issue's 5,000 persona.boundaries");
await withGateway('over', configText(50 * 1024), async (gw) => {
  line('persona.boundaries: 5,000 items', 50 * 1024, await measurePatches(gw, boundariesPatch(5000)));
});

console.log(`\ntotal ${((performance.now() - benchStart) / 1000).toFixed(1)} s`);
