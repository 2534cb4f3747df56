/**
 * Warm engines with the real CLIs against the scripted LLM: the first turn of a conversation starts
 * the engine's resident process, a follow-up turn goes to the same process (same pid, nothing new
 * spawned) and the engine keeps the history itself; an abort interrupts the turn through the
 * engine's own interrupt and the process takes the next turn, history intact; closing the
 * assistant leaves no engine process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AssistantDirectory, openAssistantDirectory } from '../../src/assistant-directory.js';
import type { StreamEvent } from '../../src/core/events.js';
import { createSilentLogger } from '../../src/core/logger.js';
import { type FakeLlm, startFakeLlm } from '../fakes/fake-llm.js';
import { assertEnding, collect, completionOf } from '../helpers/assistant.js';
import { repoRoot } from '../helpers/cli.js';
import { realEngineEnv, seedOpenCodeDeps } from '../helpers/real-engine.js';
import { until } from '../helpers/wait.js';
import { childPids, isAlive } from '../helpers/warm.js';

interface Spec {
  engine: string;
  title: string;
  baseUrl: (llm: FakeLlm) => string;
  yaml?: string[];
}

const ENGINES: Spec[] = [
  { engine: 'engine_b', title: 'Claude Code', baseUrl: (l) => l.url },
  { engine: 'engine_c', title: 'OpenCode', baseUrl: (l) => `${l.url}/v1`, yaml: ['model: service/fake-model'] },
  { engine: 'engine_d', title: 'Codex', baseUrl: (l) => `${l.url}/v1` },
  { engine: 'engine_e', title: 'Gemini CLI', baseUrl: (l) => l.url },
  { engine: 'engine_f', title: 'Qwen Code', baseUrl: (l) => `${l.url}/v1` },
  { engine: 'acp', title: 'ACP: gemini --acp', baseUrl: (l) => l.url, yaml: ['acp:', '  command: gemini', '  args: [--acp]'] },
];

const BIN = path.join(repoRoot, 'node_modules', '.bin');
const HANG_MS = 10 * 60_000;
vi.setConfig({ testTimeout: 15 * 60_000, hookTimeout: 15 * 60_000 });

describe.each(ENGINES)('warm $engine ($title), real CLI against the fake LLM', (spec) => {
  let root: string;
  let llm: FakeLlm;
  let o: AssistantDirectory;
  let firstPid: number | undefined;

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), `service-warm-${spec.engine}-`));
    const home = path.join(root, 'home');
    const dir = path.join(root, 'assistant');
    fs.mkdirSync(home);
    fs.mkdirSync(dir);
    if (spec.engine === 'engine_c') seedOpenCodeDeps(path.join(home, '.config', 'opencode'));
    if (spec.engine === 'engine_d') {
      fs.mkdirSync(path.join(home, '.codex'), { recursive: true });
      fs.writeFileSync(path.join(home, '.codex', 'config.toml'), '[features]\nplugins = false\n');
    }
    llm = await startFakeLlm();
    const yaml = [
      'name: warm-e2e',
      `engine: ${spec.engine}`,
      ...(spec.yaml ?? []),
      'timeout: 600',
      'provider:',
      `  baseUrl: ${spec.baseUrl(llm)}`,
      '  apiKey: fake-key',
      '  model: fake-model',
    ];
    fs.writeFileSync(path.join(dir, 'service.yaml'), `${yaml.join('\n')}\n`);
    o = openAssistantDirectory({ dir, env: realEngineEnv(home, BIN), log: createSilentLogger() });
  });

  afterAll(async () => {
    await o?.assistant.drain(1_000);
    await o?.close();
    await llm?.close();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('the first turn starts the resident process; a follow-up goes to the same one, which holds the history', async () => {
    const first = await turn(o, 'RUN-TOOL warm turn one', 'chat');
    expect(completionOf(first).status).toBe('completed');
    expect(completionOf(first).finalText).toContain('FAKE-LLM-REPLY: RUN-TOOL warm turn one');
    const [warm] = o.assistant.engine.warm.processes();
    expect(warm?.sessionKey).toBe('chat');
    firstPid = warm!.pid;

    const spawned = watchSpawns();
    const second = await turn(o, 'warm turn two: what did I ask before?', 'chat');
    const seen = spawned.stop();
    expect(completionOf(second).status).toBe('completed');
    expect(completionOf(second).finalText).toContain('PREVIOUS-USER-MESSAGE: RUN-TOOL warm turn one');
    expect(o.assistant.engine.warm.processes().map((p) => p.pid)).toEqual([firstPid]);
    expect(seen, 'no engine process was started for the follow-up turn').toEqual([]);
  });

  it('an abort interrupts the turn through the engine; the process takes the next turn with the history', async () => {
    expect(firstPid, 'turn one must have run').toBeDefined();
    const before = llm.requests.length;
    const aborted = turn(o, 'HOLD-UNTIL-RELEASED turn to interrupt', 'chat');
    await until(
      () => llm.requests.slice(before).some((r) => JSON.stringify(r.body ?? '').includes('HOLD-UNTIL-RELEASED')),
      HANG_MS,
      'the held model request',
      50,
    );
    expect(o.assistant.abort('chat')).toBe(true);
    const events = await aborted;
    expect(completionOf(events).status).toBe('aborted');
    llm.release('HOLD-UNTIL-RELEASED');
    expect(isAlive(firstPid!), 'the interrupted process is still running').toBe(true);

    const after = await turn(o, 'warm turn four: and now?', 'chat');
    expect(completionOf(after).status).toBe('completed');
    expect(completionOf(after).finalText).toContain('PREVIOUS-USER-MESSAGE: RUN-TOOL warm turn one');
    expect(o.assistant.engine.warm.processes().map((p) => p.pid)).toEqual([firstPid]);
  });

  it('draining the assistant ends the warm process and everything it started', async () => {
    const pids = o.assistant.engine.warm.processes().map((p) => p.pid);
    expect(pids.length).toBe(1);
    await o.assistant.drain(1_000);
    expect(o.assistant.engine.warm.processes()).toEqual([]);
    expect(pids.filter(isAlive)).toEqual([]);
  });
});

// --- helpers ---

async function turn(o: AssistantDirectory, prompt: string, key: string): Promise<StreamEvent[]> {
  const events = await collect(o.assistant.chat(prompt, { sessionKey: key, source: 'e2e' }));
  assertEnding(events);
  return events;
}

/** Direct children of this test process that appear while watching (an engine started per turn would be one). */
function watchSpawns(): { stop(): number[] } {
  const before = new Set(childPids(process.pid));
  const seen = new Set<number>();
  const timer = setInterval(() => {
    for (const pid of childPids(process.pid)) if (!before.has(pid)) seen.add(pid);
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      for (const pid of childPids(process.pid)) if (!before.has(pid)) seen.add(pid);
      return [...seen];
    },
  };
}

describe('warm engine_b (Claude Code): a crash mid-turn', () => {
  it('fails that turn with the engine error; the next turn starts another process that resumes the session', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-warm-crash-'));
    const home = path.join(root, 'home');
    const dir = path.join(root, 'assistant');
    fs.mkdirSync(home);
    fs.mkdirSync(dir);
    const llm = await startFakeLlm();
    fs.writeFileSync(
      path.join(dir, 'service.yaml'),
      ['name: warm-crash', 'engine: engine_b', 'provider:', `  baseUrl: ${llm.url}`, '  apiKey: fake-key', ''].join('\n'),
    );
    const o = openAssistantDirectory({ dir, env: realEngineEnv(home, BIN), log: createSilentLogger() });
    try {
      expect(completionOf(await turn(o, 'crash turn one', 'k')).status).toBe('completed');
      const [pid] = o.assistant.engine.warm.processes().map((p) => p.pid);
      const before = llm.requests.length;
      const crashing = turn(o, 'HOLD-CRASH turn two', 'k');
      await until(() => llm.requests.slice(before).some((r) => JSON.stringify(r.body ?? '').includes('HOLD-CRASH')), HANG_MS, 'the held model request', 50);
      process.kill(pid!, 'SIGKILL');
      const crashed = completionOf(await crashing);
      expect(crashed.status).toBe('failed');
      expect(crashed.message).toMatch(/killed by SIGKILL/);
      llm.release('HOLD-CRASH');
      const next = completionOf(await turn(o, 'turn three after the crash', 'k'));
      expect(next.status).toBe('completed');
      expect(next.finalText).toContain('PREVIOUS-USER-MESSAGE: crash turn one');
      const [again] = o.assistant.engine.warm.processes().map((p) => p.pid);
      expect(again).toBeDefined();
      expect(again).not.toBe(pid);
    } finally {
      await o.assistant.drain(1_000);
      await o.close();
      await llm.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
