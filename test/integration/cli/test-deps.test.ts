/**
 * `npm test` first checks the system programs the suites run (scripts/check-test-deps.mjs): one line
 * naming what is missing and how to install it, silent when all are there. Its list, .ci/run's
 * apt-get line and the README's are the same packages.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/cli.js';
import { testdir } from '../../helpers/testdir.js';

const script = path.join(repoRoot, 'scripts', 'check-test-deps.mjs');
const run = (PATH: string) => spawnSync(process.execPath, [script], { cwd: repoRoot, env: { PATH, HOME: process.env.HOME }, encoding: 'utf8' });
/** The packages of an `apt-get install … <packages>` line. */
const aptPackages = (text: string) => (/apt-get install -y (?:-qq )?--no-install-recommends ([a-z0-9 -]+)/.exec(text)?.[1] ?? '').trim().split(/\s+/).sort();

describe('npm test: the system packages the tests need', () => {
  it('all there: silent, exit 0', () => {
    const r = run(process.env.PATH ?? '');
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('');
    expect(r.status).toBe(0);
  });

  it('some missing: one line naming each and the apt-get command, exit 1', () => {
    const onlyNode = testdir({}, 'only-node-');
    fs.symlinkSync(process.execPath, path.join(onlyNode, 'node'));
    const r = run(onlyNode);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
    // ripgrep, tmux, git, curl and python3 are found on PATH only; chromium and the PostgreSQL server by their fixed places.
    expect(r.stderr).toBe(
      `npm test: missing system packages: ripgrep (rg), tmux (tmux), git (git), curl (curl), python3 (python3); install them with: ${sudo}apt-get install -y --no-install-recommends ripgrep tmux git curl python3\n`,
    );
  });

  it('runs before anything else in `npm test`; .ci/run and the README install the same packages', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(manifest.scripts.test).toMatch(/^node scripts\/check-test-deps\.mjs && /);
    const checked = [...fs.readFileSync(script, 'utf8').matchAll(/\{ name: '([a-z0-9-]+)'/g)].map((m) => m[1]).sort();
    const ci = aptPackages(fs.readFileSync(path.join(repoRoot, '.ci', 'run'), 'utf8'));
    const readme = aptPackages(fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8'));
    expect(checked).toEqual(['chromium', 'curl', 'git', 'postgresql', 'python3', 'ripgrep', 'tmux']);
    expect(ci).toEqual([...checked, 'ca-certificates'].sort());
    expect(readme).toEqual(ci);
  });
});
