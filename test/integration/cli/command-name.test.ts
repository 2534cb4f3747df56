/**
 * `service` clashes with Debian's /usr/sbin/service when that comes first on PATH. Here a stand-in
 * for the system tool (a script printing what Debian's prints) sits in a temp directory first on
 * PATH, so the clash is the same on every machine; this CLI is linked under both of its names in
 * another temp directory, as `npm link` would put them in npm's bin directory.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { cliPath } from '../../helpers/cli.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS } from '../../helpers/wait.js';

let system: string;
let linked: string;
let work: string;
const nodeDir = path.dirname(process.execPath);

// Made again for each test: testdir() removes its folders after every test.
beforeEach(() => {
  system = testdir({}, 'fake-sbin-');
  fs.writeFileSync(
    path.join(system, 'service'),
    '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "service ver. 1.65.2"; else echo "$1: unrecognized service" >&2; exit 1; fi\n',
    { mode: 0o755 },
  );
  linked = testdir({}, 'npm-bin-');
  for (const name of ['service', 'agent-service']) fs.symlinkSync(cliPath, path.join(linked, name));
  work = testdir();
});

interface ShellResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One line typed into a fresh bash with this PATH (HOME and the fleet directory of the test's own). */
function bash(line: string, PATH: string, cwd = work): Promise<ShellResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', line], {
      cwd,
      env: { PATH, HOME: work, NO_COLOR: '1', SERVICE_FLEET_DIR: path.join(work, 'fleet'), SERVICE_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`\`${line}\` hung\n${stdout}\n${stderr}`));
    }, HANG_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const hint = (out: string, sub: string) =>
  out
    .split('\n')
    .find((l) => new RegExp(`\\s${sub}\\s+#`).test(l))
    ?.replace(/\s+#.*$/, '')
    .trim() ?? '';

describe('the system `service` first on PATH', () => {
  it('agent-service is this CLI; its hints say agent-service and work when pasted; doctor warns with the exact fix, which works', async () => {
    const PATH = [system, linked, nodeDir, '/usr/bin', '/bin'].join(':');
    expect((await bash('service --version', PATH)).stdout).toBe('service ver. 1.65.2\n'); // the clash, as a user meets it
    expect((await bash('agent-service --version', PATH)).stdout).toBe('0.1.0\n');

    const init = await bash('agent-service init clash-bot --yes', PATH);
    expect(init.code, init.stderr).toBe(0);
    expect(hint(init.stdout, 'doctor')).toBe('cd clash-bot && agent-service doctor');
    const doctor = await bash(hint(init.stdout, 'doctor'), PATH);
    expect(doctor.stdout).toMatch(/^pass {2}service\.yaml: valid/m);
    expect(doctor.stdout).toContain(
      `warn  command: \`service\` on PATH is ${system}/service, another program (on Debian and Ubuntu, the init-script tool); \`agent-service\` (${linked}/agent-service) is this CLI`,
    );
    const fix = `export PATH="${linked}:$PATH"`;
    expect(doctor.stdout).toContain(`      fix: type \`agent-service\` wherever the docs say \`service\`, or put ${linked} first in PATH: ${fix}`);

    // The fix as printed, then the README's bare `service`: this CLI, and doctor says so.
    const fixed = await bash(`${fix} && cd clash-bot && service doctor`, PATH);
    expect(fixed.stdout).toContain(`pass  command: \`service\` on PATH is this CLI (${linked}/service)`);
    expect(fixed.stdout).not.toMatch(/^warn/m);
  });

  it('nothing linked: the hints name the path of bin/service.js, and doctor says to npm link', async () => {
    const PATH = [system, nodeDir, '/usr/bin', '/bin'].join(':');
    const init = await bash(`node ${cliPath} init unlinked-bot --yes`, PATH);
    expect(init.code, init.stderr).toBe(0);
    expect(hint(init.stdout, 'doctor')).toBe(`cd unlinked-bot && ${cliPath} doctor`);
    const doctor = await bash(hint(init.stdout, 'doctor'), PATH);
    expect(doctor.stdout).toContain(`warn  command: \`service\` on PATH is ${system}/service, another program`);
    expect(doctor.stdout).toMatch(
      /fix: run `npm link` in \S+ \(it puts `service` and `agent-service` in \$\(npm prefix -g\)\/bin\), then type `agent-service`/,
    );
    expect(doctor.code).toBe(1); // the engine is missing here; the warning alone would not fail doctor
    expect(doctor.stdout).toMatch(/^FAIL {2}engine_b/m);
  });
});

describe('hints the CLI prints outside `init` and `doctor`', () => {
  it('--help and a usage error name the command as `agent-service`, the name that runs this CLI here', async () => {
    const PATH = [system, linked, nodeDir, '/usr/bin', '/bin'].join(':');
    const help = await bash('agent-service chat --help', PATH);
    expect(help.stdout).toMatch(/^Usage: agent-service chat \[options\]\n/);
    const wrong = await bash('agent-service chat --nope', PATH);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("error: unknown option '--nope'");
    expect(wrong.stderr).toContain('Usage: agent-service chat [options]');
    // npm's bin directory first: `service` is this CLI, and the usage says so.
    const first = await bash('service --help', [linked, system, nodeDir, '/usr/bin', '/bin'].join(':'));
    expect(first.stdout).toMatch(/^Usage: service \[options\] \[command\]\n/);
  });

  it("a second gateway on the directory: the hint names `agent-service chat` and `agent-service cron run`, not the system's `service`", async () => {
    const PATH = [system, linked, nodeDir, '/usr/bin', '/bin'].join(':');
    expect((await bash('agent-service init busy-bot --yes', PATH)).code).toBe(0);
    const first = spawn(path.join(linked, 'agent-service'), ['gateway', '-d', 'busy-bot'], {
      cwd: work,
      env: { PATH, HOME: work, NO_COLOR: '1', SERVICE_FLEET_DIR: path.join(work, 'fleet'), SERVICE_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => first.once('exit', (code) => resolve(code)));
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the first gateway did not start:\n${out}`)), HANG_MS);
        const seen = (d: Buffer) => {
          out += d.toString();
          if (out.includes('is serving on')) {
            clearTimeout(timer);
            resolve();
          }
        };
        first.stdout.on('data', seen);
        first.stderr.on('data', seen);
      });
      // The dashboard names its commands the same way (/api/status `cli`).
      const url = /is serving on (http:\/\/\S+?)\/?(?:\s|$)/.exec(out)?.[1];
      const token = fs.readFileSync(path.join(work, 'busy-bot', '.service', 'gateway-token'), 'utf8').trim();
      const status = (await (await fetch(`${url}/api/status`, { headers: { authorization: `Bearer ${token}` } })).json()) as { cli?: string };
      expect(status.cli).toBe('agent-service');
      const second = await bash('agent-service gateway -d busy-bot', PATH);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/^error: another gateway is already running on /m);
      expect(second.stderr).toContain('`agent-service chat` and `agent-service cron run` work beside it');
      expect(second.stderr).not.toMatch(/`service /);
    } finally {
      first.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
