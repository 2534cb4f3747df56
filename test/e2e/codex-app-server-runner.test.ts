/**
 * engine_d with skipPermissions false, through the engine runner with the real Codex CLI (`codex
 * app-server`, 0.169) against the scripted LLM on 127.0.0.1: abort while an approval waits (the
 * turn ends `aborted`, nothing it started is left running, the command never ran), and a thread id
 * Codex does not know (a new thread, with the runner's warning).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ApprovalAsk, ApprovalVerdict } from '../../src/core/approvals/approvals.js';
import { createEngineRunner, type EngineTurnRequest } from '../../src/core/engines/engine-runner.js';
import { createMemoryFailoverStore } from '../../src/core/engines/failover.js';
import type { AgentEvent } from '../../src/core/events.js';
import { createSilentLogger } from '../../src/core/logger.js';
import type { ProcessIdentity } from '../../src/core/store/types.js';
import { loadServiceConfig } from '../../src/definitions.js';
import { startFakeLlm, type FakeLlm } from '../fakes/fake-llm.js';
import { repoRoot } from '../helpers/cli.js';
import { until } from '../helpers/wait.js';

const HANG_MS = 5 * 60_000;
vi.setConfig({ testTimeout: 10 * 60_000, hookTimeout: 10 * 60_000 });

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('engine_d (real Codex, app-server) through the engine runner', () => {
  let root: string;
  let dir: string;
  let llm: FakeLlm;
  let runner: ReturnType<typeof createEngineRunner>;

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-e2e-codex-app-server-'));
    dir = path.join(root, 'assistant');
    const home = path.join(root, 'home');
    fs.mkdirSync(dir);
    fs.mkdirSync(path.join(home, '.codex'), { recursive: true });
    llm = await startFakeLlm();
    const yaml = [
      'name: e2e-codex',
      'engine: engine_d',
      'skipPermissions: false',
      'timeout: 600',
      'provider:',
      `  baseUrl: ${llm.url}/v1`,
      '  apiKey: fake-key',
      '  model: fake-model',
    ];
    fs.writeFileSync(path.join(dir, 'service.yaml'), `${yaml.join('\n')}\n`);
    runner = createEngineRunner({
      dir,
      stateDir: path.join(dir, '.service'),
      skillsDir: path.join(dir, 'skills'),
      log: createSilentLogger(),
      failover: createMemoryFailoverStore(),
      env: {
        HOME: home,
        PATH: [path.join(repoRoot, 'node_modules', '.bin'), path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter),
        NO_PROXY: '127.0.0.1',
        no_proxy: '127.0.0.1',
        LANG: 'C.UTF-8',
      },
    });
  });

  afterAll(async () => {
    await llm?.close();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  const run = async (req: Partial<EngineTurnRequest> & { prompt: string }) => {
    const events: AgentEvent[] = [];
    for await (const e of runner.run({ config: loadServiceConfig(dir, {}).config, ...req })) events.push(e);
    return events;
  };

  it('abort while the approval waits: the turn ends aborted, its processes are gone, the command never ran', async () => {
    const controller = new AbortController();
    const asked: ApprovalAsk[] = [];
    const processes = new Map<number, ProcessIdentity>();
    // Like the approvals registry: a waiting request is denied when the turn is aborted.
    const askApproval = (req: ApprovalAsk) =>
      new Promise<ApprovalVerdict>((resolve) => {
        asked.push(req);
        controller.signal.addEventListener('abort', () => resolve({ allow: false, message: 'stopped' }), { once: true });
      });
    const turn = run({
      prompt: 'ASK-TOOL please write a file',
      askApproval,
      signal: controller.signal,
      onProcesses: (ps) => {
        for (const p of ps) processes.set(p.pid, p);
      },
    });
    await until(() => asked.length === 1, HANG_MS, 'the approval request', 50);
    expect(processes.size).toBeGreaterThan(0);
    controller.abort();
    const events = await turn;
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'aborted' });
    expect(fs.existsSync(path.join(dir, 'FAKE-WRITTEN.txt'))).toBe(false);
    await until(() => [...processes.keys()].every((pid) => !isAlive(pid)), HANG_MS, 'every process of the turn gone', 50);
  });

  it('a thread id Codex does not know: a new thread, with the warning, and the answer', async () => {
    const bogus = '00000000-0000-4000-8000-000000000000';
    const events = await run({ prompt: 'hello, answer with text only', sessionId: bogus, askApproval: async () => ({ allow: false, message: 'no' }) });
    expect(events).toContainEqual({ type: 'warning', message: 'the previous engine session was not found; a new session was started' });
    expect(events.at(-1)).toMatchObject({ type: 'done', text: 'FAKE-LLM-REPLY: hello, answer with text only' });
    const session = events.find((e) => e.type === 'session');
    expect(session?.type === 'session' && session.sessionId).not.toBe(bogus);
  });
});
