import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundledBinDir } from '../../../src/core/engines/detect.js';
import { repoRoot, runCli, runCommand } from '../../helpers/cli.js';
import { startGatewayProcess } from '../../helpers/gateway-process.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';
import { freePort } from '../../helpers/free-port.js';

/** PATH without node_modules/.bin (npm test puts the real engine CLIs there). */
const bareEnvPath = [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter);

function standInEngine(name: string, version: string): string {
  const bin = testdir({}, 'service-bin-');
  fs.writeFileSync(path.join(bin, name), `#!/bin/sh\necho "${version}"\n`, { mode: 0o755 });
  return bin;
}

describe('service doctor', () => {
  it('passes with a stand-in engine on PATH, credentials and a free port', async () => {
    const port = await freePort();
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', `gateway: { port: ${port} }\n`) });
    const bin = standInEngine('claude', '9.9.9 (Claude Code)');
    const r = await runCommand(['doctor', '-d', dir], {
      env: { PATH: `${bin}${path.delimiter}${bareEnvPath}`, ANTHROPIC_API_KEY: 'k', HOME: dir, SERVICE_PORT: '' },
    });
    expect(r.stdout).toContain(`pass  engine_b (Claude Code): ${bin}/claude 9.9.9 (Claude Code)`);
    expect(r.stdout).toContain('pass  engine_b credentials: environment variable ANTHROPIC_API_KEY');
    expect(r.stdout).toContain(`pass  gateway port: 127.0.0.1:${port} is free`);
    expect(r.code).toBe(0);
  });

  it('fails without the engine on PATH and says how to install it', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_a') });
    const r = await runCommand(['doctor', '-d', dir], { env: { PATH: bareEnvPath, HOME: dir } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('FAIL  engine_a (Cursor agent CLI): agent / cursor-agent not found on PATH');
    expect(r.stdout).toContain("fix: install it with the vendor's installer");
  });

  it('an engine only this package bundles (node_modules/.bin, which npm scripts put on PATH): named, with the PATH line and the global install', async () => {
    const bundled = bundledBinDir();
    const version = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'node_modules', '@openai', 'codex', 'package.json'), 'utf8')) as { version: string })
      .version;
    const dir = testdir({ 'service.yaml': minimalYaml('codex') });
    const r = await runCommand(['doctor', '-d', dir], { env: { PATH: bareEnvPath, HOME: dir, OPENAI_API_KEY: '' } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `FAIL  engine_d (Codex CLI): codex is not on PATH; this package bundles it (${bundled}/codex, ${version}), which npm scripts such as \`npm start\` put on PATH and a shell does not`,
    );
    expect(r.stdout).toContain(`      fix: for this shell: export PATH="${bundled}:$PATH"; for every shell: npm install -g @openai/codex@${version}`);
    expect(r.stdout).toMatch(
      new RegExp(`^pass {2}engines on PATH: none; bundled with this package in ${bundled}, not on PATH: .*engine_d \\(Codex CLI: codex\\)`, 'm'),
    );

    // The fix as printed: doctor then finds it, says it is the bundled copy, and the engine check passes.
    // (npm_lifecycle_event unset: run from a shell, not from npm or npx, which would account for the folder on PATH)
    const fixed = await runCommand(['doctor', '-d', dir], {
      env: { PATH: `${bundled}${path.delimiter}${bareEnvPath}`, HOME: dir, OPENAI_API_KEY: 'k', npm_lifecycle_event: undefined },
    });
    expect(fixed.stdout, fixed.stdout).toMatch(new RegExp(`^pass {2}engine_d \\(Codex CLI\\): ${bundled}/codex .*\\(the copy this package bundles\\)$`, 'm'));
    expect(fixed.stdout).not.toContain('engine_d (Codex CLI): codex is not on PATH');
  });

  it('inside npm scripts (the bundled folder on PATH): a warning that a shell will not find it, with the fix', async () => {
    const bundled = bundledBinDir();
    const dir = testdir({ 'service.yaml': minimalYaml('engine_d') });
    const r = await runCommand(['doctor', '-d', dir], {
      env: { PATH: `${bundled}${path.delimiter}${bareEnvPath}`, npm_lifecycle_event: 'start', HOME: dir, OPENAI_API_KEY: 'k', SERVICE_PORT: '' },
    });
    expect(r.stdout).toMatch(
      new RegExp(
        `^warn {2}engine_d \\(Codex CLI\\): ${bundled}/codex .*: the copy this package bundles, on PATH here only because npm or npx put it there`,
        'm',
      ),
    );
    expect(r.stdout).toContain(`      fix: for this shell: export PATH="${bundled}:$PATH"`);
  });

  it("beside this assistant's own running gateway: says it runs (its lock's record, /health) instead of failing on the port", async () => {
    const port = await freePort();
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', `gateway: { port: ${port} }\n`) });
    const bin = standInEngine('claude', '9.9.9 (Claude Code)');
    const env = { PATH: `${bin}${path.delimiter}${bareEnvPath}`, ANTHROPIC_API_KEY: 'k', HOME: dir, SERVICE_PORT: '' };
    const doctor = () => runCommand(['doctor', '-d', dir], { env });
    const g = await startGatewayProcess(dir, ['--port', String(port)], env);
    try {
      const r = await doctor();
      expect(r.stdout).toContain(`pass  gateway: running: this assistant's gateway serves 127.0.0.1:${port} (pid ${g.child.pid}, ${g.url}, answers /health)`);
      expect(r.stdout).not.toMatch(/^FAIL/m);
      expect(r.code).toBe(0);
    } finally {
      await g.stop();
    }
    expect((await doctor()).stdout).toContain(`pass  gateway port: 127.0.0.1:${port} is free`);

    // Started on another port (--port 0): the configured one is free, and the running gateway is named.
    const other = await startGatewayProcess(dir, [], env);
    try {
      const r = await doctor();
      expect(r.stdout).toContain(`pass  gateway port: 127.0.0.1:${port} is free`);
      expect(r.stdout).toContain(`pass  gateway: running: this assistant's gateway serves ${other.url} (pid ${other.child.pid})`);
    } finally {
      await other.stop();
    }
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
      const r = await runCommand(['doctor', '--json', '-d', dir], {
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

  it('an invalid service.yaml is one FAIL line naming the problem, not one per engine', async () => {
    const ALL =
      'engine_a (Cursor agent CLI, alias cursor), engine_b (Claude Code, alias claude), engine_c (OpenCode, alias opencode), engine_d (Codex CLI, alias codex), engine_e (Gemini CLI, alias gemini), engine_f (Qwen Code, alias qwen), acp (ACP agent)';
    const fails = (out: string) => out.split('\n').filter((l) => l.startsWith('FAIL'));
    const dir = testdir({ 'service.yaml': 'name: x\nengine: nope\n' });
    const r = await runCommand(['doctor', '-d', dir], { env: { PATH: bareEnvPath, HOME: dir } });
    expect(r.code).toBe(1);
    expect(fails(r.stdout)).toEqual([`FAIL  service.yaml: engine: expected one of ${ALL}, got "nope"`]);
    expect(r.stdout).toContain(`      fix: edit ${dir}/service.yaml`);

    fs.writeFileSync(path.join(dir, 'service.yaml'), 'name: x\nengine: engine_b\nchannels:\n  - a: [\n');
    const malformed = await runCommand(['doctor', '-d', dir], { env: { PATH: bareEnvPath, HOME: dir } });
    expect(malformed.code).toBe(1);
    expect(fails(malformed.stdout)).toEqual([expect.stringMatching(/^FAIL {2}service\.yaml: line 5, column 1: /)]);

    // A file that is valid YAML with a clear engine: that engine is still checked.
    fs.writeFileSync(path.join(dir, 'service.yaml'), 'name: x\nengine: cursor\ntimeout: soon\n');
    const other = await runCommand(['doctor', '-d', dir], { env: { PATH: bareEnvPath, HOME: dir } });
    expect(fails(other.stdout)).toEqual([
      'FAIL  service.yaml: timeout: expected number, got string',
      'FAIL  engine_a (Cursor agent CLI): agent / cursor-agent not found on PATH',
    ]);
  });

  it('acp: checks the program acp.command names (a path relative to the assistant), and lists the engines on PATH', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('acp', 'acp:\n  command: ./agents/my-agent\n'), 'agents/my-agent': '#!/bin/sh\nexit 0\n' });
    fs.chmodSync(path.join(dir, 'agents', 'my-agent'), 0o755);
    const bin = standInEngine('gemini', '0.61.0');
    const r = await runCommand(['doctor', '-d', dir], { env: { PATH: `${bin}${path.delimiter}${bareEnvPath}`, HOME: dir, SERVICE_PORT: '' } });
    expect(r.stdout).toContain(`pass  acp (ACP agent): ${path.join(dir, 'agents', 'my-agent')} (version not probed: not a program this engine knows)`);
    expect(r.stdout).toContain('pass  acp credentials: the ACP agent ./agents/my-agent authenticates itself');
    expect(r.stdout).toContain('pass  engines on PATH: engine_e (Gemini CLI: gemini), acp (ACP agent: gemini)');

    fs.writeFileSync(path.join(dir, 'service.yaml'), minimalYaml('acp', 'acp:\n  command: gemini\n  args: [--acp]\n'));
    const known = await runCommand(['doctor', '-d', dir], { env: { PATH: `${bin}${path.delimiter}${bareEnvPath}`, HOME: dir, SERVICE_PORT: '' } });
    expect(known.stdout).toContain(`pass  acp (ACP agent): ${bin}/gemini 0.61.0`);

    fs.writeFileSync(path.join(dir, 'service.yaml'), minimalYaml('acp', 'acp:\n  command: no-such-agent\n'));
    const missing = await runCommand(['doctor', '-d', dir], { env: { PATH: bareEnvPath, HOME: dir, SERVICE_PORT: '' } });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain('FAIL  acp (ACP agent): the configured program no-such-agent is not installed, not executable or not on PATH');
    expect(missing.stdout).toContain('fix: install no-such-agent or set acp.command in service.yaml');
  });
});

describe('service status', () => {
  it('prints name, engine, model, skills and problems as JSON', async () => {
    const dir = testdir({
      'service.yaml': minimalYaml('engine_c', 'model: anthropic/claude-x\n'),
      'skills/notes/SKILL.md': '---\nname: notes\ndescription: Keep notes.\n---\n',
    });
    const r = await runCommand(['status', '--json', '-d', dir]);
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
    const r = await runCli(['status', '--json'], { cwd: dir }); // spawned: the .env of its working directory
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).model).toBe('claude-from-dotenv');
  });

  it('exits 1 listing config problems with the file; the fields that are valid are still shown', async () => {
    const dir = testdir({
      'service.yaml':
        'name: x\nengine: engine_b\nmodel: claude-x\ntimeout: -1\nchannels:\n  channel_e: { botToken: "123:abc" }\ntasks:\n  - { id: a, name: A, schedule: "0 9 * * *", prompt: hi }\n',
    });
    const r = await runCommand(['status', '-d', dir]);
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
    const r = await runCommand(['status', '-d', dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^Assistant {2}x {2}\(/m);
    expect(r.stdout).toMatch(/^Engine {5}\(see problems\)$/m);
    expect(r.stdout).toMatch(/^Tasks {6}\(see problems\)$/m);
    expect(r.stdout).toMatch(/^Model {6}\(engine default\)$/m);
    const json = JSON.parse((await runCommand(['status', '--json', '-d', dir])).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ name: 'x', engine: null, model: '', channels: [], tasks: null });
  });
});
