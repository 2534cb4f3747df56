import { describe, expect, it } from 'vitest';
import type { EngineTurn } from '../../../src/core/engines/types.js';
import { opencode } from '../../../src/core/engines/opencode.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { testdir } from '../../helpers/testdir.js';

/**
 * engine_c's command line: `opencode run --format json` with skipPermissions true (the default),
 * exactly as before approvals came; `opencode acp` with skipPermissions false, the same config in
 * OPENCODE_CONFIG_CONTENT plus the permissions that make OpenCode ask.
 */
const turnFor = (yaml: string, extra: Partial<EngineTurn> = {}): EngineTurn => ({
  prompt: 'hi "there"',
  dir: '/w',
  stateDir: '/w/.service',
  images: [],
  config: loadServiceConfig(testdir({ 'service.yaml': `name: t\nengine: engine_c\n${yaml}` }), {}).config,
  isRoot: false,
  ...extra,
});

const FLAGS = {
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
};
const ROUTED = {
  service: {
    npm: '@ai-sdk/openai-compatible',
    name: 'service provider',
    options: { baseURL: 'http://127.0.0.1:9/v1', apiKey: '{env:SERVICE_PROVIDER_API_KEY}' },
    models: { 'fake-model': { name: 'fake-model', tool_call: true, limit: { context: 128_000, output: 16_384 } } },
  },
};
const configOf = (env: Record<string, string | undefined>) => JSON.parse(env.OPENCODE_CONFIG_CONTENT ?? '{}');

describe('engine_c invocation, skipPermissions true (the default): opencode run, unchanged', () => {
  it('a plain turn: run --format json --model, the prompt on stdin, allow-all config', () => {
    const inv = opencode.buildInvocation(turnFor('model: anthropic/claude-sonnet-4-5\n', { model: 'anthropic/claude-sonnet-4-5' }));
    expect(inv).toEqual({
      args: ['run', '--format', 'json', '--model', 'anthropic/claude-sonnet-4-5'],
      env: { OPENCODE_CONFIG_CONTENT: JSON.stringify({ autoupdate: false, share: 'disabled', permission: { '*': 'allow' } }), ...FLAGS },
      stdin: 'hi "there"',
    });
    expect(opencode.createParser(turnFor('')).conversation).toBeUndefined();
  });

  it('a resumed turn on a routed provider with an MCP server', () => {
    const yaml = 'model: service/fake-model\nmcp:\n  files:\n    command: node\n    args: [srv.js]\n';
    const turn = turnFor(yaml, {
      sessionId: 'ses_abc',
      model: 'fake-model',
      endpoint: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k1', model: 'fake-model' },
    });
    const inv = opencode.buildInvocation(turn);
    expect(inv.args).toEqual(['run', '--format', 'json', '--session', 'ses_abc', '--model', 'service/fake-model']);
    expect(inv.stdin).toBe('hi "there"');
    expect(inv.env).toEqual({ OPENCODE_CONFIG_CONTENT: inv.env.OPENCODE_CONFIG_CONTENT, ...FLAGS, SERVICE_PROVIDER_API_KEY: 'k1' });
    expect(inv.env.OPENCODE_CONFIG_CONTENT).toBe(
      JSON.stringify({
        autoupdate: false,
        share: 'disabled',
        permission: { '*': 'allow' },
        provider: ROUTED,
        model: 'service/fake-model',
        small_model: 'service/fake-model',
        mcp: { files: { type: 'local', command: ['node', 'srv.js'], environment: {}, enabled: true } },
      }),
    );
  });

  it('a native command: --command and its arguments in argv, no stdin', () => {
    const inv = opencode.buildInvocation(turnFor('', { command: { name: 'review', arguments: 'src/a.ts' } }));
    expect(inv.args).toEqual(['run', '--format', 'json', '--command', 'review', 'src/a.ts']);
    expect(inv.stdin).toBeUndefined();
  });
});

describe('engine_c invocation, skipPermissions false: opencode acp', () => {
  it('argv is only `acp`; the config asks for bash, edit and webfetch and keeps provider, model and MCP', () => {
    const yaml = 'skipPermissions: false\nmodel: service/fake-model\nmcp:\n  files:\n    command: node\n    args: [srv.js]\n';
    const turn = turnFor(yaml, {
      sessionId: 'ses_abc',
      model: 'fake-model',
      endpoint: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k1', model: 'fake-model' },
    });
    const inv = opencode.buildInvocation(turn);
    expect(inv.args).toEqual(['acp']);
    expect(inv.stdin).toBeUndefined();
    expect(inv.env).toMatchObject({ ...FLAGS, SERVICE_PROVIDER_API_KEY: 'k1' });
    expect(configOf(inv.env)).toEqual({
      autoupdate: false,
      share: 'disabled',
      permission: { bash: 'ask', edit: 'ask', webfetch: 'ask' },
      provider: ROUTED,
      model: 'service/fake-model',
      small_model: 'service/fake-model',
      mcp: { files: { type: 'local', command: ['node', 'srv.js'], environment: {}, enabled: true } },
    });
    expect(opencode.approvals).toBe('conversation');
  });

  it('without a routed provider the model goes in the config (opencode acp has no --model)', () => {
    const inv = opencode.buildInvocation(turnFor('skipPermissions: false\nmodel: anthropic/claude-sonnet-4-5\n', { model: 'anthropic/claude-sonnet-4-5' }));
    expect(configOf(inv.env).model).toBe('anthropic/claude-sonnet-4-5');
  });

  it('the conversation resumes the saved session, sends no MCP servers of its own and the prompt as text', () => {
    const sent: Array<Record<string, unknown>> = [];
    const c = opencode.createParser(turnFor('skipPermissions: false\n', { sessionId: 'ses_abc' }));
    c.conversation?.open({ send: (l) => sent.push(JSON.parse(l)), end: () => undefined });
    c.parseLine(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { protocolVersion: 1, agentCapabilities: { loadSession: true } } }));
    expect(sent[1]).toMatchObject({ method: 'session/load', params: { cwd: '/w', mcpServers: [], sessionId: 'ses_abc' } });
    c.parseLine(JSON.stringify({ jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Session not found' } }));
    expect(sent[2]).toMatchObject({ method: 'session/new' });
  });

  it('a native command is sent as its slash command', async () => {
    const sent: Array<Record<string, unknown>> = [];
    const c = opencode.createParser(turnFor('skipPermissions: false\n', { command: { name: 'review', arguments: 'src/a.ts' } }));
    c.conversation?.open({ send: (l) => sent.push(JSON.parse(l)), end: () => undefined });
    c.parseLine(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { protocolVersion: 1, agentCapabilities: {} } }));
    c.parseLine(JSON.stringify({ jsonrpc: '2.0', id: 2, result: { sessionId: 'ses_new' } }));
    expect(sent.find((m) => m.method === 'session/prompt')?.params).toMatchObject({ prompt: [{ type: 'text', text: '/review src/a.ts' }] });
  });
});
