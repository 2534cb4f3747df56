/**
 * Tool approvals from chat with real ACP agents (devDependencies) against the scripted LLM on
 * 127.0.0.1, through our own code: openAssistantDirectory → assistant.chat → the acp engine →
 * the agent's `session/request_permission` → an `approval_request` in the turn's stream →
 * answered as the owner (what POST /approve and /allow, /deny do). Gemini CLI and Qwen Code ask
 * before a writing shell command in their default modes; OpenCode asks where its opencode.json
 * says `ask` (its own provider block here: the acp engine routes `provider` for gemini and qwen only).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AssistantDirectory, openAssistantDirectory } from '../../src/assistant-directory.js';
import type { ApprovalDecision } from '../../src/core/approvals/approvals.js';
import { createSilentLogger } from '../../src/core/logger.js';
import { FAKE_ASKING_COMMAND, startFakeLlm, type FakeLlm } from '../fakes/fake-llm.js';
import { runAnsweringApprovals } from '../helpers/approval-chat.js';
import { fakeProviderYaml, realEngineEnv } from '../helpers/real-engine.js';

vi.setConfig({ testTimeout: 15 * 60_000, hookTimeout: 15 * 60_000 });

interface AgentSpec {
  title: string;
  command: string;
  args: string[];
  /** What the request names as the tool (ACP's `_meta.toolName`, else the tool call's kind). */
  tool: string;
  yaml: (llm: FakeLlm) => string[];
  /** Files the agent needs in the assistant folder and HOME. */
  seed?: (dir: string, home: string, llm: FakeLlm) => void;
  /** What the turn ends with after a denial: the agent's own answer, or our note when it stops without a word. */
  afterDenial: string;
}

const provider = fakeProviderYaml;

const AGENTS: AgentSpec[] = [
  {
    title: 'gemini --acp',
    command: 'gemini',
    args: ['--acp'],
    tool: 'execute',
    yaml: (llm) => provider(llm.url),
    afterDenial: 'FAKE-LLM-REPLY: ASK-TOOL deny',
  },
  {
    title: 'qwen --acp',
    command: 'qwen',
    args: ['--acp'],
    tool: 'run_shell_command',
    yaml: (llm) => provider(`${llm.url}/v1`),
    afterDenial: '(The agent stopped: run_shell_command was denied.)',
  },
  {
    title: 'opencode acp',
    command: 'opencode',
    args: ['acp'],
    tool: 'execute',
    yaml: () => [],
    seed: (dir, home, llm) => {
      // OpenCode installs a plugin package into every config folder it loads unless it looks installed (real-engines.test.ts).
      for (const d of [path.join(home, '.config', 'opencode'), path.join(dir, '.opencode')]) {
        const deps = { '@opencode-ai/plugin': '*' };
        fs.mkdirSync(path.join(d, 'node_modules'), { recursive: true });
        fs.writeFileSync(path.join(d, 'package.json'), JSON.stringify({ dependencies: deps }));
        fs.writeFileSync(path.join(d, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages: { '': { dependencies: deps } } }));
      }
      const model = { name: 'fake-model', tool_call: true, limit: { context: 128_000, output: 16_384 } };
      const config = {
        autoupdate: false,
        share: 'disabled',
        permission: { bash: 'ask', edit: 'ask' },
        provider: {
          local: {
            npm: '@ai-sdk/openai-compatible',
            name: 'local',
            options: { baseURL: `${llm.url}/v1`, apiKey: 'fake-key' },
            models: { 'fake-model': model },
          },
        },
        model: 'local/fake-model',
        small_model: 'local/fake-model',
      };
      fs.writeFileSync(path.join(dir, 'opencode.json'), JSON.stringify(config));
    },
    afterDenial: '(The agent stopped: execute was denied.)',
  },
];

describe.each(AGENTS)('acp ($title, real CLI): a shell call approved or denied by the person', (spec) => {
  let root: string;
  let dir: string;
  let llm: FakeLlm;
  let opened: AssistantDirectory;
  const written = () => path.join(dir, 'FAKE-WRITTEN.txt');

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-e2e-acp-approvals-'));
    dir = path.join(root, 'assistant');
    const home = path.join(root, 'home');
    fs.mkdirSync(dir);
    fs.mkdirSync(home);
    llm = await startFakeLlm();
    spec.seed?.(dir, home, llm);
    const yaml = [
      'name: e2e-acp-approvals',
      'engine: acp',
      'acp:',
      `  command: ${spec.command}`,
      `  args: ${JSON.stringify(spec.args)}`,
      'skipPermissions: false',
      'timeout: 600',
      ...spec.yaml(llm),
    ];
    fs.writeFileSync(path.join(dir, 'service.yaml'), `${yaml.join('\n')}\n`);
    const env = realEngineEnv(home);
    opened = openAssistantDirectory({ dir, env, log: createSilentLogger() });
  });

  afterAll(async () => {
    opened?.close();
    await llm?.close();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  const turn = (prompt: string, key: string, decision: ApprovalDecision) => runAnsweringApprovals(opened.assistant, prompt, key, decision);

  it('denied: the agent asked with the command, the file does not exist, the turn completes', async () => {
    const { requests, completion } = await turn('ASK-TOOL deny', 'deny', 'deny');
    expect(requests.map((r) => [r.tool, r.summary])).toEqual([[spec.tool, FAKE_ASKING_COMMAND]]);
    expect(fs.existsSync(written())).toBe(false);
    expect(completion).toMatchObject({ status: 'completed' });
    expect(completion?.finalText).toContain(spec.afterDenial);
  });

  it('allowed: the command runs and the agent answers after it', async () => {
    const { requests, completion } = await turn('ASK-TOOL allow', 'allow', 'allow');
    expect(requests).toHaveLength(1);
    expect(fs.readFileSync(written(), 'utf8')).toBe('FAKE-TOOL-OUTPUT\n');
    expect(completion).toMatchObject({ status: 'completed' });
    expect(completion?.finalText).toContain('FAKE-LLM-REPLY: ASK-TOOL allow');
  });
});
