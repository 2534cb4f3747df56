/**
 * What a new user meets: the README's set-up run in a clean copy of the repository, in shells whose
 * PATH holds a system `service` (a stand-in for Debian's /usr/sbin/service, so the clash is the same
 * on every machine), before and after npm's bin directory.
 *
 * The copy holds every file git tracks or would track (the working tree as a clone of it would
 * have it: no dist/, no node_modules/). One part of the README's `npm install` is stood in for:
 * node_modules/ is a symlink to this checkout's, the tree that `npm install` builds from the same
 * package-lock.json (a second install would download it all again). Everything else is the real
 * thing: `npm link` (whose prepare script builds dist/ in the copy) into a throwaway npm prefix and
 * cache (nothing global on this machine changes), the documented commands typed into bash, the hints
 * the CLI prints pasted back into bash, and `npm start`.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/cli.js';
import { HANG_MS, poll, until } from '../../helpers/wait.js';

/** Deadline of a step that builds (tsc) or runs npm: only a hang gets near it on a busy two-core machine. */
const BUILD_MS = 5 * 60_000;

let root: string;
let clone: string;
let prefix: string;
let work: string;
/** Where the stand-in for the system's `service` lives (first of the system directories on PATH). */
let sbin: string;
let baseEnv: NodeJS.ProcessEnv;

/** PATH with npm's global bin directory ahead of /usr/sbin (a user prefix, nvm) or behind it (Debian's npm as root: /usr/bin). */
const pathWithNpmBin = (where: 'first' | 'last') => {
  const system = [sbin, '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
  if (!system.includes(path.dirname(process.execPath))) system.push(path.dirname(process.execPath));
  const bin = path.join(prefix, 'bin');
  return (where === 'first' ? [bin, ...system] : [...system, bin]).join(path.delimiter);
};

interface ShellResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One command line typed into bash (a fresh, non-interactive shell: no aliases, the given PATH). */
function bash(line: string, opts: { cwd: string; path: string }): Promise<ShellResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', line], {
      cwd: opts.cwd,
      env: { ...baseEnv, PATH: opts.path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`\`${line}\` hung\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, BUILD_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The "Next:" line of `service init` for a subcommand, exactly as printed (comment removed). */
function hintFor(initOutput: string, sub: string): string {
  const line = initOutput.split('\n').find((l) => new RegExp(`\\s${sub}\\s+#`).test(l));
  if (!line) throw new Error(`no hint for ${sub} in:\n${initOutput}`);
  return line.replace(/\s+#.*$/, '').trim();
}

/** What our doctor prints first for a fresh assistant, and never what the system tool prints. */
function expectOurDoctor(r: ShellResult): void {
  expect(r.stdout, r.stderr).toMatch(/^pass {2}service\.yaml: valid \(/m);
  expect(r.stderr).not.toMatch(/unrecognized service/);
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-first-run-'));
  clone = path.join(root, 'service');
  prefix = path.join(root, 'npm-global');
  work = path.join(root, 'work');
  fs.mkdirSync(work);
  fs.mkdirSync(path.join(root, 'home'));
  sbin = path.join(root, 'sbin');
  fs.mkdirSync(sbin);
  fs.writeFileSync(path.join(sbin, 'service'), '#!/bin/sh\necho "$1: unrecognized service" >&2\nexit 1\n', { mode: 0o755 });
  copyWorkingTree(repoRoot, clone);
  fs.symlinkSync(fs.realpathSync(path.join(repoRoot, 'node_modules')), path.join(clone, 'node_modules'));
  // A user's environment, not ours: nothing of the `npm test` that runs this file (npm_* variables) leaks in.
  baseEnv = {
    HOME: path.join(root, 'home'),
    LANG: 'C.UTF-8',
    NO_COLOR: '1',
    SERVICE_FLEET_DIR: path.join(root, 'fleet'),
    npm_config_prefix: prefix,
    npm_config_cache: path.join(root, 'npm-cache'),
    npm_config_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  // The README's set-up, after `npm install`:
  const link = await bash('npm link', { cwd: clone, path: pathWithNpmBin('last') });
  expect(link.code, `npm link failed:\n${link.stdout}\n${link.stderr}`).toBe(0);
  expect(fs.existsSync(path.join(clone, 'dist', 'cli.js')), 'npm link ran the prepare script (the build)').toBe(true);
}, BUILD_MS);

afterAll(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('the README set-up from a clean copy, /usr/sbin on PATH', { timeout: 2 * BUILD_MS }, () => {
  it('npm bin directory ahead of /usr/sbin: `service` is this CLI, and the printed hints work when pasted', async () => {
    const PATH = pathWithNpmBin('first');
    const version = await bash('service --version', { cwd: work, path: PATH });
    expect(version).toMatchObject({ code: 0, stdout: '0.1.0\n' });

    const init = await bash('service init first-bot --yes', { cwd: work, path: PATH });
    expect(init.code, init.stderr).toBe(0);
    expect(hintFor(init.stdout, 'doctor')).toBe('cd first-bot && service doctor');
    expectOurDoctor(await bash(hintFor(init.stdout, 'doctor'), { cwd: work, path: PATH }));
  });

  it('/usr/sbin ahead of the npm bin directory (Debian): `npx service` is this CLI, and the hints say `npx service`', async () => {
    const PATH = pathWithNpmBin('last');
    // Why the package has a second name: here a bare `service` is the system's.
    const bare = await bash('command -v service', { cwd: work, path: PATH });
    expect(bare.stdout.trim()).toBe(path.join(sbin, 'service'));
    const version = await bash('npx service --version', { cwd: work, path: PATH });
    expect(version).toMatchObject({ code: 0, stdout: '0.1.0\n' });

    const init = await bash('npx service init npx-bot --yes', { cwd: work, path: PATH });
    expect(init.code, init.stderr).toBe(0);
    const doctor = hintFor(init.stdout, 'doctor');
    expect(doctor).toBe('cd npx-bot && npx service doctor');
    expectOurDoctor(await bash(doctor, { cwd: work, path: PATH }));

    // A hint printed by an error names the same form.
    const missing = await bash('npx service chat -m hi', { cwd: work, path: PATH });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('hint: run `npx service init` there');
  });

  it('/usr/sbin ahead: `agent-service` is this CLI under a name nothing else has, and the hints of any form say it', async () => {
    const PATH = pathWithNpmBin('last');
    expect(await bash('agent-service --version', { cwd: work, path: PATH })).toMatchObject({ code: 0, stdout: '0.1.0\n' });
    for (const [command, bot] of [
      ['agent-service', 'spare-bot'],
      [`node ${clone}/bin/service.js`, 'path-bot'],
    ]) {
      const init = await bash(`${command} init ${bot} --yes`, { cwd: work, path: PATH });
      expect(init.code, init.stderr).toBe(0);
      const doctor = hintFor(init.stdout, 'doctor');
      expect(doctor).toBe(`cd ${bot} && agent-service doctor`);
      const r = await bash(doctor, { cwd: work, path: PATH });
      expectOurDoctor(r);
      expect(r.stdout).toContain(`warn  command: \`service\` on PATH is ${sbin}/service, another program`);
    }
  });

  it('run by its path with nothing linked on PATH: the hints name that path, which works from the new directory', async () => {
    const PATH = pathWithNpmBin('last').replace(`:${path.join(prefix, 'bin')}`, '');
    const init = await bash(`node ${clone}/bin/service.js init unlinked-bot --yes`, { cwd: work, path: PATH });
    expect(init.code, init.stderr).toBe(0);
    const doctor = hintFor(init.stdout, 'doctor');
    expect(doctor).toBe(`cd unlinked-bot && ${clone}/bin/service.js doctor`);
    expectOurDoctor(await bash(doctor, { cwd: work, path: PATH }));
  });

  it('`npm start` serves, and a SIGTERM to the npm process stops the gateway and frees its port', async () => {
    const child = spawn('npm', ['start', '--', '--port', '0'], {
      cwd: clone,
      env: { ...baseEnv, PATH: pathWithNpmBin('last') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const npmExited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let started: number[] = [];
    try {
      const serving = await poll(() => /serving on (http:\/\/127\.0\.0\.1:(\d+))/.exec(out), BUILD_MS, 'npm start to print "serving on"', 100);
      const port = Number(serving[2]);
      expect((await fetch(`${serving[1]}/health`)).status).toBe(200);
      started = descendantsOf(child.pid!);
      expect(started.length, 'npm started its shell and node').toBeGreaterThan(0);

      child.kill('SIGTERM'); // the npm process only, as `kill <pid of npm>` would
      await npmExited;
      await until(() => started.every((pid) => !isAlive(pid)), HANG_MS, `every process npm start began to exit:\n${out}`, 100);
      expect(await isPortFree(port)).toBe(true);
      expect(out).toContain('SIGTERM: shutting down');
      // Before the gateway's lines: what a bare `service` is in the user's shell, and the fix.
      expect(out).toContain(`note: \`service\` on PATH is ${sbin}/service, another program (on Debian and Ubuntu, the init-script tool); \`agent-service\``);
      expect(out).toContain(`      fix: type \`agent-service\` wherever the docs say \`service\`, or put ${path.join(prefix, 'bin')} first in PATH`);
      expect(out.indexOf('note: `service`')).toBeLessThan(out.indexOf('serving on'));
      // Where the demo's engine comes from: the CLI npm install bundled, which npm put on PATH and a shell lacks;
      // init's note says so for the shell, with the fix.
      expect(out).toContain(
        `engine engine_b (Claude Code): ${clone}/node_modules/.bin/claude: the copy this package bundles, which npm scripts put on PATH and a shell does not (\`agent-service doctor -d ${clone}/demo-assistant\` in a shell says how to reach it there)`,
      );
      expect(out).toContain('Note: engine_b (Claude Code): claude is not on PATH; this package bundles it');
    } finally {
      for (const pid of started) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

// --- helpers ---

/** Copy what a clone of this working tree would hold: tracked files and untracked ones git does not ignore. */
function copyWorkingTree(from: string, to: string): void {
  const list = spawnSyncText('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], from);
  for (const rel of list.split('\0').filter(Boolean)) {
    const src = path.join(from, rel);
    if (!fs.existsSync(src)) continue; // deleted in the working tree
    if (fs.statSync(src).isDirectory()) continue; // a symlink to a folder (a worktree's node_modules): linked below
    const dst = path.join(to, rel);
    fs.mkdirSync(path.dirname(dst), { recursive: true });
    fs.copyFileSync(src, dst);
    fs.chmodSync(dst, fs.statSync(src).mode);
  }
}

function spawnSyncText(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** Every live process below `pid` (from /proc). */
function descendantsOf(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      parentOf.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone while we read
    }
  }
  const out: number[] = [];
  let frontier = [pid];
  while (frontier.length > 0) {
    const next = [...parentOf].filter(([, ppid]) => frontier.includes(ppid)).map(([p]) => p);
    out.push(...next);
    frontier = next;
  }
  return out;
}

/** Alive and not a zombie. */
function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '');
  } catch {
    return false;
  }
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
