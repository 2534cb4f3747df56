import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, runCommand } from '../../helpers/cli.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/**
 * The command line's argument handling, in this process: the program `service` runs
 * (src/commands/program.ts) with an io that records what it prints. Usage errors, help, the version,
 * where -d may stand, and how a command's error becomes text and an exit code.
 */
const version = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const COMMANDS = ['init', 'chat', 'gateway', 'cron', 'access', 'store', 'skill', 'status', 'doctor', 'fleet'];

describe('service (in-process): usage', () => {
  it('--help lists every command on stdout and exits 0; help <command> shows that command', async () => {
    const r = await runCommand(['--help']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(/^Usage: service \[options\] \[command\]\n/);
    for (const name of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^ {2}${name} `, 'm'));
    const skill = await runCommand(['help', 'skill']);
    expect(skill).toMatchObject({ code: 0, stderr: '' });
    expect(skill.stdout).toMatch(/^Usage: service skill \[options\] \[command\]\n/);
    for (const sub of ['list', 'add', 'remove']) expect(skill.stdout).toMatch(new RegExp(`^ {2}${sub}\\b`, 'm'));
  });

  it('init --help lists the scenario templates it can install', async () => {
    const r = await runCommand(['init', '--help']);
    expect(r.code).toBe(0);
    const templates = fs.readdirSync(path.join(repoRoot, 'templates', 'assistant')).sort();
    expect(templates.length).toBeGreaterThan(0);
    expect(r.stdout).toContain(`\nTemplates: ${templates.join(', ')}\n`);
  });

  it('an unknown command, a missing argument or an unknown option: the error and the usage on stderr, exit 1, nothing run', async () => {
    const unknown = await runCommand(['frobnicate']);
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toMatch(/^error: unknown command 'frobnicate'\n/);
    expect(unknown.stderr).toContain('Usage: service [options] [command]');

    const dir = testdir({ 'service.yaml': minimalYaml() });
    const missing = await runCommand(['skill', 'add', '-d', dir]);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toMatch(/^error: missing required argument 'path'\n/);
    expect(missing.stderr).toContain('Usage: service skill add [options] <path>');

    const option = await runCommand(['cron', 'enable', 'report', '--json', '-d', dir]);
    expect(option).toMatchObject({ code: 1, stdout: '' });
    expect(option.stderr).toMatch(/^error: unknown option '--json'\n/);
    expect(fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8')).toBe(minimalYaml());

    const required = await runCommand(['store', 'migrate', '-d', dir]);
    expect(required).toMatchObject({ code: 1, stdout: '' });
    expect(required.stderr).toMatch(/^error: required option '--to <url>' not specified\n/);
  });

  it('--version, alone or after other options, prints the package version', async () => {
    for (const args of [['--version'], ['-v'], ['--dir', testdir(), '--version']]) {
      expect(await runCommand(args)).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
  });
});

describe('service (in-process): the assistant directory', () => {
  it('-d before or after the command (and the subcommand), relative or absolute, names the same directory', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'tasks:\n  - { id: t1, name: T, schedule: "0 9 * * *", prompt: hi }\n') });
    const relative = path.relative(process.cwd(), dir);
    for (const args of [
      ['-d', dir, 'status', '--json'],
      ['status', '--json', '-d', dir],
      ['--dir', relative, 'status', '--json'],
      ['status', '--dir', relative, '--json'],
    ]) {
      const r = await runCommand(args);
      expect(r, args.join(' ')).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(r.stdout), args.join(' ')).toMatchObject({ dir, name: 'test-bot' });
    }
    for (const args of [
      ['-d', dir, 'cron', 'list', '--json'],
      ['cron', '-d', dir, 'list', '--json'],
      ['cron', 'list', '-d', dir, '--json'],
    ]) {
      const r = await runCommand(args);
      expect(r, args.join(' ')).toMatchObject({ code: 0, stderr: '' });
      expect(
        (JSON.parse(r.stdout) as { tasks: Array<{ id: string }> }).tasks.map((t) => t.id),
        args.join(' '),
      ).toEqual(['t1']);
    }
  });

  it("the subcommand's own -d wins over the one before the command", async () => {
    const a = testdir({ 'service.yaml': minimalYaml('engine_b') });
    const b = testdir({ 'service.yaml': minimalYaml('engine_c') });
    const r = await runCommand(['-d', a, 'status', '--json', '-d', b]);
    expect(JSON.parse(r.stdout)).toMatchObject({ dir: b, engine: 'engine_c' });
  });
});

describe('service (in-process): errors', () => {
  it("a command's error is one line on stderr, then its hint; the exit code is the error's", async () => {
    const empty = testdir({});
    const r = await runCommand(['access', 'list', '-d', empty]);
    expect(r).toMatchObject({ code: 1, stdout: '' });
    // The hint names the command as this CLI was started (`service`, `npx service`, ...).
    const lines = r.stderr.split('\n');
    expect(lines[0]).toBe(`error: ${path.join(empty, 'service.yaml')} does not exist`);
    expect(lines[1]).toMatch(/^hint: run `.*\binit` or pass -d <assistant directory>$/);
    expect(lines.slice(2)).toEqual(['']);
    expect(fs.readdirSync(empty)).toEqual([]);

    const dir = testdir({ 'service.yaml': minimalYaml() });
    expect(await runCommand(['skill', 'remove', 'nope', '-d', dir])).toEqual({ code: 1, stdout: '', stderr: 'error: no skill "nope" installed\n' });
  });
});
