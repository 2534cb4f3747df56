import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
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

  it('nothing calls process.exit (cli.ts sets process.exitCode once the command returns)', () => {
    expect(all.filter((f) => /process\.exit\(/.test(f.text)).map((f) => f.file)).toEqual([]);
  });
});

// --- the shape inside the modules (issue 30) ---

const MAX_FILE_LINES = 350;
const MAX_FUNCTION_LINES = 120;

const parsed = all.map((f) => ({ ...f, source: ts.createSourceFile(f.file, f.text, ts.ScriptTarget.Latest, true) }));

/** Every function with a body (declarations, expressions, arrows, methods, accessors, constructors): `file name`, and its lines. */
function functionSpans(): Array<{ id: string; lines: number }> {
  const spans: Array<{ id: string; lines: number }> = [];
  for (const { file, source } of parsed) {
    const visit = (node: ts.Node) => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const line = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
        spans.push({ id: `${file} ${functionName(node, source)}`, lines: line(node.getEnd()) - line(node.getStart(source)) + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return spans;
}

/** What a function is called where it is written: its own name, the variable or property it is assigned to. */
function functionName(node: ts.Node, source: ts.SourceFile): string {
  const named = node as { name?: ts.Node };
  if (named.name) return named.name.getText(source);
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))) return parent.name.getText(source);
  return `(anonymous, line ${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1})`;
}

/** Names exported by a declaration in each file (re-exports of another module's names do not define anything). */
function exportedNames(): Map<string, string[]> {
  const where = new Map<string, string[]>();
  const add = (name: string, file: string) => {
    const files = where.get(name) ?? [];
    if (!files.includes(file)) where.set(name, [...files, file]);
  };
  for (const { file, source } of parsed) {
    const imported = new Set(
      source.statements.flatMap((s) => {
        const bindings = ts.isImportDeclaration(s) ? s.importClause?.namedBindings : undefined;
        return bindings && ts.isNamedImports(bindings) ? bindings.elements.map((e) => e.name.text) : [];
      }),
    );
    for (const statement of source.statements) {
      if (ts.isExportDeclaration(statement)) {
        // `export { x }` of a name declared here defines it; of an imported name it passes it on.
        if (!statement.moduleSpecifier && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
          for (const e of statement.exportClause.elements) if (!imported.has((e.propertyName ?? e.name).text)) add(e.name.text, file);
        }
        continue;
      }
      const exported = ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
      if (!exported) continue;
      if (ts.isVariableStatement(statement)) for (const d of statement.declarationList.declarations) add(d.name.getText(source), file);
      else if ('name' in statement && statement.name) add((statement.name as ts.Node).getText(source), file);
    }
  }
  return where;
}

/** The import graph between core's folders (and its top-level files), type-only imports included. */
function coreGraph(): Map<string, Map<string, string[]>> {
  const core = path.join(src, 'core');
  const nodeOf = (abs: string) => path.relative(core, abs).split(path.sep)[0] ?? '';
  const graph = new Map<string, Map<string, string[]>>();
  for (const f of all.filter((x) => x.file.startsWith('core/'))) {
    const abs = path.join(src, f.file);
    const from = nodeOf(abs);
    for (const spec of ts.preProcessFile(f.text, true, true).importedFiles.map((i) => i.fileName)) {
      if (!spec.startsWith('.')) continue;
      const target = path.resolve(path.dirname(abs), spec).replace(/\.js$/, '.ts');
      if (!target.startsWith(core + path.sep)) continue;
      const to = nodeOf(target);
      if (to === from) continue;
      const edges = graph.get(from) ?? new Map<string, string[]>();
      edges.set(to, [...(edges.get(to) ?? []), `${f.file} → ${path.relative(src, target)}`]);
      graph.set(from, edges);
    }
  }
  return graph;
}

/** The strongly connected components of more than one node (Tarjan): each is a set of folders that import each other. */
function cycles(graph: Map<string, Map<string, string[]>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) component.push(w);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** A component with the imports that close it, for the failure message. */
function describeCycle(component: string[], graph: Map<string, Map<string, string[]>>): string {
  const edges = component.flatMap((a) =>
    [...(graph.get(a) ?? [])].filter(([b]) => component.includes(b)).map(([b, why]) => `  ${a} → ${b}: ${why.join('; ')}`),
  );
  return [`${component.join(', ')} import each other:`, ...edges].join('\n');
}

describe('architecture: the shape inside the modules', () => {
  it("no import cycle between core's folders (type imports included)", () => {
    const graph = coreGraph();
    expect(graph.get('assistant')?.has('commands')).toBe(true); // the graph sees imports at all
    expect(cycles(graph).map((c) => describeCycle(c, graph))).toEqual([]);
  });

  it('the cycle check finds a cycle, also one through a type import', () => {
    const graph = new Map([
      ['a', new Map([['b', ['a/x.ts → b/y.ts']]])],
      ['b', new Map([['c', ['b/y.ts → c/z.ts']]])],
      ['c', new Map([['a', ['c/z.ts → a/x.ts']]])],
      ['d', new Map([['a', ['d/w.ts → a/x.ts']]])],
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c']]);
    expect(ts.preProcessFile("import type { T } from '../b/y.js';\ntype U = import('../c/z.js').U;", true, true).importedFiles.map((i) => i.fileName)).toEqual([
      '../b/y.js',
      '../c/z.js',
    ]);
  });

  it(`no source file over ${MAX_FILE_LINES} lines`, () => {
    const long = all.filter((f) => f.text.split('\n').length > MAX_FILE_LINES).map((f) => f.file);
    expect(long).toEqual([]);
  });

  it(`no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const spans = functionSpans();
    expect(spans.length).toBeGreaterThan(1000);
    const long = spans.filter((s) => s.lines > MAX_FUNCTION_LINES);
    expect(long.map((s) => `${s.id}: ${s.lines} lines`)).toEqual([]);
  });

  it('no exported name is defined twice in src/', () => {
    const names = exportedNames();
    expect(names.get('createTurnQueue')).toEqual(['core/queue/turn-queue.ts']); // declarations are seen
    const twice = [...names].filter(([, files]) => files.length > 1);
    expect(twice.map(([name, files]) => `${name}: ${files.join(', ')}`)).toEqual([]);
  });
});
