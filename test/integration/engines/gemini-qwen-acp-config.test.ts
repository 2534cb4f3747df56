/**
 * What engine_e (Gemini CLI), engine_f (Qwen Code) and acp make of service.yaml: argv, environment,
 * the files they read, through the engine runner with the stand-in executables (which log what they got).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngineRunner, type EngineTurnRequest } from '../../../src/core/engines/engine-runner.js';
import { createMemoryFailoverStore } from '../../../src/core/engines/failover.js';
import type { AgentEvent } from '../../../src/core/events.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { acpAgentScript, createStandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';

function setup(engine: string, yaml = '', files: Record<string, string> = {}) {
  const standIn = createStandIn();
  const dir = testdir({
    'service.yaml': `name: tester\nengine: ${engine}\n${yaml}`,
    'skills/notes/SKILL.md': '---\nname: notes\ndescription: Keep notes.\n---\nBody\n',
    ...files,
  });
  const runner = createEngineRunner({
    dir,
    stateDir: path.join(dir, '.service'),
    skillsDir: path.join(dir, 'skills'),
    log: createSilentLogger(),
    failover: createMemoryFailoverStore(),
    env: { ...process.env, ...standIn.env, GEMINI_API_KEY: '', OPENAI_API_KEY: '' },
  });
  const run = async (req: Partial<EngineTurnRequest> & { prompt: string }) => {
    const events: AgentEvent[] = [];
    for await (const e of runner.run({ config: loadServiceConfig(dir, {}).config, ...req })) events.push(e);
    return events;
  };
  const lastRun = () =>
    standIn
      .runs()
      .filter((r) => r.engine)
      .at(-1) as { argv: string[]; env: Record<string, string>; prompt: string };
  const write = (yamlText: string) => fs.writeFileSync(path.join(dir, 'service.yaml'), `name: tester\nengine: ${engine}\n${yamlText}`);
  return { dir, standIn, run, lastRun, write };
}

/** Make `name` in the stand-ins' bin directory the stand-in ACP agent (as `gemini --acp` would be). */
function actAsAcpAgent(binDir: string, name: string): void {
  fs.writeFileSync(path.join(binDir, name), `#!/bin/sh\nexec "${process.execPath}" "${acpAgentScript}" "$@"\n`, { mode: 0o755 });
}

const PROVIDER = 'model: fake-model\nprovider:\n  baseUrl: http://127.0.0.1:9/llm\n  apiKey: routed-key\n';
const MCP = 'mcp:\n  files:\n    command: mcp-files\n    args: [--root, data]\n  web:\n    url: https://mcp.example/mcp\n';

describe('engine_e (Gemini CLI)', () => {
  it('prompt on stdin, stream-json, yolo, --model, the routed endpoint in its variables, no relaunch, trusted workspace', async () => {
    const t = setup('engine_e', PROVIDER);
    await t.run({ prompt: 'a prompt that must not be in argv' });
    const run = t.lastRun();
    expect(run.argv).toEqual(['--output-format', 'stream-json', '--approval-mode', 'yolo', '--model', 'fake-model']);
    expect(run.prompt).toBe('a prompt that must not be in argv');
    expect(run.env).toMatchObject({
      GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9/llm',
      GEMINI_API_KEY: 'routed-key',
      GEMINI_CLI_NO_RELAUNCH: 'true',
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
    });
    const u = setup('engine_e', 'skipPermissions: false\n');
    await u.run({ prompt: 'hi' });
    expect(u.lastRun().argv).toEqual(['--output-format', 'stream-json', '--approval-mode', 'default']);
  });

  it("GEMINI.md section, skill links, and our keys in .gemini/settings.json beside the user's, removed when no longer wanted", async () => {
    const userSettings = { ui: { theme: 'Dracula' }, mcpServers: { mine: { command: 'my-server' } } };
    const t = setup('engine_e', `${PROVIDER}${MCP}`, { 'GEMINI.md': '# My notes\n', '.gemini/settings.json': JSON.stringify(userSettings) });
    await t.run({ prompt: 'hi' });
    const gemini = fs.readFileSync(path.join(t.dir, 'GEMINI.md'), 'utf8');
    expect(gemini.startsWith('# My notes\n')).toBe(true);
    expect(gemini).toContain('**notes**');
    expect(fs.existsSync(path.join(t.dir, '.agents', 'skills', 'notes', 'SKILL.md'))).toBe(true);
    const settings = () => JSON.parse(fs.readFileSync(path.join(t.dir, '.gemini', 'settings.json'), 'utf8'));
    expect(settings()).toEqual({
      ui: { theme: 'Dracula' },
      mcpServers: {
        mine: { command: 'my-server' },
        files: { command: 'mcp-files', args: ['--root', 'data'], env: {} },
        web: { httpUrl: 'https://mcp.example/mcp', headers: {} },
      },
      security: { auth: { selectedType: 'gemini-api-key' } },
      general: { maxAttempts: 3 },
    });
    t.write('');
    await t.run({ prompt: 'hi' });
    expect(settings()).toEqual(userSettings);
  });

  it('a settings file that is not plain JSON is not overwritten: the turn fails naming it', async () => {
    const t = setup('engine_e', PROVIDER, { '.gemini/settings.json': '{ // my comment\n "ui": {} }\n' });
    const events = await t.run({ prompt: 'hi' });
    expect(events.find((e) => e.type === 'error')).toMatchObject({ message: expect.stringContaining('settings.json is not plain JSON') });
    expect(fs.readFileSync(path.join(t.dir, '.gemini', 'settings.json'), 'utf8')).toContain('// my comment');
  });

  it('without a provider nor MCP servers, no settings file is created', async () => {
    const t = setup('engine_e');
    await t.run({ prompt: 'hi' });
    expect(fs.existsSync(path.join(t.dir, '.gemini'))).toBe(false);
  });
});

describe('engine_f (Qwen Code)', () => {
  it('prompt on stdin, partial messages, yolo, OpenAI variables and --auth-type with a provider, our defaults file', async () => {
    const t = setup('engine_f', PROVIDER);
    await t.run({ prompt: 'secret prompt' });
    const run = t.lastRun();
    expect(run.argv).toEqual([
      '--output-format',
      'stream-json',
      '--include-partial-messages',
      '--approval-mode',
      'yolo',
      '--model',
      'fake-model',
      '--auth-type',
      'openai',
    ]);
    expect(run.prompt).toBe('secret prompt');
    expect(run.env).toMatchObject({
      OPENAI_BASE_URL: 'http://127.0.0.1:9/llm',
      OPENAI_API_KEY: 'routed-key',
      OPENAI_MODEL: 'fake-model',
      QWEN_CODE_SUPPRESS_YOLO_WARNING: '1',
      QWEN_CODE_SYSTEM_DEFAULTS_PATH: path.join(t.dir, '.service', 'engines', 'engine_f-defaults.json'),
    });
    const defaults = JSON.parse(fs.readFileSync(run.env.QWEN_CODE_SYSTEM_DEFAULTS_PATH ?? '', 'utf8'));
    expect(defaults.memory).toEqual({ enableManagedAutoMemory: false, enableManagedAutoDream: false });
    expect(fs.readFileSync(path.join(t.dir, 'AGENTS.md'), 'utf8')).toContain('**notes**');
  });

  it('MCP servers in an --mcp-config file', async () => {
    const t = setup('engine_f', MCP);
    await t.run({ prompt: 'hi' });
    const argv = t.lastRun().argv;
    const file = argv[argv.indexOf('--mcp-config') + 1] ?? '';
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({
      mcpServers: { files: { command: 'mcp-files', args: ['--root', 'data'], env: {} }, web: { type: 'http', url: 'https://mcp.example/mcp', headers: {} } },
    });
  });

  it('numTurns is passed on; no cost', async () => {
    const t = setup('engine_f');
    const events = await t.run({ prompt: 'hi' });
    expect(events.find((e) => e.type === 'usage')).toEqual({ type: 'usage', inputTokens: 10, outputTokens: 5, numTurns: 2 });
  });
});

describe('acp', () => {
  it('acp.command, acp.args and acp.env reach the agent; the prompt goes through the protocol, not argv', async () => {
    const t = setup('acp', 'acp:\n  command: acp-agent\n  args: [--resume-capability]\n  env: { AGENT_SETTING: on }\n');
    await t.run({ prompt: 'hello' });
    const run = t.standIn.runs().find((r) => r.engine) as { argv: string[] };
    expect(run.argv).toEqual(['--resume-capability']);
    expect(t.standIn.runs().some((r) => JSON.stringify(r.received ?? '').includes('"text":"hello"'))).toBe(true);
  });

  it('a known agent gets the provider in its own variables (gemini: and --model); acp.env wins', async () => {
    const gemini = setup('acp', `${PROVIDER}acp:\n  command: gemini\n  args: [--acp]\n  env: { GEMINI_API_KEY: from-acp-env }\n`);
    actAsAcpAgent(gemini.standIn.binDir, 'gemini');
    await gemini.run({ prompt: 'hi' });
    const g = gemini.lastRun();
    expect(g.argv).toEqual(['--acp', '--model', 'fake-model']);
    expect(g.env).toMatchObject({ GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9/llm', GEMINI_API_KEY: 'from-acp-env', GEMINI_CLI_NO_RELAUNCH: 'true' });
    const qwen = setup('acp', `${PROVIDER}acp:\n  command: qwen\n  args: [--acp]\n`);
    actAsAcpAgent(qwen.standIn.binDir, 'qwen');
    await qwen.run({ prompt: 'hi' });
    expect(qwen.lastRun().env).toMatchObject({ OPENAI_BASE_URL: 'http://127.0.0.1:9/llm', OPENAI_API_KEY: 'routed-key', OPENAI_MODEL: 'fake-model' });
    expect(fs.existsSync(path.join(qwen.dir, '.service', 'engines', 'engine_f-defaults.json'))).toBe(true);
  });

  it('acp.contextFile names the file the context goes to', async () => {
    const t = setup('acp', 'acp:\n  command: acp-agent\n  contextFile: CONTEXT.md\n');
    await t.run({ prompt: 'hi' });
    expect(fs.readFileSync(path.join(t.dir, 'CONTEXT.md'), 'utf8')).toContain('**notes**');
    expect(fs.existsSync(path.join(t.dir, 'AGENTS.md'))).toBe(false);
  });

  it('engine acp without acp.command is a config problem with the path', () => {
    const t = setup('acp');
    expect(() => loadServiceConfig(t.dir, {})).toThrow(/acp\.command: engine acp needs acp\.command/);
  });
});
