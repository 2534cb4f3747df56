#!/usr/bin/env node
// Engine benchmark: prints numbers, asserts nothing. Runs against the BUILT code (`npm run build`
// first): `node bench/engines.mjs [--turns 30] [--real 3] [--skip-real]`.
//
// 1. Our runner's own overhead per turn. The stand-in engine (test/fakes/stand-in-engine.mjs, behind
//    a wrapper named `claude`, as test/helpers/stand-in.ts makes them) is run through
//    createEngineRunner and, interleaved, spawned directly with child_process.spawn reading its
//    stdout. Same binary, same argv shape, same stdin: the difference is what our layer adds
//    (workspace prepare, the spawn, the process-tree bookkeeping, parsing, the post-exit drain).
// 2. Each real CLI's full RUN-TOOL turn (one shell tool call + final text) against the scripted fake
//    LLM on 127.0.0.1, through our runner, in a fresh HOME: one cold turn, then the median of N.
//
// The fake LLM is TypeScript (test/fakes/fake-llm.ts) and Node 20 cannot strip types. It imports
// only node: builtins, so it is transpiled in-process with the `typescript` devDependency
// (transpileModule: no type check, no tsconfig, ~0.2 s) into a temp .mjs and imported. One source
// of truth, no second server, no extra build step or test runner in the loop.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { median, ms, quantile } from './stats.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const { values: opts } = parseArgs({
  options: {
    turns: { type: 'string', default: '30' },
    real: { type: 'string', default: '3' },
    'skip-real': { type: 'boolean', default: false },
    engines: { type: 'string', default: '' },
  },
});
const TURNS = Number(opts.turns);
const REAL_TURNS = Number(opts.real);

if (!fs.existsSync(path.join(DIST, 'core', 'engines', 'engine-runner.js'))) {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
const { createEngineRunner } = await import(pathToFileURL(path.join(DIST, 'core/engines/engine-runner.js')).href);
const { createMemoryFailoverStore } = await import(pathToFileURL(path.join(DIST, 'core/engines/failover.js')).href);
const { createSilentLogger } = await import(pathToFileURL(path.join(DIST, 'core/logger.js')).href);
const { resolveAssistantPaths } = await import(pathToFileURL(path.join(DIST, 'core/paths.js')).href);
const { loadServiceConfig } = await import(pathToFileURL(path.join(DIST, 'definitions.js')).href);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'service-bench-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const SYSTEM_PATH = [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'];

// --- an assistant directory for the runner ---

function makeRunner(name, yaml, env) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'service.yaml'), yaml);
  const paths = resolveAssistantPaths(dir);
  const runner = createEngineRunner({
    dir: paths.dir,
    stateDir: paths.stateDir,
    skillsDir: paths.skillsDir,
    log: createSilentLogger(),
    failover: createMemoryFailoverStore(),
    env,
  });
  return { dir, runner, config: loadServiceConfig(dir, env).config };
}

/** One turn through our runner, timed from run() (so workspace prepare and spawn count): first event, done/error. */
async function runnerTurn(r, prompt, sessionId) {
  const t0 = performance.now();
  let first;
  let terminal;
  let session;
  for await (const e of r.runner.run({ config: r.config, prompt, ...(sessionId ? { sessionId } : {}) })) {
    first ??= performance.now() - t0;
    if (e.type === 'session') session = e.sessionId;
    if (e.type === 'done' || e.type === 'error') terminal = e;
  }
  return { first, end: performance.now() - t0, terminal, session };
}

// --- 1. our overhead, with the stand-in engine ---

async function overhead() {
  const binDir = path.join(tmp, 'standin-bin');
  fs.mkdirSync(binDir);
  const standIn = path.join(ROOT, 'test', 'fakes', 'stand-in-engine.mjs');
  const wrapper = path.join(binDir, 'claude');
  fs.writeFileSync(wrapper, `#!/bin/sh\nexec "${process.execPath}" "${standIn}" engine_b "$@"\n`, { mode: 0o755 });
  const env = { PATH: [binDir, ...SYSTEM_PATH].join(':'), HOME: path.join(tmp, 'standin-home'), STANDIN_STATE_DIR: path.join(tmp, 'standin-state') };
  const r = makeRunner('standin', 'name: bench\nengine: engine_b\ntimeout: 60\n', env);
  const prompt = 'hello from the bench';

  // The same invocation our engine_b builds (prompt on stdin), minus our layer.
  const direct = () =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      let first;
      const child = spawn(wrapper, ['-p', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--dangerously-skip-permissions'], {
        cwd: r.dir,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let buf = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (d) => {
        buf += d;
        if (first === undefined && buf.includes('\n')) first = performance.now() - t0;
      });
      child.stderr.resume();
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve({ first, end: performance.now() - t0 }) : reject(new Error(`stand-in exited ${code}`))));
      child.stdin.end(prompt);
    });

  const runs = { direct: [], ours: [] };
  const cpu = { direct: 0, ours: 0 };
  for (let i = 0; i < TURNS + 3; i++) {
    // Interleaved so that load changes on this shared box hit both sides alike; 3 warm-ups dropped.
    for (const side of i % 2 ? ['ours', 'direct'] : ['direct', 'ours']) {
      const c0 = process.cpuUsage();
      const res = side === 'direct' ? await direct() : await runnerTurn(r, prompt);
      const c = process.cpuUsage(c0);
      if (side === 'ours' && res.terminal?.type !== 'done') throw new Error(`stand-in turn failed: ${JSON.stringify(res.terminal)}`);
      if (i >= 3) {
        runs[side].push(res);
        cpu[side] += (c.user + c.system) / 1000;
      }
    }
  }
  const row = (label, key) => {
    const d = runs.direct.map((x) => x[key]);
    const o = runs.ours.map((x) => x[key]);
    console.log(
      `  ${label.padEnd(20)} direct ${ms(median(d))} / p90 ${ms(quantile(d, 0.9))}   ours ${ms(median(o))} / p90 ${ms(quantile(o, 0.9))}   overhead (median) ${ms(median(o) - median(d))}`,
    );
  };
  console.log(`\nOur runner's overhead: stand-in engine (engine_b format), ${TURNS} turns each side, interleaved`);
  console.log('  (start = spawn() for direct, runner.run() for ours: our side includes the workspace prepare)');
  row('start → first event', 'first');
  row('start → done', 'end');
  console.log(`  CPU of this process per turn: direct ${ms(cpu.direct / TURNS)}   ours ${ms(cpu.ours / TURNS)}`);
}

// --- 2. real CLIs against the fake LLM ---

async function loadFakeLlm() {
  const ts = (await import('typescript')).default;
  const file = path.join(ROOT, 'test', 'fakes', 'fake-llm.ts');
  const source = fs.readFileSync(file, 'utf8');
  if (/from\s+['"]\.\.?\//.test(source)) throw new Error(`${file} has relative imports now; transpiling it alone no longer works`);
  const out = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const target = path.join(tmp, 'fake-llm.mjs');
  fs.writeFileSync(target, out);
  return import(pathToFileURL(target).href);
}

/** Same seeding as test/e2e/real-engines.test.ts: keeps OpenCode's plugin install from going to npm. */
function seedOpenCodeDeps(dir) {
  fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
  const deps = { '@opencode-ai/plugin': '*' };
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ dependencies: deps }));
  fs.writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages: { '': { dependencies: deps } } }));
}

async function realClis() {
  const { startFakeLlm } = await loadFakeLlm();
  const llm = await startFakeLlm();
  const all = [
    { engine: 'engine_b', title: 'Claude Code', baseUrl: llm.url },
    { engine: 'engine_c', title: 'OpenCode', baseUrl: `${llm.url}/v1`, extra: 'model: service/fake-model\n' },
    { engine: 'engine_d', title: 'Codex', baseUrl: `${llm.url}/v1` },
    { engine: 'engine_e', title: 'Gemini CLI', baseUrl: llm.url },
    { engine: 'engine_f', title: 'Qwen Code', baseUrl: `${llm.url}/v1` },
    { engine: 'acp', name: 'acp-gemini', title: 'gemini --acp', baseUrl: llm.url, extra: 'acp:\n  command: gemini\n  args: [--acp]\n' },
    { engine: 'acp', name: 'acp-qwen', title: 'qwen --acp', baseUrl: `${llm.url}/v1`, extra: 'acp:\n  command: qwen\n  args: [--acp]\n' },
  ];
  // --engines engine_e,acp-qwen: only those (by engine id or name).
  const wanted = opts.engines ? opts.engines.split(',') : [];
  const engines = wanted.length ? all.filter((e) => wanted.includes(e.engine) || wanted.includes(e.name)) : all;
  console.log(`\nReal CLIs, RUN-TOOL turn (tool call + final text) through our runner, fake LLM on 127.0.0.1, fresh HOME`);
  try {
    for (const e of engines) {
      const key = e.name ?? e.engine;
      const home = path.join(tmp, `home-${key}`);
      fs.mkdirSync(home);
      // No credentials from this shell reach the CLIs: the environment is built from scratch.
      const env = {
        HOME: home,
        PATH: [path.join(ROOT, 'node_modules', '.bin'), ...SYSTEM_PATH].join(':'),
        NO_PROXY: '127.0.0.1',
        no_proxy: '127.0.0.1',
        LANG: 'C.UTF-8',
      };
      const yaml = `name: bench\nengine: ${e.engine}\n${e.extra ?? ''}timeout: 120\nprovider:\n  baseUrl: ${e.baseUrl}\n  apiKey: fake-key\n  model: fake-model\n`;
      if (e.engine === 'engine_d') {
        // As in the e2e test: no plugin-marketplace DNS lookups (github.com, chatgpt.com).
        fs.mkdirSync(path.join(home, '.codex'));
        fs.writeFileSync(path.join(home, '.codex', 'config.toml'), '[features]\nplugins = false\n');
      }
      if (e.engine === 'engine_c') {
        seedOpenCodeDeps(path.join(home, '.config', 'opencode'));
        seedOpenCodeDeps(path.join(tmp, `real-${key}`, '.opencode'));
      }
      const r = makeRunner(`real-${key}`, yaml, env);
      const turns = [];
      let failed;
      for (let i = 0; i <= REAL_TURNS && !failed; i++) {
        const res = await runnerTurn(r, `RUN-TOOL bench turn ${i}`);
        // A failed turn has no meaningful time: report it and go on with the next engine.
        if (res.terminal?.type !== 'done' || !res.terminal.text.startsWith('FAKE-LLM-REPLY')) failed = res.terminal;
        else turns.push(res);
      }
      if (failed) {
        console.log(`  ${e.title.padEnd(13)} FAILED: ${JSON.stringify(failed).slice(0, 300)}`);
        continue;
      }
      const [cold, ...warm] = turns;
      const list = (k) => warm.map((t) => t[k].toFixed(0)).join(', ');
      console.log(
        `  ${e.title.padEnd(13)} start → done: median ${ms(median(warm.map((t) => t.end)))} (${list('end')}; cold first turn ${cold.end.toFixed(0)} ms)` +
          `   start → first event: median ${ms(median(warm.map((t) => t.first)))}`,
      );
    }
  } finally {
    await llm.close();
  }
}

console.log(
  `engines bench: node ${process.version}, ${os.cpus().length} CPUs, load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
await overhead();
if (!opts['skip-real']) await realClis();
console.log(
  `\nload average at the end: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
