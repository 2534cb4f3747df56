/**
 * engine_d with skipPermissions false, through the engine runner with the real Codex CLI (`codex
 * app-server`, 0.169) against the scripted LLM on 127.0.0.1: abort while an approval waits (the
 * turn ends `aborted`, nothing it started is left running, the command never ran), and a thread id
 * Codex does not know (a new thread, with the runner's warning).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ApprovalAsk, ApprovalVerdict } from '../../src/core/approvals/approvals.js';
import type { EngineTurnRequest } from '../../src/core/engines/engine-runner.js';
import type { ProcessIdentity } from '../../src/core/store/types.js';
import { startFakeLlm, type FakeLlm } from '../fakes/fake-llm.js';
import { createRealEngineRoot, createRealEngineRunner, type RealEngineRoot, fakeProviderYaml } from '../helpers/real-engine.js';
import { isAlive } from '../helpers/stand-in.js';
import { until } from '../helpers/wait.js';

const HANG_MS = 5 * 60_000;
vi.setConfig({ testTimeout: 10 * 60_000, hookTimeout: 10 * 60_000 });

describe('engine_d (real Codex, app-server) through the engine runner', () => {
  let root: RealEngineRoot;
  let dir: string;
  let llm: FakeLlm;
  let engine: ReturnType<typeof createRealEngineRunner>;

  beforeAll(async () => {
    llm = await startFakeLlm();
    root = createRealEngineRoot('service-e2e-codex-app-server-', [
      'name: e2e-codex',
      'engine: engine_d',
      'skipPermissions: false',
      'timeout: 600',
      ...fakeProviderYaml(`${llm.url}/v1`),
    ]);
    dir = root.dir;
    fs.mkdirSync(path.join(root.home, '.codex'), { recursive: true });
    engine = createRealEngineRunner(root);
  });

  afterAll(async () => {
    await llm?.close();
    root?.remove();
  });

  const run = (req: Partial<EngineTurnRequest> & { prompt: string }) => engine.run(req);

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
