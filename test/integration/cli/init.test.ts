import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadServiceConfig } from '../../../src/definitions.js';
import { bundledBinDir } from '../../../src/core/engines/detect.js';
import { engineDefinitions } from '../../../src/core/engines/registry.js';
import { scanSkills } from '../../../src/core/skills/skills.js';
import { listTemplates } from '../../../src/core/templates/templates.js';
import { repoRoot, runCommand } from '../../helpers/cli.js';
import { testdir } from '../../helpers/testdir.js';

const TEMPLATES = ['customer-support', 'data-analyst', 'code-reviewer', 'ops-assistant', 'meeting-notes', 'research'];
const BUILTIN_SKILLS = ['general', 'im-adapter', 'message-push', 'multi-bot'];

describe('service init (in-process)', () => {
  it('ships exactly the six scenario templates', () => {
    expect(
      listTemplates()
        .map((t) => t.name)
        .sort(),
    ).toEqual([...TEMPLATES].sort());
  });

  it.each(TEMPLATES)('scaffolds the %s template with --yes', async (template) => {
    const root = testdir();
    const dir = path.join(root, `my-${template}`);
    const r = await runCommand(['init', dir, '--template', template, '--engine', 'engine_d', '--yes']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // `service chat`, or the path of bin/service.js when a bare `service` is not this CLI (first-run.test.ts)
    expect(r.stdout).toMatch(/\bservice(\.js)? chat +#/);
    expect(r.stdout).toMatch(/\bservice(\.js)? gateway +#/);

    const loaded = loadServiceConfig(dir, {});
    expect(loaded.config.name).toBe(`my-${template}`);
    expect(loaded.config.engine).toBe('engine_d');
    expect(loaded.config.systemPrompt?.length).toBeGreaterThan(40);
    expect(loaded.config.persona?.role).toBeTruthy();

    const scan = scanSkills(path.join(dir, 'skills'));
    expect(scan.problems).toEqual([]);
    const names = scan.skills.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(BUILTIN_SKILLS));
    expect(names.length).toBeGreaterThan(BUILTIN_SKILLS.length); // at least one scenario skill

    expect(fs.statSync(path.join(dir, '.service')).isDirectory()).toBe(true);
    const gitignore = fs.readFileSync(path.join(dir, '.gitignore'), 'utf8');
    expect(gitignore).toMatch(/^\.service\/$/m);
    // Gemini CLI's settings file holds resolved credentials, written into the directory itself.
    expect(gitignore).toMatch(/^\.gemini\/settings\.json$/m);
    expect(fs.existsSync(path.join(dir, 'template.json'))).toBe(false);
    // The template's own data files came along (every template has some beyond service.yaml and skills/).
    const own = fs.readdirSync(dir).filter((f) => !['service.yaml', 'skills', '.service', '.gitignore'].includes(f));
    expect(own.length).toBeGreaterThan(0);
  });

  it("--engine takes the program's name and writes the id, under a comment that lists every engine", async () => {
    const dir = path.join(testdir(), 'named-bot');
    const r = await runCommand(['init', dir, '--yes', '--engine', 'gemini']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('(Customer support, Gemini CLI)');
    const text = fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8');
    expect(text).toContain('engine: engine_e\n');
    const comment = text.slice(text.indexOf('# Coding-agent engine'), text.indexOf('engine: engine_e'));
    for (const def of Object.values(engineDefinitions)) {
      expect(comment).toMatch(new RegExp(`^#\\s+${def.id}\\s+= ${def.title}${def.aliases.length ? ` \\(${def.aliases.join(', ')}\\)` : ''}$`, 'm'));
    }
    const unknown = await runCommand(['init', path.join(testdir(), 'x'), '--yes', '--engine', 'claud']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("unknown engine 'claud'; use one of engine_a (Cursor agent CLI, alias cursor), engine_b (Claude Code, alias claude)");
  });

  it('an engine the shell cannot start: a note before the hints, with the fix (the PATH line for the bundled copy, or the global install)', async () => {
    const bare = [path.dirname(process.execPath), '/usr/bin', '/bin'].join(path.delimiter);
    const bundled = bundledBinDir();
    const shell = { npm_lifecycle_event: undefined, npm_command: undefined };
    const r = await runCommand(['init', path.join(testdir(), 'a'), '--yes', '--engine', 'codex'], { env: { ...shell, PATH: bare } });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[1]).toMatch(new RegExp(`^Note: engine_d \\(Codex CLI\\): codex is not on PATH; this package bundles it \\(${bundled}/codex, `));
    expect(lines[2]).toMatch(new RegExp(`^ {6}fix: for this shell: export PATH="${bundled}:\\$PATH"; for every shell: npm install -g @openai/codex@\\S+$`));
    expect(lines.indexOf('Next:')).toBeGreaterThan(2);
    // Started from npm (npm start's init): npm's PATH is not the shell's, so the note is there too.
    const npm = await runCommand(['init', path.join(testdir(), 'b'), '--yes', '--engine', 'codex'], {
      env: { PATH: `${bundled}:${bare}`, npm_lifecycle_event: 'start' },
    });
    expect(npm.stdout).toContain('Note: engine_d (Codex CLI): codex is not on PATH');
    // On the shell's own PATH: no note.
    const onPath = await runCommand(['init', path.join(testdir(), 'c'), '--yes', '--engine', 'codex'], { env: { ...shell, PATH: `${bundled}:${bare}` } });
    expect(onPath.stdout).not.toContain('Note:');
    const vendor = await runCommand(['init', path.join(testdir(), 'd'), '--yes', '--engine', 'cursor'], { env: { ...shell, PATH: bare } });
    expect(vendor.stdout).toContain(
      "Note: engine_a (Cursor agent CLI): agent / cursor-agent not found on PATH\n      fix: install it with the vendor's installer\n",
    );
  });

  it('uses defaults without a TTY: customer-support, the directory name', async () => {
    const dir = path.join(testdir(), 'support-bot');
    const r = await runCommand(['init', dir]);
    expect(r.code).toBe(0);
    const yaml = parse(fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8')) as Record<string, unknown>;
    expect(yaml.name).toBe('support-bot');
    expect(fs.existsSync(path.join(dir, 'data', 'faq.md'))).toBe(true);
  });

  it('--engine acp writes an acp block naming the first known ACP agent on PATH; with none, the first known one and a note', async () => {
    const bin = testdir({}, 'service-bin-');
    fs.writeFileSync(path.join(bin, 'qwen'), '#!/bin/sh\necho 0.24.4\n', { mode: 0o755 });
    const bare = [path.dirname(process.execPath), '/usr/bin', '/bin'].join(path.delimiter);
    const dir = testdir();
    const r = await runCommand(['init', dir, '--yes', '--engine', 'acp'], { env: { PATH: `${bin}${path.delimiter}${bare}` } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('(Customer support, ACP agent: qwen)');
    expect(r.stdout).not.toContain('Note:');
    expect((parse(fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8')) as Record<string, unknown>).acp).toEqual({ command: 'qwen', args: ['--acp'] });

    const none = testdir();
    const n = await runCommand(['init', none, '--yes', '--engine', 'acp'], { env: { PATH: bare } });
    expect(n.code).toBe(0);
    expect(n.stdout).toContain('Note: gemini is not on PATH; install it or set acp.command in service.yaml');
    expect((parse(fs.readFileSync(path.join(none, 'service.yaml'), 'utf8')) as Record<string, unknown>).acp).toEqual({ command: 'gemini', args: ['--acp'] });
  });

  it('keeps the template comments in service.yaml', async () => {
    const dir = testdir();
    await runCommand(['init', dir, '--yes', '--name', 'Ada']);
    const text = fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8');
    expect(text).toMatch(/^name: Ada$/m);
    expect(text).toMatch(/^# .*channel_e/m);
  });

  it('writes an access: block with the defaults (pairing) and comments saying what they mean, in every template', async () => {
    for (const template of fs.readdirSync(path.join(repoRoot, 'templates', 'assistant'))) {
      const dir = testdir();
      expect((await runCommand(['init', dir, '--yes', '--template', template, '--engine', 'engine_b'])).code).toBe(0);
      const text = fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8');
      expect(text, template).toMatch(/^access:\n {2}dm: pairing .*\n {2}groups: pairing /m);
      expect(text, template).toContain('`service access approve <CODE>`');
      expect((parse(text) as { access: unknown }).access, template).toEqual({
        dm: 'pairing',
        groups: 'pairing',
        allow: [],
        chats: [],
        admins: [],
        rateLimit: { messages: 20, perSeconds: 60 },
        dailyBudgetUsd: 0,
      });
    }
  });

  it('refuses to overwrite an existing service.yaml, and --force does', async () => {
    const dir = testdir({ 'service.yaml': 'name: mine\nengine: engine_b\n', 'notes/keep.md': 'mine' });
    const refused = await runCommand(['init', dir, '--yes']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('already exists');
    expect(refused.stderr).toContain('--force');
    expect(fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8')).toBe('name: mine\nengine: engine_b\n');

    const forced = await runCommand(['init', dir, '--yes', '--force', '--template', 'research']);
    expect(forced.code).toBe(0);
    expect(loadServiceConfig(dir, {}).config.systemPrompt).toBeTruthy();
    expect(fs.readFileSync(path.join(dir, 'notes/keep.md'), 'utf8')).toBe('mine');
  });

  it('accepts -d before the subcommand and rejects an unknown template', async () => {
    const dir = testdir();
    const bad = await runCommand(['-d', dir, 'init', '--template', 'astrology', '--yes']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('astrology');
    const good = await runCommand(['-d', dir, 'init', '--yes']);
    expect(good.code).toBe(0);
    expect(fs.existsSync(path.join(dir, 'service.yaml'))).toBe(true);
  });
});
