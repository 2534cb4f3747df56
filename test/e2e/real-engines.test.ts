/**
 * End to end with the real engine CLIs (devDependencies) against the scripted fake LLM on 127.0.0.1,
 * through our own code: openAssistantDirectory → assistant.chat → engine runner → CLI → fake LLM.
 *
 * Each engine gets a fresh HOME inside its temp dir and an environment built from scratch (no real
 * credential can leak in from the developer's shell). Nothing outside 127.0.0.1 is contacted (checked
 * with strace); for OpenCode and Codex that needs the HOME seeding at `seedOpenCodeDeps` / `seedCodexConfig`.
 *
 * OpenCode costs ~3 s and ~4.7 CPU-s per turn on a 2-core box, so every scenario is one turn per
 * engine and checks that need no turn of their own (the cost fields of `done`) reuse turn one.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StreamEvent } from '../../src/core/events.js';
import { createSilentLogger } from '../../src/core/logger.js';
import { type AssistantDirectory, openAssistantDirectory } from '../../src/assistant-directory.js';
import { startFakeLlm, type FakeLlm } from '../fakes/fake-llm.js';
import { assertEnding, collect, completionOf } from '../helpers/assistant.js';
import { repoRoot } from '../helpers/cli.js';
import { realEngineEnv, seedOpenCodeDeps } from '../helpers/real-engine.js';
import { until } from '../helpers/wait.js';

interface EngineSpec {
  engine: 'engine_b' | 'engine_c' | 'engine_d' | 'engine_e' | 'engine_f' | 'acp';
  title: string;
  /** Claude Code and Gemini CLI append their paths to the server root; the OpenAI-style clients want `…/v1`. */
  baseUrl: (llm: FakeLlm) => string;
  /** A session id in the engine's own format that it has never seen. */
  bogusSessionId: () => string;
  /** What `done` carries of a tool turn: Claude's cost and turns, Qwen's turns, nothing from the others. */
  reports: { costUsd: boolean; numTurns: boolean };
  /** Extra lines of service.yaml. */
  yaml?: string[];
}

const NOTHING = { costUsd: false, numTurns: false };

const ENGINES: EngineSpec[] = [
  { engine: 'engine_b', title: 'Claude Code', baseUrl: (l) => l.url, bogusSessionId: randomUUID, reports: { costUsd: true, numTurns: true } },
  // OpenCode session ids: `ses_` + 12 hex (time) + 14 base62, e.g. ses_df7642517ffeOaGIwUshcrujA1.
  {
    engine: 'engine_c',
    title: 'OpenCode',
    baseUrl: (l) => `${l.url}/v1`,
    bogusSessionId: () => `ses_${randomBytes(6).toString('hex')}${base62(14)}`,
    reports: NOTHING,
    // engine_c's config check wants provider/model; with provider.baseUrl the engine layer serves
    // provider.model from its generated `service` provider block (opencode.ts routedModel).
    yaml: ['model: service/fake-model'],
  },
  // Codex thread ids are UUIDs; engine-d only resumes ids that look like one.
  { engine: 'engine_d', title: 'Codex', baseUrl: (l) => `${l.url}/v1`, bogusSessionId: randomUUID, reports: NOTHING },
  { engine: 'engine_e', title: 'Gemini CLI', baseUrl: (l) => l.url, bogusSessionId: randomUUID, reports: NOTHING },
  { engine: 'engine_f', title: 'Qwen Code', baseUrl: (l) => `${l.url}/v1`, bogusSessionId: randomUUID, reports: { costUsd: false, numTurns: true } },
  // Any ACP agent; here the real `qwen --acp` (it resumes with session/resume), routed to the fake like engine_f.
  // gemini --acp 0.61 cannot resume: its session/load clobbers the stored session (docs/engines.md).
  {
    engine: 'acp',
    title: 'ACP: qwen --acp',
    baseUrl: (l) => `${l.url}/v1`,
    bogusSessionId: randomUUID,
    reports: NOTHING,
    yaml: ['acp:', '  command: qwen', '  args: [--acp]'],
  },
];

const BIN = path.join(repoRoot, 'node_modules', '.bin');
// No test here asserts a duration (speed is `npm run bench`'s business). OpenCode takes ~3 s per
// turn on a quiet 2-core box and far longer on a loaded one, so the engine timeout of an ordinary
// turn and every deadline below only catch hangs.
const TURN_TIMEOUT_S = 600;
const TEST_HANG_MS = 15 * 60_000;
/** For a wait on an engine (OpenCode alone needed over 30 s to start on a loaded machine). */
const ENGINE_HANG_MS = 10 * 60_000;
/** The turn that is meant to time out. */
const TIMEOUT_S = 3;

vi.setConfig({ testTimeout: TEST_HANG_MS, hookTimeout: TEST_HANG_MS });

describe.each(ENGINES)('$engine ($title), real CLI against the fake LLM', (spec) => {
  let root: string;
  let home: string;
  let llm: FakeLlm;
  let main: AssistantDirectory;
  const opened: AssistantDirectory[] = [];
  // Shared between the ordered tests below: turn two resumes turn one's session.
  let firstSessionId: string | undefined;
  let firstDone: Extract<StreamEvent, { type: 'done' }> | undefined;

  /** A fresh assistant directory of this engine (same HOME, so the same engine sessions). */
  const open = (name: string, opts: { apiKey?: string; timeout?: number } = {}): { opened: AssistantDirectory; dir: string } => {
    const dir = path.join(root, name);
    fs.mkdirSync(dir);
    const yaml = [
      `name: e2e-${name}`,
      `engine: ${spec.engine}`,
      ...(spec.yaml ?? []),
      `timeout: ${opts.timeout ?? TURN_TIMEOUT_S}`,
      // The per-turn path (the fallback of warm engines, and engine_a's only one); warm engines: warm-engines.test.ts.
      'warm:',
      '  enabled: false',
      'provider:',
      `  baseUrl: ${spec.baseUrl(llm)}`,
      `  apiKey: ${opts.apiKey ?? 'fake-key'}`,
      '  model: fake-model',
    ].join('\n');
    fs.writeFileSync(path.join(dir, 'service.yaml'), `${yaml}\n`);
    // Our engine_c workspace always has .opencode/ (skill links), and OpenCode installs into every .opencode it loads.
    if (spec.engine === 'engine_c') seedOpenCodeDeps(path.join(dir, '.opencode'));
    const env = realEngineEnv(home, BIN);
    const o = openAssistantDirectory({ dir, env, log: createSilentLogger() });
    opened.push(o);
    return { opened: o, dir };
  };

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), `service-e2e-${spec.engine}-`));
    home = path.join(root, 'home');
    fs.mkdirSync(home);
    if (spec.engine === 'engine_c') seedOpenCodeDeps(path.join(home, '.config', 'opencode'));
    if (spec.engine === 'engine_d') seedCodexConfig(home);
    llm = await startFakeLlm();
    main = open('main').opened;
  });

  afterAll(async () => {
    for (const o of opened) o.close();
    await llm?.close();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('a tool turn: tool_call, tool_result with the tool output, text, done, completion', async () => {
    const { events } = await turn(main, 'RUN-TOOL turn one: please run a shell command', 'chat');
    assertEnding(events);
    const types = events.map((e) => e.type);
    const call = types.indexOf('tool_call');
    const result = types.indexOf('tool_result');
    const lastText = types.lastIndexOf('text');
    expect(call, types.join(',')).toBeGreaterThanOrEqual(0);
    expect(result).toBeGreaterThan(call);
    expect(lastText).toBeGreaterThan(result);
    expect(types.indexOf('error')).toBe(-1);
    expect((events[result] as { content: string }).content).toContain('FAKE-TOOL-OUTPUT');
    const c = completionOf(events);
    expect(c.status).toBe('completed');
    expect(c.finalText).toMatch(/^FAKE-LLM-REPLY: RUN-TOOL turn one: please run a shell command/);
    expect(c.sessionId).toBeTruthy();
    firstSessionId = c.sessionId;
    firstDone = events.at(-2) as Extract<StreamEvent, { type: 'done' }>;
    expect(firstDone.sessionId).toBe(firstSessionId);
    // The engine really called the model through the routed provider (and only 127.0.0.1 was asked).
    expect(llm.requests.some((r) => r.api !== 'other')).toBe(true);
  });

  it(`done carries costUsd ${spec.reports.costUsd ? 'and numTurns' : spec.reports.numTurns ? 'no, numTurns yes' : 'and numTurns only where the engine reports them: absent here'}`, () => {
    expect(firstDone, 'turn one must have run').toBeDefined();
    if (spec.reports.costUsd) expect(firstDone!.costUsd).toBeGreaterThan(0);
    else expect(firstDone).not.toHaveProperty('costUsd');
    // tool call + final answer
    if (spec.reports.numTurns) expect(firstDone!.numTurns).toBe(2);
    else expect(firstDone).not.toHaveProperty('numTurns');
  });

  it('a second turn on the same key resumes the session: the engine saw turn one, same session id', async () => {
    expect(firstSessionId, 'turn one must have run').toBeTruthy();
    const { events } = await turn(main, 'turn two: what did I ask before?', 'chat');
    assertEnding(events);
    const c = completionOf(events);
    expect(c.status).toBe('completed');
    expect(c.finalText).toContain('FAKE-LLM-REPLY: turn two: what did I ask before?');
    expect(c.finalText).toContain('PREVIOUS-USER-MESSAGE: RUN-TOOL turn one: please run a shell command');
    expect(c.sessionId).toBe(firstSessionId);
    expect((await main.store.getSession('chat'))?.sessionId).toBe(firstSessionId);
  });

  it('a stored session id the engine does not know: the turn completes transparently in a new session', async () => {
    const bogus = spec.bogusSessionId();
    const t = Date.now();
    await main.store.saveSession({ key: 'stale', engine: spec.engine, sessionId: bogus, createdAt: t, updatedAt: t });
    const { events } = await turn(main, 'turn three: a new conversation', 'stale');
    assertEnding(events);
    expect(events.filter((e) => e.type === 'error')).toEqual([]);
    const c = completionOf(events);
    expect(c.status).toBe('completed');
    // No PREVIOUS-USER-MESSAGE line: the fake saw a conversation with this message only.
    expect(c.finalText).toBe('FAKE-LLM-REPLY: turn three: a new conversation');
    expect(c.sessionId).toBeTruthy();
    expect(c.sessionId).not.toBe(bogus);
    expect((await main.store.getSession('stale'))?.sessionId).toBe(c.sessionId);
  });

  it('a key the provider rejects fails with a clear error (the engine gives up, no timeout needed)', async () => {
    const { opened: wrong } = open('wrong-key', { apiKey: 'wrong-key' });
    const { events } = await turn(wrong, 'hello with a bad key', 'k');
    assertEnding(events);
    const errors = events.filter((e): e is Extract<StreamEvent, { type: 'error' }> => e.type === 'error');
    expect(errors).toHaveLength(1);
    // Claude: "Invalid API key · Fix external API key"; OpenCode/Codex/Qwen carry the server's "Incorrect API key provided";
    // Gemini CLI (and gemini --acp) Google's "API key not valid".
    expect(errors[0]!.message).toMatch(/invalid api key|incorrect api key|api key not valid/i);
    const c = completionOf(events);
    expect(c.status).toBe('failed');
    expect(c.message).toBe(errors[0]!.message);
  });

  it(`a turn longer than timeout: ${TIMEOUT_S} is cut with "Agent invocation timed out", and no process of it is left`, async () => {
    const { opened: slow, dir } = open('slow', { timeout: TIMEOUT_S });
    const { events, ms, procs } = await turn(slow, 'SLOW-60000 turn that outlives the timeout', 'k', { watchDir: dir });
    assertEnding(events);
    const c = completionOf(events);
    expect(c.status).toBe('failed');
    expect(c.message).toBe('Agent invocation timed out');
    expect(events.find((e) => e.type === 'error')).toEqual({ type: 'error', message: 'Agent invocation timed out' });
    // Not cut early (a slow machine cannot make this fail; how long the cut takes is not asserted).
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_S * 1000);
    expect(procs.size, 'the engine process was seen while it ran').toBeGreaterThan(0);
    expect(survivors(procs)).toEqual([]);
  });

  it('an abort in the middle of a turn ends it as aborted, and no process of it is left', async () => {
    const requestsBefore = llm.requests.length;
    const dir = path.join(root, 'main');
    const aborted = turn(main, 'SLOW-60000 turn to abort', 'abort', { watchDir: dir });
    // Abort only once the engine is mid-turn: its model request is waiting on the fake.
    await until(() => llm.requests.slice(requestsBefore).some(isSlowToolRequest), ENGINE_HANG_MS, 'the slow tool request', 50);
    expect(main.assistant.abort('abort')).toBe(true);
    // The fake holds this request for 60 s: a turn that ends "aborted" was ended by the abort.
    const { events, procs } = await aborted;
    assertEnding(events);
    expect(completionOf(events).status).toBe('aborted');
    expect(procs.size, 'the engine process was seen while it ran').toBeGreaterThan(0);
    expect(survivors(procs)).toEqual([]);
  });
});

// --- helpers ---

/**
 * Codex 0.169 looks up api.github.com, github.com and chatgpt.com on every run (its plugin
 * marketplace), even with analytics off; `[features] plugins = false` in the user config stops it.
 */
function seedCodexConfig(home: string): void {
  fs.mkdirSync(path.join(home, '.codex'), { recursive: true });
  fs.writeFileSync(path.join(home, '.codex', 'config.toml'), '[features]\nplugins = false\n');
}

interface Proc {
  pid: number;
  ppid: number;
  start: string;
  zombie: boolean;
}

/** Processes that belong to a turn, by pid → "start time cmdline" (the start time rules out pid reuse). */
type TurnProcs = Map<number, { start: string; cmd: string }>;

/** Run one chat turn to its end; with watchDir, sample /proc meanwhile for the processes of the turn. */
async function turn(
  o: AssistantDirectory,
  prompt: string,
  key: string,
  opts: { watchDir?: string } = {},
): Promise<{ events: StreamEvent[]; ms: number; procs: TurnProcs }> {
  const procs: TurnProcs = new Map();
  const before = new Set([...procTable().values()].map((p) => `${p.pid}:${p.start}`));
  const sample = () => {
    if (!opts.watchDir) return;
    const table = procTable();
    const mine = descendants(table, process.pid);
    for (const p of table.values()) {
      if (p.zombie || before.has(`${p.pid}:${p.start}`) || procs.has(p.pid)) continue;
      // A child of this test process (the engine and what it started), or anything working in the
      // assistant dir (a tool shell that was re-parented away).
      if (mine.has(p.pid) || isInside(cwdOf(p.pid), opts.watchDir)) procs.set(p.pid, { start: p.start, cmd: cmdlineOf(p.pid) });
    }
  };
  const timer = setInterval(sample, 50);
  const started = Date.now();
  try {
    const events = await collect(o.assistant.chat(prompt, { sessionKey: key, source: 'e2e' }));
    return { events, ms: Date.now() - started, procs };
  } finally {
    clearInterval(timer);
  }
}

/** Recorded processes that still exist (same pid and start time) and are not zombies. */
function survivors(procs: TurnProcs): string[] {
  const table = procTable();
  return [...procs].filter(([pid, p]) => table.get(pid)?.start === p.start && !table.get(pid)?.zombie).map(([pid, p]) => `${pid} ${p.cmd}`);
}

function procTable(): Map<number, Proc> {
  const table = new Map<number, Proc>();
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(e), { pid: Number(e), ppid: Number(f[1]), start: f[19] ?? '', zombie: f[0] === 'Z' || f[0] === 'X' });
    } catch {
      // exited while we read
    }
  }
  return table;
}

function descendants(table: Map<number, Proc>, root: number): Set<number> {
  const out = new Set<number>([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of table.values()) {
      if (!out.has(p.pid) && out.has(p.ppid)) {
        out.add(p.pid);
        grew = true;
      }
    }
  }
  out.delete(root);
  return out;
}

function cwdOf(pid: number): string | undefined {
  try {
    return fs.readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

function cmdlineOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 160);
  } catch {
    return '?';
  }
}

const isInside = (p: string | undefined, dir: string) => p !== undefined && (p === dir || p.startsWith(dir + path.sep));

/** The engine's main model call (it has tools) for a SLOW prompt: the turn is waiting on the model. */
function isSlowToolRequest(r: FakeLlm['requests'][number]): boolean {
  const body = r.body as { tools?: unknown[] } | undefined;
  return r.api !== 'other' && Array.isArray(body?.tools) && body.tools.length > 0 && JSON.stringify(body).includes('SLOW-60000');
}

function base62(n: number): string {
  const abc = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return [...randomBytes(n)].map((b) => abc[b % abc.length]).join('');
}
