/**
 * Tool approvals from chat with engine_c and the real OpenCode CLI (devDependency, 1.18.33) against
 * the scripted LLM on 127.0.0.1, through our own code: openAssistantDirectory → assistant.chat →
 * engine_c, which with skipPermissions false runs `opencode acp` (not `opencode run`) with
 * `permission: {bash: ask, edit: ask, webfetch: ask}` in OPENCODE_CONFIG_CONTENT → OpenCode's
 * `session/request_permission` → an `approval_request` in the turn's stream → answered as the owner.
 * The test writes no opencode.json: what makes OpenCode ask is ours.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AssistantDirectory, openAssistantDirectory } from '../../src/assistant-directory.js';
import type { ApprovalDecision } from '../../src/core/approvals/approvals.js';
import type { StreamEvent } from '../../src/core/events.js';
import { createSilentLogger } from '../../src/core/logger.js';
import { FAKE_ASKING_COMMAND, startFakeLlm, type FakeLlm } from '../fakes/fake-llm.js';
import { runAnsweringApprovals } from '../helpers/approval-chat.js';
import { createRealEngineRoot, type RealEngineRoot, seedOpenCodeDeps, fakeProviderYaml } from '../helpers/real-engine.js';

vi.setConfig({ testTimeout: 15 * 60_000, hookTimeout: 15 * 60_000 });

describe('engine_c (real OpenCode, opencode acp): a shell command approved or denied by the person', () => {
  let root: RealEngineRoot;
  let dir: string;
  let llm: FakeLlm;
  let opened: AssistantDirectory;
  const written = () => root.written;
  let firstSession: string | undefined;

  beforeAll(async () => {
    llm = await startFakeLlm();
    root = createRealEngineRoot('service-e2e-opencode-approvals-', [
      'name: e2e-opencode-approvals',
      'engine: engine_c',
      'model: service/fake-model',
      'skipPermissions: false',
      'timeout: 600',
      ...fakeProviderYaml(`${llm.url}/v1`),
    ]);
    dir = root.dir;
    // OpenCode installs a plugin package into every config folder it loads unless it looks installed.
    for (const d of [path.join(root.home, '.config', 'opencode'), path.join(dir, '.opencode')]) seedOpenCodeDeps(d);
    fs.mkdirSync(path.join(dir, '.opencode', 'command'));
    fs.writeFileSync(path.join(dir, '.opencode', 'command', 'fakecmd.md'), 'CMD-TEMPLATE says $ARGUMENTS\n');
    opened = openAssistantDirectory({ dir, env: root.env, log: createSilentLogger() });
  });

  afterAll(async () => {
    opened?.close();
    await llm?.close();
    root?.remove();
  });

  const turn = (prompt: string, key: string, decision: ApprovalDecision) => runAnsweringApprovals(opened.assistant, prompt, key, decision);

  it('denied: OpenCode asked with the command, the file does not exist, the turn completes', async () => {
    const { requests, completion } = await turn('ASK-TOOL deny', 'chat', 'deny');
    expect(requests.map((r) => [r.tool, r.summary])).toEqual([['execute', FAKE_ASKING_COMMAND]]);
    expect(fs.existsSync(written())).toBe(false);
    expect(completion).toMatchObject({ status: 'completed' });
    // OpenCode 1.18 ends the turn after a denial without a word; the turn says why.
    expect(completion?.finalText).toBe('(The agent stopped: execute was denied.)');
    expect(completion?.sessionId).toMatch(/^ses_/);
    expect(fs.existsSync(path.join(dir, 'opencode.json'))).toBe(false);
    firstSession = completion?.sessionId;
  });

  it('allowed, on the same session: the command runs, its tool events stream and the agent answers after it', async () => {
    const { events, requests, completion } = await turn('ASK-TOOL allow', 'chat', 'allow');
    expect(requests).toHaveLength(1);
    expect(fs.readFileSync(written(), 'utf8')).toBe('FAKE-TOOL-OUTPUT\n');
    expect(events.some((e) => e.type === 'tool_call')).toBe(true);
    expect(events.some((e) => e.type === 'text')).toBe(true);
    expect(completion).toMatchObject({ status: 'completed' });
    expect(completion?.finalText).toContain('FAKE-LLM-REPLY: ASK-TOOL allow');
    // The ACP session of the first turn was resumed (a fallback would start a new `ses_`).
    expect(completion?.sessionId).toBe(firstSession);
  });

  it('a native command (POST /command) runs on this path too: `opencode acp` takes it as its slash command', async () => {
    const events: StreamEvent[] = [];
    for await (const e of opened.assistant.command('fakecmd', 'arg-one', { sessionKey: 'command', source: 'api', sender: 'e2e' })) events.push(e);
    expect(events.find((e) => e.type === 'completion')).toMatchObject({ status: 'completed', finalText: 'FAKE-LLM-REPLY: CMD-TEMPLATE says arg-one' });
  });
});
