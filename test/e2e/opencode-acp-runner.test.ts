/**
 * engine_c with skipPermissions false, through the engine runner with the real OpenCode CLI
 * (`opencode acp`, 1.18.33) against the scripted LLM on 127.0.0.1: abort while an approval waits
 * (the turn ends `aborted`, nothing it started is left running, the command never ran); a session
 * id OpenCode does not know (a new session, with the runner's warning); and a session of
 * `opencode run` (skipPermissions true) continued through `opencode acp` and back: both speak of the
 * same `ses_…` sessions in the same store, so switching skipPermissions keeps the conversation; a
 * key the provider rejects (OpenCode's error to session/prompt, a provider failure); and a project opencode.json that allows bash does not stop the question.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ApprovalAsk, ApprovalVerdict } from '../../src/core/approvals/approvals.js';
import type { EngineTurnRequest } from '../../src/core/engines/engine-runner.js';
import type { AgentEvent } from '../../src/core/events.js';
import type { ProcessIdentity } from '../../src/core/store/types.js';
import { loadServiceConfig } from '../../src/definitions.js';
import { startFakeLlm, type FakeLlm } from '../fakes/fake-llm.js';
import { createRealEngineRoot, createRealEngineRunner, type RealEngineRoot, seedOpenCodeDeps, fakeProviderYaml } from '../helpers/real-engine.js';
import { isAlive } from '../helpers/stand-in.js';
import { until } from '../helpers/wait.js';

const HANG_MS = 5 * 60_000;
vi.setConfig({ testTimeout: 10 * 60_000, hookTimeout: 10 * 60_000 });

describe('engine_c (real OpenCode, opencode acp) through the engine runner', () => {
  let root: RealEngineRoot;
  let dir: string;
  let llm: FakeLlm;
  let engine: ReturnType<typeof createRealEngineRunner>;

  beforeAll(async () => {
    llm = await startFakeLlm();
    root = createRealEngineRoot('service-e2e-opencode-acp-', [
      'name: e2e-opencode',
      'engine: engine_c',
      'model: service/fake-model',
      'timeout: 600',
      ...fakeProviderYaml(`${llm.url}/v1`),
    ]);
    dir = root.dir;
    // OpenCode installs a plugin package into every config folder it loads unless it looks installed.
    for (const d of [path.join(root.home, '.config', 'opencode'), path.join(dir, '.opencode')]) seedOpenCodeDeps(d);
    engine = createRealEngineRunner(root);
  });

  afterAll(async () => {
    await llm?.close();
    root?.remove();
  });

  const run = (skipPermissions: boolean, req: Partial<EngineTurnRequest> & { prompt: string }) => engine.run(req, { skipPermissions });
  const sessionOf = (events: AgentEvent[]) => events.flatMap((e) => (e.type === 'session' ? [e.sessionId] : [])).at(-1);
  const refuse = async (): Promise<ApprovalVerdict> => ({ allow: false, message: 'no' });

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
    const turn = run(false, {
      prompt: 'ASK-TOOL please write a file',
      askApproval,
      signal: controller.signal,
      onProcesses: (ps) => {
        for (const p of ps) processes.set(p.pid, p);
      },
    });
    await until(() => asked.length === 1, HANG_MS, 'the approval request', 50);
    expect(asked[0]).toMatchObject({ tool: 'execute', input: { command: expect.stringContaining('FAKE-WRITTEN.txt') } });
    expect(processes.size).toBeGreaterThan(0);
    controller.abort();
    const events = await turn;
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'aborted' });
    expect(fs.existsSync(path.join(dir, 'FAKE-WRITTEN.txt'))).toBe(false);
    await until(() => [...processes.keys()].every((pid) => !isAlive(pid)), HANG_MS, 'every process of the turn gone', 50);
  });

  it('a session id OpenCode does not know: a new session, with the warning, and the answer', async () => {
    const bogus = 'ses_000000000000AAAAAAAAAAAAAA';
    const events = await run(false, { prompt: 'hello, answer with text only', sessionId: bogus, askApproval: refuse });
    expect(events).toContainEqual({ type: 'warning', message: 'the previous engine session was not found; a new session was started' });
    expect(events.at(-1)).toMatchObject({ type: 'done', text: 'FAKE-LLM-REPLY: hello, answer with text only' });
    expect(sessionOf(events)).toMatch(/^ses_/);
    expect(sessionOf(events)).not.toBe(bogus);
  });

  it('an `opencode run` session goes on through `opencode acp` and back, with its history', async () => {
    const first = await run(true, { prompt: 'turn one via run' });
    expect(first.at(-1)).toMatchObject({ type: 'done', text: 'FAKE-LLM-REPLY: turn one via run' });
    const id = sessionOf(first);
    expect(id).toMatch(/^ses_/);

    const second = await run(false, { prompt: 'turn two via acp', sessionId: id, askApproval: refuse });
    expect(second.filter((e) => e.type === 'warning')).toEqual([]);
    expect(sessionOf(second)).toBe(id);
    expect(second.at(-1)).toMatchObject({ type: 'done', text: 'FAKE-LLM-REPLY: turn two via acp\nPREVIOUS-USER-MESSAGE: turn one via run' });

    const third = await run(true, { prompt: 'turn three via run', sessionId: id });
    expect(sessionOf(third)).toBe(id);
    expect(third.at(-1)).toMatchObject({ type: 'done', text: 'FAKE-LLM-REPLY: turn three via run\nPREVIOUS-USER-MESSAGE: turn one via run' });
  });

  it('a key the provider rejects: the turn fails with the provider error, not a hang', async () => {
    const base = loadServiceConfig(dir, {}).config;
    if (!base.provider) throw new Error('the test config has a provider');
    const events = await engine.run(
      { prompt: 'hello with a bad key', askApproval: refuse },
      { skipPermissions: false, provider: { ...base.provider, apiKey: 'wrong-key' } },
    );
    expect(events.at(-1)).toMatchObject({ type: 'error', kind: 'provider', message: expect.stringMatching(/incorrect api key/i) });
  });

  it("an opencode.json that allows bash does not stop the question: our config comes after the project's", async () => {
    const file = path.join(dir, 'opencode.json');
    fs.writeFileSync(file, JSON.stringify({ permission: { bash: 'allow', edit: 'allow' } }));
    try {
      const asked: ApprovalAsk[] = [];
      const events = await run(false, {
        prompt: 'ASK-TOOL with a permissive opencode.json',
        askApproval: async (req) => {
          asked.push(req);
          return { allow: false, message: 'no' };
        },
      });
      expect(asked.map((a) => a.tool)).toEqual(['execute']);
      expect(fs.existsSync(path.join(dir, 'FAKE-WRITTEN.txt'))).toBe(false);
      expect(events.at(-1)).toMatchObject({ type: 'done' });
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});
