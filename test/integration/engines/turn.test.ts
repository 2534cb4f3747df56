import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMemoryFailoverStore } from '../../../src/core/engines/failover.js';
import { createEngineRunner, type EngineTurnRequest } from '../../../src/core/engines/engine-runner.js';
import type { AgentEvent } from '../../../src/core/events.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';

const ENGINES = ['engine_a', 'engine_b', 'engine_c', 'engine_d', 'engine_e', 'engine_f', 'acp'] as const;

function setup(engine: string, extraYaml = '', files: Record<string, string> = {}) {
  const standIn = createStandIn();
  const dir = testdir({
    'service.yaml': `name: tester\nengine: ${engine}\n${engine === 'engine_c' ? 'model: fake/fake-model\n' : ''}${engine === 'acp' ? 'acp:\n  command: acp-agent\n' : ''}${extraYaml}`,
    'skills/notes/SKILL.md': '---\nname: notes\ndescription: Keep notes.\n---\nBody\n',
    ...files,
  });
  const failover = createMemoryFailoverStore();
  const runner = createEngineRunner({
    dir,
    stateDir: path.join(dir, '.service'),
    skillsDir: path.join(dir, 'skills'),
    log: createSilentLogger(),
    failover,
    env: { ...process.env, ...standIn.env, ANTHROPIC_API_KEY: 'env-key' },
  });
  const config = () => loadServiceConfig(dir, {}).config;
  const run = async (req: Partial<EngineTurnRequest> & { prompt: string }) => {
    const events: AgentEvent[] = [];
    for await (const e of runner.run({ config: config(), ...req })) events.push(e);
    return events;
  };
  return { dir, standIn, runner, run, failover };
}

const terminal = (events: AgentEvent[]) => events.find((e) => e.type === 'done' || e.type === 'error');
const sessionOf = (events: AgentEvent[]) => events.filter((e) => e.type === 'session').at(-1)?.sessionId;

describe.each(ENGINES)('%s through the engine runner (stand-in executable)', (engine) => {
  it('returns the session id and resumes it on the next turn', async () => {
    const t = setup(engine);
    const first = await t.run({ prompt: 'hello one' });
    const id = sessionOf(first);
    expect(id).toBeTruthy();
    const second = await t.run({ prompt: 'hello two', sessionId: id });
    expect(terminal(second)).toMatchObject({ type: 'done', text: 'ECHO: hello two\nTURN: 2' });
    expect(sessionOf(second)).toBe(id);
  });

  it('a resume the engine does not know is retried once without it, transparently', async () => {
    const t = setup(engine);
    const bogus = engine === 'engine_c' ? 'ses_doesnotexist0000000000' : '00000000-0000-4000-8000-000000000000';
    const events = await t.run({ prompt: 'after bogus', sessionId: bogus });
    expect(terminal(events)).toMatchObject({ type: 'done', text: 'ECHO: after bogus\nTURN: 1' });
    expect(sessionOf(events)).not.toBe(bogus);
    expect(events.some((e) => e.type === 'warning' && /new session/.test(e.message))).toBe(true);
    // An ACP agent stays up after refusing the session: the new one is created in the same process.
    expect(t.standIn.runs().filter((r) => r.engine)).toHaveLength(engine === 'acp' ? 1 : 2);
  });

  it('any other failure of a resumed turn is reported as it is, not retried', async () => {
    const t = setup(engine);
    const id = sessionOf(await t.run({ prompt: 'first' }));
    const events = await t.run({ prompt: 'FAIL: the session store is broken', sessionId: id });
    expect(terminal(events)).toMatchObject({ type: 'error', message: expect.stringContaining('the session store is broken') });
    expect(t.standIn.runs().filter((r) => r.engine)).toHaveLength(2);
  });
});

describe('assistant context and engine files', () => {
  it('engine_b: CLAUDE.md keeps the user part, the generated section holds system prompt, persona and skills', async () => {
    const t = setup('engine_b', 'systemPrompt: Always answer in French.\npersona:\n  role: support agent\n  tone: warm\n  boundaries: [no refunds]\n', {
      'CLAUDE.md': '# My own notes\nKeep this.\n',
    });
    await t.run({ prompt: 'hi' });
    const text = fs.readFileSync(path.join(t.dir, 'CLAUDE.md'), 'utf8');
    expect(text.startsWith('# My own notes\nKeep this.\n')).toBe(true);
    expect(text).toContain('## System Instructions\n\nAlways answer in French.');
    expect(text.match(/Always answer in French/g)).toHaveLength(1);
    expect(text).toContain('- Role: support agent');
    expect(text).toContain('- **notes** (`skills/notes/SKILL.md`): Keep notes.');
    expect(fs.readlinkSync(path.join(t.dir, '.claude/skills/notes'))).toBe('../../skills/notes');
    const before = fs.statSync(path.join(t.dir, 'CLAUDE.md')).mtimeMs;
    await t.run({ prompt: 'again' });
    expect(fs.statSync(path.join(t.dir, 'CLAUDE.md')).mtimeMs).toBe(before); // unchanged content is not rewritten
    // the prompt itself carries no system prompt
    expect(t.standIn.runs()[0]?.prompt).toBe('hi');
  });

  it('engine_c and engine_d read AGENTS.md; engine_a gets its own rules file and a permissions file where deny wins', async () => {
    for (const engine of ['engine_c', 'engine_d']) {
      const t = setup(engine, 'systemPrompt: Be brief.\n');
      await t.run({ prompt: 'hi' });
      expect(fs.readFileSync(path.join(t.dir, 'AGENTS.md'), 'utf8')).toContain('Be brief.');
    }
    const a = setup('engine_a', 'permissions:\n  allowedCommands: [ls, rm]\n  deniedCommands: [rm]\n  deniedPaths: [secrets/**]\n');
    await a.run({ prompt: 'hi' });
    expect(fs.readFileSync(path.join(a.dir, '.cursor/rules/service-assistant.mdc'), 'utf8')).toMatch(/^---\n[\s\S]*alwaysApply: true/);
    expect(JSON.parse(fs.readFileSync(path.join(a.dir, '.cursor/cli.json'), 'utf8'))).toEqual({
      permissions: { allow: ['Shell(ls)'], deny: ['Read(secrets/**)', 'Write(secrets/**)', 'Shell(rm)'] },
    });
  });
});

describe('configuration each engine honours', () => {
  it('engine_b: offline defaults, skip-permissions as root, oauthToken replaces the API key, model flag, prompt on stdin', async () => {
    const t = setup('engine_b', 'model: opus\noauthToken: sub-token\n');
    await t.run({ prompt: 'a prompt that must not be in argv' });
    const [run] = t.standIn.runs();
    expect(run?.argv).toEqual(expect.arrayContaining(['--dangerously-skip-permissions', '--model', 'opus', '--include-partial-messages']));
    expect(JSON.stringify(run?.argv)).not.toContain('a prompt that must not be in argv');
    const env = run?.env as Record<string, string>;
    expect(env.CLAUDE_CODE_OAUTH_TOKEN).toBe('sub-token');
    expect(env.ANTHROPIC_API_KEY).toBeUndefined();
    expect(env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe('1');
    expect(env.CLAUDE_CODE_MAX_RETRIES).toBe('2');
    if (process.getuid?.() === 0) expect(env.IS_SANDBOX).toBe('1');
  });

  it('images: engine_d gets --image, the others a path in the prompt', async () => {
    const d = setup('engine_d');
    await d.run({ prompt: 'look', images: ['/tmp/a.png'] });
    expect(d.standIn.runs()[0]?.argv).toEqual(expect.arrayContaining(['--image', '/tmp/a.png']));
    const b = setup('engine_b');
    await b.run({ prompt: 'look', images: ['/tmp/a.png'] });
    expect(b.standIn.runs()[0]?.prompt).toContain('- /tmp/a.png');
  });

  it('engine_d: codex options follow the spec rules and go through -c overrides (exec resume rejects the flags)', async () => {
    const t = setup('engine_d', 'codex:\n  sandbox: read-only\n  search: true\n  addDirs: [../shared]\n');
    const id = sessionOf(await t.run({ prompt: 'one' }));
    await t.run({ prompt: 'two', sessionId: id });
    const [fresh, resumed] = t.standIn.runs();
    for (const r of [fresh, resumed]) {
      const argv = r?.argv as string[];
      expect(argv[0]).toBe('--search');
      expect(argv).toEqual(expect.arrayContaining(['-c', 'sandbox_mode="read-only"', '-c', 'approval_policy="on-request"']));
      expect(argv).toContain(`sandbox_workspace_write.writable_roots=["${path.resolve(t.dir, '../shared')}"]`);
      expect(argv).not.toContain('--sandbox');
      expect(argv).toContain('analytics.enabled=false');
      expect(argv.at(-1)).toBe('-');
    }
    expect((resumed?.argv as string[]).slice(1, 3)).toEqual(['exec', 'resume']);
    const unrestricted = setup('engine_d');
    await unrestricted.run({ prompt: 'x' });
    expect(unrestricted.standIn.runs()[0]?.argv).toContain('--dangerously-bypass-approvals-and-sandbox');
  });

  it('engine_c: native command with arguments, routed provider in OPENCODE_CONFIG_CONTENT', async () => {
    const t = setup('engine_c', 'provider:\n  baseUrl: http://127.0.0.1:9/v1\n  apiKey: prov-key\n  model: served-model\n');
    await t.run({ prompt: '', command: { name: 'review', arguments: 'src/app.ts' } });
    const [run] = t.standIn.runs();
    expect(run?.argv).toEqual(expect.arrayContaining(['--command', 'review', 'src/app.ts', '--model', 'service/served-model']));
    const env = run?.env as Record<string, string>;
    const oc = JSON.parse(env.OPENCODE_CONFIG_CONTENT ?? '{}') as { provider: Record<string, { options: { baseURL: string } }> };
    expect(oc.provider.service?.options.baseURL).toBe('http://127.0.0.1:9/v1');
    expect(env.SERVICE_PROVIDER_API_KEY).toBe('prov-key');
    expect(env.OPENCODE_DISABLE_AUTOUPDATE).toBe('1');
  });

  it('engine_c rejects a model that is not provider/model', () => {
    const dir = testdir({ 'service.yaml': 'name: x\nengine: engine_c\nmodel: gpt-4o\n' });
    expect(() => loadServiceConfig(dir, {})).toThrow(/model: engine_c needs a model in the form provider\/model/);
  });
});

describe("mcp servers in each engine's own config", () => {
  const MCP =
    'mcp:\n  files:\n    command: mcp-files\n    args: [--root, data]\n    env: { MCP_TOKEN: t0k }\n  remote:\n    url: https://mcp.example/sse\n    type: sse\n';

  it('engine_b: an --mcp-config file in mcpServers form', async () => {
    const t = setup('engine_b', MCP);
    await t.run({ prompt: 'hi' });
    const argv = t.standIn.runs()[0]?.argv as string[];
    const file = argv[argv.indexOf('--mcp-config') + 1] ?? '';
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({
      mcpServers: {
        files: { command: 'mcp-files', args: ['--root', 'data'], env: { MCP_TOKEN: 't0k' } },
        remote: { type: 'sse', url: 'https://mcp.example/sse', headers: {} },
      },
    });
  });

  it('engine_c: local and remote servers in the OpenCode config', async () => {
    const t = setup('engine_c', MCP);
    await t.run({ prompt: 'hi' });
    const oc = JSON.parse((t.standIn.runs()[0]?.env as Record<string, string>).OPENCODE_CONFIG_CONTENT ?? '{}') as { mcp: unknown };
    expect(oc.mcp).toEqual({
      files: { type: 'local', command: ['mcp-files', '--root', 'data'], environment: { MCP_TOKEN: 't0k' }, enabled: true },
      remote: { type: 'remote', url: 'https://mcp.example/sse', headers: {}, enabled: true },
    });
  });

  it('engine_d: -c mcp_servers overrides that name variables; the secret values stay out of argv', async () => {
    const t = setup('engine_d', `${MCP}  bearer:\n    url: https://mcp.example/mcp\n    headers: { Authorization: "Bearer h3ader-s3cret" }\n`);
    await t.run({ prompt: 'hi' });
    const run = t.standIn.runs()[0];
    const argv = run?.argv as string[];
    expect(argv).toEqual(
      expect.arrayContaining([
        'mcp_servers.files.command="mcp-files"',
        'mcp_servers.files.args=["--root", "data"]',
        'mcp_servers.files.env_vars=["MCP_TOKEN"]',
        'mcp_servers.remote.url="https://mcp.example/sse"',
        'mcp_servers.bearer.url="https://mcp.example/mcp"',
        'mcp_servers.bearer.env_http_headers={ Authorization = "SERVICE_MCP_SECRET_1" }',
      ]),
    );
    expect(argv.join(' ')).not.toMatch(/t0k|h3ader-s3cret/); // ps and /proc/<pid>/cmdline are readable by everyone
    expect(run?.env).toMatchObject({ MCP_TOKEN: 't0k', SERVICE_MCP_SECRET_1: 'Bearer h3ader-s3cret' });
  });

  it("engine_a: merged into .cursor/mcp.json next to the user's own servers; ours removed when dropped", async () => {
    const t = setup('engine_a', MCP, { '.cursor/mcp.json': JSON.stringify({ mcpServers: { mine: { command: 'my-server' } } }) });
    await t.run({ prompt: 'hi' });
    const read = () => JSON.parse(fs.readFileSync(path.join(t.dir, '.cursor/mcp.json'), 'utf8')) as { mcpServers: Record<string, unknown> };
    expect(Object.keys(read().mcpServers).sort()).toEqual(['files', 'mine', 'remote']);
    fs.writeFileSync(
      path.join(t.dir, 'service.yaml'),
      fs.readFileSync(path.join(t.dir, 'service.yaml'), 'utf8').replace(/mcp:[\s\S]*$/, 'mcp:\n  files:\n    command: mcp-files\n'),
    );
    await t.run({ prompt: 'again' });
    expect(Object.keys(read().mcpServers).sort()).toEqual(['files', 'mine']);
  });
});

describe('provider failover', () => {
  const yaml =
    'provider:\n  baseUrl: http://primary.test\n  apiKey: k1\n  failoverThreshold: 2\n  fallback:\n    baseUrl: http://fallback.test\n    apiKey: k2\n';
  const baseUrlOf = (run: Record<string, unknown> | undefined) => (run?.env as Record<string, string>).ANTHROPIC_BASE_URL;

  it('switches to the fallback after threshold consecutive provider errors; timeouts and engine errors do not count', async () => {
    const t = setup('engine_b', `timeout: 1\n${yaml}`);
    await t.run({ prompt: 'PROVIDER-ERROR' });
    await t.run({ prompt: 'HANG' }); // our timeout: not a provider failure
    await t.run({ prompt: 'FAIL: engine side' }); // engine error: not a provider failure
    expect(t.standIn.runs().map(baseUrlOf)).toEqual(['http://primary.test', 'http://primary.test', 'http://primary.test']);
    expect((await t.failover.readFailover()).consecutiveFailures).toBe(1);
    await t.run({ prompt: 'PROVIDER-ERROR' });
    await t.run({ prompt: 'now on fallback' });
    const runs = t.standIn.runs();
    expect(baseUrlOf(runs.at(-1))).toBe('http://fallback.test');
    expect((runs.at(-1)?.env as Record<string, string>).ANTHROPIC_API_KEY).toBe('k2');
  });

  it('a success resets the count', async () => {
    const t = setup('engine_b', yaml);
    await t.run({ prompt: 'PROVIDER-ERROR' });
    await t.run({ prompt: 'fine' });
    await t.run({ prompt: 'PROVIDER-ERROR' });
    expect(await t.failover.readFailover()).toEqual({ consecutiveFailures: 1 });
  });
});
