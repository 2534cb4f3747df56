import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/** PATH without node_modules/.bin (npm test puts the real engine CLIs there). */
const bareEnvPath = [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter);

function standInEngine(name: string, version: string): string {
  const bin = testdir({}, 'service-bin-');
  fs.writeFileSync(path.join(bin, name), `#!/bin/sh\necho "${version}"\n`, { mode: 0o755 });
  return bin;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}

describe('service doctor', () => {
  it('passes with a stand-in engine on PATH, credentials and a free port', async () => {
    const port = await freePort();
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', `gateway: { port: ${port} }\n`) });
    const bin = standInEngine('claude', '9.9.9 (Claude Code)');
    const r = await runCli(['doctor', '-d', dir], {
      env: { PATH: `${bin}${path.delimiter}${bareEnvPath}`, ANTHROPIC_API_KEY: 'k', HOME: dir, SERVICE_PORT: '' },
    });
    expect(r.stdout).toContain(`pass  engine_b (Claude Code): ${bin}/claude 9.9.9 (Claude Code)`);
    expect(r.stdout).toContain('pass  engine_b credentials: environment variable ANTHROPIC_API_KEY');
    expect(r.stdout).toContain(`pass  gateway port: 127.0.0.1:${port} is free`);
    expect(r.code).toBe(0);
  });

  it('fails without the engine on PATH and says how to install it', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_d') });
    const r = await runCli(['doctor', '-d', dir], { env: { PATH: bareEnvPath, HOME: dir, OPENAI_API_KEY: '' } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('FAIL  engine_d (Codex CLI): codex not found on PATH');
    expect(r.stdout).toContain('fix: npm install -g @openai/codex');
  });

  it('fails on missing credentials, an occupied port and a missing custom adapter', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const dir = testdir({
        'service.yaml': minimalYaml('engine_b', `gateway: { port: ${port} }\nchannels:\n  mine: { _adapter: ./missing-adapter.mjs }\n`),
      });
      const bin = standInEngine('claude', '1.0.0');
      const r = await runCli(['doctor', '--json', '-d', dir], {
        env: {
          PATH: `${bin}${path.delimiter}${bareEnvPath}`,
          HOME: dir,
          ANTHROPIC_API_KEY: '',
          CLAUDE_CODE_OAUTH_TOKEN: '',
          ANTHROPIC_AUTH_TOKEN: '',
          SERVICE_PORT: '',
        },
      });
      expect(r.code).toBe(1);
      const report = JSON.parse(r.stdout) as { ok: boolean; checks: Array<{ ok: boolean; title: string; detail: string }> };
      expect(report.ok).toBe(false);
      const failed = report.checks.filter((c) => !c.ok).map((c) => c.title);
      expect(failed).toEqual(['engine_b credentials', 'channel mine', 'gateway port']);
    } finally {
      blocker.close();
    }
  });

  it('fails on an invalid service.yaml and checks every engine', async () => {
    const dir = testdir({ 'service.yaml': 'name: x\nengine: nope\n' });
    const r = await runCli(['doctor', '-d', dir], { env: { PATH: bareEnvPath, HOME: dir } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('FAIL  service.yaml: engine: expected one of engine_a|engine_b|engine_c|engine_d|engine_e|engine_f|acp, got "nope"');
    for (const id of ['engine_a', 'engine_b', 'engine_c', 'engine_d', 'engine_e', 'engine_f', 'acp']) expect(r.stdout).toContain(`FAIL  ${id} `);
    expect(r.stdout).toContain('FAIL  acp (ACP agent): gemini / qwen / claude-code-acp / codex-acp not found on PATH');
  });

  it('acp: checks the program acp.command names (a path relative to the assistant), and lists the engines on PATH', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('acp', 'acp:\n  command: ./agents/my-agent\n'), 'agents/my-agent': '#!/bin/sh\nexit 0\n' });
    fs.chmodSync(path.join(dir, 'agents', 'my-agent'), 0o755);
    const bin = standInEngine('gemini', '0.61.0');
    const r = await runCli(['doctor', '-d', dir], { env: { PATH: `${bin}${path.delimiter}${bareEnvPath}`, HOME: dir, SERVICE_PORT: '' } });
    expect(r.stdout).toContain(`pass  acp (ACP agent): ${path.join(dir, 'agents', 'my-agent')} (version not probed: not a program this engine knows)`);
    expect(r.stdout).toContain('pass  acp credentials: the ACP agent ./agents/my-agent authenticates itself');
    expect(r.stdout).toContain('pass  engines on PATH: engine_e (Gemini CLI: gemini), acp (ACP agent: gemini)');

    fs.writeFileSync(path.join(dir, 'service.yaml'), minimalYaml('acp', 'acp:\n  command: gemini\n  args: [--acp]\n'));
    const known = await runCli(['doctor', '-d', dir], { env: { PATH: `${bin}${path.delimiter}${bareEnvPath}`, HOME: dir, SERVICE_PORT: '' } });
    expect(known.stdout).toContain(`pass  acp (ACP agent): ${bin}/gemini 0.61.0`);

    fs.writeFileSync(path.join(dir, 'service.yaml'), minimalYaml('acp', 'acp:\n  command: no-such-agent\n'));
    const missing = await runCli(['doctor', '-d', dir], { env: { PATH: bareEnvPath, HOME: dir, SERVICE_PORT: '' } });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain('FAIL  acp (ACP agent): no-such-agent not found on PATH');
    expect(missing.stdout).toContain('fix: install no-such-agent or set acp.command in service.yaml');
  });
});

describe('service status', () => {
  it('prints name, engine, model, skills and problems as JSON', async () => {
    const dir = testdir({
      'service.yaml': minimalYaml('engine_c', 'model: anthropic/claude-x\n'),
      'skills/notes/SKILL.md': '---\nname: notes\ndescription: Keep notes.\n---\n',
    });
    const r = await runCli(['status', '--json', '-d', dir]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      name: 'test-bot',
      engine: 'engine_c',
      model: 'anthropic/claude-x',
      skills: [{ name: 'notes', description: 'Keep notes.' }],
      problems: [],
    });
  });

  it('reads ${VAR} values from a .env file in the working directory', async () => {
    const dir = testdir({
      'service.yaml': minimalYaml('engine_b', 'model: ${MODEL_FROM_DOTENV}\n'),
      '.env': 'MODEL_FROM_DOTENV=claude-from-dotenv\n',
    });
    const r = await runCli(['status', '--json'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).model).toBe('claude-from-dotenv');
  });

  it('exits 1 listing config problems with the file; the fields that are valid are still shown', async () => {
    const dir = testdir({
      'service.yaml':
        'name: x\nengine: engine_b\nmodel: claude-x\ntimeout: -1\nchannels:\n  channel_e: { botToken: "123:abc" }\ntasks:\n  - { id: a, name: A, schedule: "0 9 * * *", prompt: hi }\n',
    });
    const r = await runCli(['status', '-d', dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`${dir}/service.yaml: timeout: must be greater than 0`);
    expect(r.stdout).toMatch(/^Assistant {2}x {2}\(/m);
    expect(r.stdout).toMatch(/^Engine {5}engine_b$/m);
    expect(r.stdout).toMatch(/^Model {6}claude-x$/m);
    expect(r.stdout).toMatch(/^Channels {3}channel_e$/m);
    expect(r.stdout).toMatch(/^Tasks {6}1$/m);
    expect(r.stdout).not.toContain('(unknown)');
  });

  it('an invalid field is marked "(see problems)", never shown as its default', async () => {
    const dir = testdir({ 'service.yaml': 'name: x\nengine: engine_zz\ntasks: 3\n' });
    const r = await runCli(['status', '-d', dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^Assistant {2}x {2}\(/m);
    expect(r.stdout).toMatch(/^Engine {5}\(see problems\)$/m);
    expect(r.stdout).toMatch(/^Tasks {6}\(see problems\)$/m);
    expect(r.stdout).toMatch(/^Model {6}\(engine default\)$/m);
    const json = JSON.parse((await runCli(['status', '--json', '-d', dir])).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ name: 'x', engine: null, model: '', channels: [], tasks: null });
  });
});
