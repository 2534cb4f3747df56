import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/cli.js';

/** The dependency rules of STYLE.md §2.1, checked on the source instead of trusted. */
const src = path.join(repoRoot, 'src');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

const all = files(src).map((file) => ({ file: path.relative(src, file), text: fs.readFileSync(file, 'utf8') }));
const imports = (text: string) => [...text.matchAll(/(?:from|import\()\s*'([^']+)'/g)].map((m) => m[1] ?? '');
/** Source without comments (ids and patterns in comments are explanations, not code). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
/** The engine definition files, as the engine registry imports them. */
const enginePluginFiles = () =>
  imports(all.find((f) => f.file === 'core/engines/registry.ts')?.text ?? '')
    .filter((spec) => spec.startsWith('./') && !['./types.js'].includes(spec))
    .map((spec) => `core/engines/${spec.slice(2).replace(/\.js$/, '.ts')}`);
const importing = (pred: (spec: string) => boolean) =>
  all
    .filter((f) => imports(f.text).some(pred))
    .map((f) => f.file)
    .sort();

describe('architecture', () => {
  it('only the runner imports execa', () => {
    expect(importing((s) => s === 'execa')).toEqual(['core/engines/runner.ts']);
  });

  it('only core/store imports better-sqlite3 and pg, only the scheduler cron-parser', () => {
    expect(importing((s) => s === 'better-sqlite3').every((f) => f.startsWith('core/store/'))).toBe(true);
    expect(importing((s) => s === 'pg').every((f) => f.startsWith('core/store/pg-'))).toBe(true);
    expect(importing((s) => s === 'cron-parser')).toEqual(['core/scheduler/cron.ts']);
  });

  it("only src/server imports h3 and listhen (the HTTP layer and its listener); routing is h3's", () => {
    const http = importing((s) => s === 'h3' || s.startsWith('h3/') || s === 'listhen' || s === 'untun');
    expect(http.length).toBeGreaterThan(0);
    expect(http.every((f) => f.startsWith('server/'))).toBe(true);
    expect(importing((s) => s === 'rou3')).toEqual([]);
  });

  it('prom-client is imported by server/prometheus.ts only, and that module only lazily (GET /metrics loads it on first use)', () => {
    expect(importing((s) => s === 'prom-client')).toEqual(['server/prometheus.ts']);
    const users = all.filter((f) => /['"]\.\.?\/(?:\.\.\/)*prometheus\.js['"]/.test(code(f.text)));
    expect(users.map((f) => f.file)).toEqual(['server/routes/metrics.ts']);
    for (const f of users) expect(code(f.text)).not.toMatch(/^import\s+(?!type\b)[^;]*prometheus\.js/m);
  });

  it('only the CLI layer imports commander, prompts, spinners and colours', () => {
    const ui = importing((s) => ['commander', '@inquirer/prompts', 'ora', 'chalk'].includes(s));
    expect(ui.every((f) => f === 'cli.ts' || f.startsWith('commands/'))).toBe(true);
  });

  it('core imports neither channels, server nor commands; server never imports channels or commands', () => {
    const bad = all.filter((f) => {
      const targets = imports(f.text).filter((s) => s.startsWith('.'));
      const resolved = targets.map((t) => path.relative(src, path.resolve(src, path.dirname(f.file), t)));
      if (f.file.startsWith('core/')) return resolved.some((r) => /^(channels|server|commands)\//.test(r));
      if (f.file.startsWith('server/')) return resolved.some((r) => /^(channels|commands)\//.test(r));
      if (f.file.startsWith('channels/')) return resolved.some((r) => /^(server|commands)\//.test(r));
      return false;
    });
    expect(bad.map((f) => f.file)).toEqual([]);
  });

  it('no channel adapter imports another channel', () => {
    const platforms = ['lark', 'dingtalk', 'wecom', 'slack', 'telegram', 'discord'];
    const bad = all.filter((f) => {
      const own = platforms.find((p) => f.file.startsWith(`channels/${p}/`));
      if (!own) return false;
      return imports(f.text).some((s) => platforms.some((p) => p !== own && s.includes(`/${p}/`)));
    });
    expect(bad.map((f) => f.file)).toEqual([]);
  });

  it('core names engines and channels only in the registries and the engine definitions', () => {
    const engineFiles = enginePluginFiles();
    const offenders = all.filter(
      (f) =>
        f.file.startsWith('core/') && f.file !== 'core/engines/registry.ts' && !engineFiles.includes(f.file) && /\b(engine|channel)_[a-z]\b/.test(code(f.text)),
    );
    expect(engineFiles.length).toBeGreaterThan(0);
    expect(offenders.map((f) => f.file)).toEqual([]);
  });

  it('no engine, channel or template id is hard-coded outside its plugin and registry files', () => {
    const templates = fs.readdirSync(path.join(repoRoot, 'templates', 'assistant'));
    const plugin = (file: string) =>
      file === 'core/engines/registry.ts' ||
      enginePluginFiles().includes(file) ||
      file === 'channels/registry.ts' ||
      /^channels\/(lark|dingtalk|wecom|slack|telegram|discord)\//.test(file) ||
      file === 'core/templates/templates.ts';
    const ids = new RegExp(`\\b(engine|channel)_[a-z]\\b|['"\`](${templates.join('|')})['"\`]`);
    const offenders = all.filter((f) => !plugin(f.file) && ids.test(code(f.text)));
    expect(offenders.map((f) => f.file)).toEqual([]);
  });

  it('nothing is wired late: no thunks to objects made later, no casts covering a cycle, no getter call-through', () => {
    const patterns = [
      /\(\)\s*=>\s*\(?\s*[A-Za-z_$][\w$]*\?\./, // () => later?.thing
      /\(\)\s*=>\s*\(\s*\w+\s+as\s+\w+/, // () => (x as T)
      /\bdeps\.\w+\(\)\.\w+\(/, // deps.bridge().accept(
    ];
    const offenders = all.filter((f) => patterns.some((p) => p.test(code(f.text)))).map((f) => f.file);
    expect(offenders).toEqual([]);
  });

  it('the composition roots declare nothing to fill in later (no `let`)', () => {
    const roots = ['gateway.ts', 'assistant-directory.ts'];
    for (const root of roots) expect(all.find((f) => f.file === root)?.text).toBeDefined();
    expect(all.filter((f) => roots.includes(f.file) && /^\s*let\s/m.test(code(f.text))).map((f) => f.file)).toEqual([]);
  });

  it('no source file exceeds the 400-line budget', () => {
    const big = all.filter((f) => f.text.split('\n').length > 400).map((f) => f.file);
    expect(big).toEqual([]);
  });

  it('nothing calls process.exit (cli.ts sets process.exitCode once the command returns)', () => {
    expect(all.filter((f) => /process\.exit\(/.test(f.text)).map((f) => f.file)).toEqual([]);
  });
});
