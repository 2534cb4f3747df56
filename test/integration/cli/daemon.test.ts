import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findOnPath } from '../../../src/core/util/find-on-path.js';
import { cliPath, runCli } from '../../helpers/cli.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, poll } from '../../helpers/wait.js';

/**
 * Issue 35, item 1: `service daemon install | uninstall | status | logs`, run for real with HOME in
 * a temp directory and stand-ins for systemctl and journalctl first on PATH (they record how they
 * were called): the unit text, the environment file, what is run, and, where this machine has
 * systemd-analyze, the unit verified by systemd itself.
 */
const TOKEN = 'daemon-token-0123456789abcdef';
const YAML = 'name: Ops Bot\nengine: engine_b\nchannels:\n  channel_e: { botToken: "${DAEMON_TG_TOKEN}" }\n';
const bin = fs.realpathSync(cliPath);

interface Machine {
  home: string;
  dir: string;
  calls: string;
  env: NodeJS.ProcessEnv;
}

/** A home, an assistant directory, and systemctl/journalctl stand-ins (SYSTEMCTL_FAIL=<verb> makes that verb exit 1). */
function machine(yaml = YAML): Machine {
  const root = testdir({}, 'service-daemon-');
  const fake = path.join(root, 'bin');
  const calls = path.join(root, 'calls.txt');
  fs.mkdirSync(fake);
  for (const tool of ['systemctl', 'journalctl']) {
    fs.writeFileSync(
      path.join(fake, tool),
      `#!/bin/sh\necho "${tool} $*" >> "${calls}"\nfor a in "$@"; do [ "$a" = "$SYSTEMCTL_FAIL" ] && exit 1; done\necho "${tool} stand-in: $*"\nexit 0\n`,
      { mode: 0o755 },
    );
  }
  const home = path.join(root, 'home');
  const dir = path.join(root, 'ops bot');
  fs.mkdirSync(home);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'service.yaml'), yaml);
  const env = { HOME: home, XDG_CONFIG_HOME: '', PATH: `${fake}${path.delimiter}${process.env.PATH}`, SERVICE_TOKEN: TOKEN, DAEMON_TG_TOKEN: 'tg-secret-777' };
  return { home, dir, calls, env };
}

const called = (m: Machine) => (fs.existsSync(m.calls) ? fs.readFileSync(m.calls, 'utf8').trim().split('\n') : []);
const unitFile = (m: Machine) => path.join(m.home, '.config', 'systemd', 'user', 'service-ops-bot.service');
const envFile = (m: Machine) => path.join(m.home, '.config', 'agent-service', 'service-ops-bot.env');

describe('service daemon (systemd, stand-ins for systemctl and journalctl)', () => {
  it('--print writes the unit to stdout and changes nothing: absolute node and bin, the directory, restart on failure, no secret', async () => {
    const m = machine();
    const r = await runCli(['daemon', 'install', '--print', '-d', m.dir], { env: m.env });
    expect(r.code).toBe(0);
    const unit = r.stdout;
    expect(unit).toContain(`ExecStart=${process.execPath} ${bin} gateway -d "${m.dir}"`);
    expect(path.isAbsolute(process.execPath)).toBe(true);
    expect(unit).toContain(`WorkingDirectory=${m.dir}\n`);
    expect(unit).toContain(`EnvironmentFile=${envFile(m)}\n`);
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^KillMode=mixed$/m);
    expect(unit).toMatch(/^WantedBy=default\.target$/m);
    expect(unit).not.toContain(TOKEN);
    expect(unit).not.toContain('tg-secret-777');
    expect(r.stderr).toContain('would set: SERVICE_TOKEN, DAEMON_TG_TOKEN; values not shown');
    expect(fs.readdirSync(m.home)).toEqual([]);
    expect(called(m)).toEqual([]);
  });

  it('install writes the unit and a 0600 environment file, enables and starts it; again keeps the file; status, logs, uninstall', async () => {
    const m = machine();
    // Before the install, status says so (not the service manager's "could not be found").
    const before = await runCli(['daemon', 'status', '-d', m.dir], { env: m.env });
    expect(before.code).toBe(4);
    expect(before.stderr).toContain(`service-ops-bot is not installed (no ${unitFile(m)}); install it with: `);
    expect(before.stderr).toContain(`daemon install -d '${m.dir}'`);
    expect(called(m)).toEqual([]);
    const r = await runCli(['daemon', 'install', '-d', m.dir, '--env', 'EXTRA_KEY'], { env: { ...m.env, EXTRA_KEY: 'x y' } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(fs.readFileSync(unitFile(m), 'utf8')).toContain(`ExecStart=${process.execPath} ${bin} gateway -d "${m.dir}"`);
    expect(fs.statSync(envFile(m)).mode & 0o777).toBe(0o600);
    const env = fs.readFileSync(envFile(m), 'utf8');
    expect(env).toContain(`SERVICE_TOKEN='${TOKEN}'\n`);
    expect(env).toContain("DAEMON_TG_TOKEN='tg-secret-777'\n");
    expect(env).toContain("EXTRA_KEY='x y'\n");
    expect(called(m)).toEqual([
      'systemctl --user daemon-reload',
      'systemctl --user enable service-ops-bot.service',
      'systemctl --user restart service-ops-bot.service',
    ]);
    expect(r.stdout).toContain('service-ops-bot is enabled and (re)started.');
    expect(r.stdout).toContain('loginctl enable-linger');

    // The owner rotates the token in the file; installing again (after a node upgrade) keeps it.
    fs.writeFileSync(envFile(m), env.replace(TOKEN, 'rotated-token-0123456789'));
    const again = await runCli(['daemon', 'install', '-d', m.dir, '--no-start'], { env: { ...m.env, NEW_ONE: '1' } });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`Kept ${envFile(m)} (mode 0600), added: nothing new`);
    expect(fs.readFileSync(envFile(m), 'utf8')).toContain("SERVICE_TOKEN='rotated-token-0123456789'");
    expect(called(m).slice(3)).toEqual(['systemctl --user daemon-reload', 'systemctl --user enable service-ops-bot.service']);

    const status = await runCli(['daemon', 'status', '-d', m.dir], { env: m.env });
    expect(status.stdout).toContain('systemctl stand-in: --user status service-ops-bot.service --no-pager');
    const logs = await runCli(['daemon', 'logs', '-d', m.dir, '-f', '-n', '5'], { env: m.env });
    expect(logs.stdout).toContain('journalctl stand-in: --user -u service-ops-bot.service -n 5 --no-pager -f');

    const gone = await runCli(['daemon', 'uninstall', '-d', m.dir], { env: m.env });
    expect(gone.code).toBe(0);
    expect(fs.existsSync(unitFile(m))).toBe(false);
    expect(fs.existsSync(envFile(m))).toBe(false);
    expect(called(m).slice(-2)).toEqual(['systemctl --user disable --now service-ops-bot.service', 'systemctl --user daemon-reload']);
  });

  it('refuses a unit name another directory holds, and says what is left to do when systemctl fails', async () => {
    const m = machine();
    expect((await runCli(['daemon', 'install', '-d', m.dir], { env: m.env })).code).toBe(0);
    const other = path.join(testdir(), 'twin');
    fs.mkdirSync(other);
    fs.writeFileSync(path.join(other, 'service.yaml'), YAML);
    const clash = await runCli(['daemon', 'install', '-d', other], { env: m.env });
    expect(clash.code).toBe(1);
    expect(clash.stderr).toContain('runs another assistant directory');
    expect(clash.stderr).toContain('--name <unit-name>');
    const named = await runCli(['daemon', 'install', '-d', other, '--name', 'service-twin'], { env: { ...m.env, SYSTEMCTL_FAIL: 'enable' } });
    expect(named.code).toBe(1);
    expect(named.stderr).toContain('`systemctl --user enable service-twin.service` exited with 1');
    expect(named.stderr).toContain('finish with: systemctl --user daemon-reload && systemctl --user enable service-twin.service');
    const system = await runCli(['daemon', 'install', '-d', m.dir, '--system', '--print'], { env: m.env });
    expect(system.stdout).toMatch(/^User=\S+$/m);
    expect(system.stdout).toContain('EnvironmentFile=/etc/agent-service/service-ops-bot.env');
    expect(system.stdout).toMatch(/^WantedBy=multi-user\.target$/m);
  });

  it("the unit's start command, as systemd would run it, serves the gateway of the directory", async () => {
    const m = machine('name: Ops Bot\nengine: engine_b\n');
    const unit = (await runCli(['daemon', 'install', '--print', '-d', m.dir], { env: m.env })).stdout;
    const exec = /^ExecStart=(\S+) (\S+) gateway -d "(.+)"$/m.exec(unit);
    expect(exec).not.toBeNull();
    const [, node = '', script = '', dir = ''] = exec ?? [];
    const child = spawn(node, [script, 'gateway', '-d', dir], {
      cwd: /^WorkingDirectory=(.*)$/m.exec(unit)?.[1],
      env: { PATH: /^Environment="?PATH=([^"\n]*)/m.exec(unit)?.[1], HOME: m.home, SERVICE_TOKEN: TOKEN, SERVICE_PORT: '0', SERVICE_FLEET_DIR: testdir() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const url = await poll(() => /serving on (http:\/\/\S+)/.exec(out)?.[1], HANG_MS, 'the gateway started from the unit');
      const status = await fetch(`${url}/api/status`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(((await status.json()) as { dir: string }).dir).toBe(m.dir);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});

const analyze = findOnPath(['systemd-analyze'], process.env.PATH ?? '');

describe.skipIf(!analyze)(
  `systemd-analyze verify (${analyze ? analyze : 'skipped: systemd-analyze is not on this machine, the unit text is checked above only'})`,
  () => {
    it('finds nothing to say about the user unit and the system unit, and does find a broken one', async () => {
      const m = machine();
      const runtime = testdir();
      for (const system of [false, true]) {
        const unit = (await runCli(['daemon', 'install', '--print', '-d', m.dir, ...(system ? ['--system'] : [])], { env: m.env })).stdout;
        const file = path.join(testdir(), 'service-ops-bot.service');
        fs.writeFileSync(file, unit);
        const envPath = /^EnvironmentFile=(.*)$/m.exec(unit)?.[1] ?? '';
        if (!system) {
          fs.mkdirSync(path.dirname(envPath), { recursive: true });
          fs.writeFileSync(envPath, "SERVICE_TOKEN='x'\n", { mode: 0o600 });
        }
        const verify = (f: string) =>
          spawnSync(analyze ?? '', [...(system ? [] : ['--user']), 'verify', f], { encoding: 'utf8', env: { ...process.env, XDG_RUNTIME_DIR: runtime } });
        const ok = verify(file);
        expect(ok.stderr, `${system ? 'system' : 'user'} unit`).toBe('');
        expect(ok.status).toBe(0);
        fs.writeFileSync(file, unit.replace('Restart=on-failure', 'Restart=sometimes'));
        expect(verify(file).stderr).toContain('Failed to parse service restart specifier');
      }
    });
  },
);
