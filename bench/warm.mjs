#!/usr/bin/env node
// Warm engines, cold against warm, per engine: prints numbers, asserts nothing. Runs against the
// BUILT code (`npm run build` first): `node bench/warm.mjs [--follow 3] [--engines engine_b,acp]`.
//
// For each real CLI, a gateway (launchGateway from dist/, in this process) on the scripted fake LLM
// (test/fakes/fake-llm.ts, transpiled as bench/engines.mjs does), and through `POST /chat`:
// - cold: the first turn of a conversation (its engine process starts), in milliseconds from the
//   request to the first `text` event;
// - warm: the follow-up turns on the same conversation (the warm process takes them): the same
//   time, min / median / max, and how many engine processes were started meanwhile (direct
//   children of this process that appeared during a follow-up turn: 0 when the warm process
//   took it);
// - per turn: the same conversation with `warm.enabled: false`, every turn starting the engine.
// The fake LLM answers at once; the turns are text only (`warm bench turn <n>`).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { median, ms } from './stats.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const { values: opts } = parseArgs({ options: { follow: { type: 'string', default: '3' }, engines: { type: 'string', default: '' } } });
const FOLLOW = Number(opts.follow);
if (!fs.existsSync(path.join(DIST, 'gateway.js'))) {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
const { launchGateway } = await import(pathToFileURL(path.join(DIST, 'gateway.js')).href);
const { createSilentLogger } = await import(pathToFileURL(path.join(DIST, 'core/logger.js')).href);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'service-bench-warm-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const BIN = path.join(ROOT, 'node_modules', '.bin');
const TOKEN = 'bench-warm-token-1234567890';

async function loadFakeLlm() {
  const ts = (await import('typescript')).default;
  const source = fs.readFileSync(path.join(ROOT, 'test', 'fakes', 'fake-llm.ts'), 'utf8');
  const out = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const target = path.join(tmp, 'fake-llm.mjs');
  fs.writeFileSync(target, out);
  return import(pathToFileURL(target).href);
}

function childPids() {
  const out = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) out.push(Number(e));
    } catch {
      // gone
    }
  }
  return out;
}

/** One turn over POST /chat: ms to the first text event, the completion, and the engine processes started meanwhile. */
async function turn(url, message, key) {
  const before = new Set(childPids());
  const started = new Set();
  const sample = setInterval(() => {
    for (const pid of childPids()) if (!before.has(pid)) started.add(pid);
  }, 5);
  const t0 = performance.now();
  let firstText;
  let completion;
  const r = await fetch(`${url}/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message, sessionKey: key }),
  });
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of r.body) {
    buf += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!block.startsWith('data: ')) continue;
      const e = JSON.parse(block.slice(6));
      if (e.type === 'text' && firstText === undefined) firstText = performance.now() - t0;
      if (e.type === 'completion') completion = e;
    }
  }
  clearInterval(sample);
  for (const pid of childPids()) if (!before.has(pid)) started.add(pid);
  if (completion?.status !== 'completed') throw new Error(`turn "${message}" ended ${completion?.status}: ${completion?.message}`);
  return { firstText: firstText ?? Number.NaN, spawned: started.size };
}

async function gatewayFor(spec, warm) {
  const base = path.join(tmp, `${spec.engine}-${warm ? 'warm' : 'cold'}`);
  const home = path.join(base, 'home');
  const dir = path.join(base, 'assistant');
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(dir, { recursive: true });
  if (spec.engine === 'engine_c') {
    const seed = path.join(home, '.config', 'opencode');
    fs.mkdirSync(path.join(seed, 'node_modules'), { recursive: true });
    const deps = { '@opencode-ai/plugin': '*' };
    fs.writeFileSync(path.join(seed, 'package.json'), JSON.stringify({ dependencies: deps }));
    fs.writeFileSync(path.join(seed, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages: { '': { dependencies: deps } } }));
  }
  if (spec.engine === 'engine_d') {
    fs.mkdirSync(path.join(home, '.codex'), { recursive: true });
    fs.writeFileSync(path.join(home, '.codex', 'config.toml'), '[features]\nplugins = false\n');
  }
  const yaml = [
    'name: bench-warm',
    `engine: ${spec.engine}`,
    ...(spec.yaml ?? []),
    `warm:\n  enabled: ${warm}`,
    'provider:',
    `  baseUrl: ${spec.baseUrl}`,
    '  apiKey: fake-key',
    '  model: fake-model',
  ];
  fs.writeFileSync(path.join(dir, 'service.yaml'), `${yaml.join('\n')}\n`);
  const env = {
    HOME: home,
    PATH: [BIN, path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter),
    NO_PROXY: '127.0.0.1',
    LANG: 'C.UTF-8',
    SERVICE_FLEET_DIR: path.join(base, 'fleet'),
  };
  return launchGateway({ dir, port: 0, token: TOKEN, env, log: createSilentLogger() });
}

const { startFakeLlm } = await loadFakeLlm();
const llm = await startFakeLlm();
const ALL = [
  { engine: 'engine_b', title: 'Claude Code', baseUrl: llm.url },
  { engine: 'engine_c', title: 'OpenCode', baseUrl: `${llm.url}/v1`, yaml: ['model: service/fake-model'] },
  { engine: 'engine_d', title: 'Codex', baseUrl: `${llm.url}/v1` },
  { engine: 'engine_e', title: 'Gemini CLI', baseUrl: llm.url },
  { engine: 'engine_f', title: 'Qwen Code', baseUrl: `${llm.url}/v1` },
  { engine: 'acp', title: 'acp: gemini --acp', baseUrl: llm.url, yaml: ['acp:', '  command: gemini', '  args: [--acp]'] },
];
const wanted = opts.engines ? opts.engines.split(',') : ALL.map((e) => e.engine);
const range = (xs) => `${ms(Math.min(...xs))} ${ms(median(xs))} ${ms(Math.max(...xs))}`;

console.log(`Warm engines: POST /chat → first text event, cold first turn vs ${FOLLOW} warm follow-ups (min / median / max), and per turn (warm off)`);
for (const spec of ALL.filter((e) => wanted.includes(e.engine))) {
  await measure(spec).catch((err) => console.log(`\n${spec.engine} (${spec.title}): not measured: ${err.message}`));
}
await llm.close();

async function measure(spec) {
  const follow = [];
  const perTurn = [];
  let cold;
  const warmGw = await gatewayFor(spec, true);
  try {
    cold = await turn(warmGw.url, 'warm bench turn 0', 'bench');
    for (let i = 1; i <= FOLLOW; i++) follow.push(await turn(warmGw.url, `warm bench turn ${i}`, 'bench'));
  } finally {
    await warmGw.close(2_000);
  }
  const offGw = await gatewayFor(spec, false);
  try {
    for (let i = 0; i <= FOLLOW; i++) perTurn.push(await turn(offGw.url, `per-turn bench turn ${i}`, 'bench'));
  } finally {
    await offGw.close(2_000);
  }
  const warmMedian = median(follow.map((t) => t.firstText));
  console.log(`\n${spec.engine} (${spec.title})`);
  console.log(`  cold first turn      ${ms(cold.firstText)}   (engine processes started: ${cold.spawned})`);
  console.log(
    `  warm follow-ups      ${range(follow.map((t) => t.firstText))}   ${((100 * warmMedian) / cold.firstText).toFixed(0)}% of cold; processes started: ${follow.map((t) => t.spawned).join(', ')}`,
  );
  console.log(`  per turn (warm off)  ${range(perTurn.map((t) => t.firstText))}   processes started: ${perTurn.map((t) => t.spawned).join(', ')}`);
}
