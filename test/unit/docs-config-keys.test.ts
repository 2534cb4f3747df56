import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { z } from 'zod';
import { createConfigSchema } from '../../src/core/config/schema.js';
import { configParts } from '../../src/definitions.js';
import { repoRoot } from '../helpers/cli.js';

/**
 * The keys the docs and the templates show a user exist in the schema: a key copied from an
 * example that the schema does not know makes the gateway refuse to start (unknown keys are errors).
 */
const schema = createConfigSchema(configParts());

/** The keys the schema refused as unknown, as `path.to.key`, also inside unions. */
function unknownKeys(value: unknown): string[] {
  const result = schema.safeParse({ name: 'docs', engine: 'engine_b', ...(value as object) });
  if (result.success) return [];
  const out: string[] = [];
  const walk = (issues: readonly z.core.$ZodIssue[], prefix: PropertyKey[]) => {
    for (const issue of issues) {
      const at = [...prefix, ...issue.path];
      if (issue.code === 'unrecognized_keys') out.push(...issue.keys.map((k) => [...at, k].join('.')));
      if (issue.code === 'invalid_union') for (const branch of issue.errors) walk(branch, at);
    }
  };
  walk(result.error.issues, []);
  return [...new Set(out)];
}

/** Every key the schema knows, at any depth (engine and channel blocks included). */
function schemaKeys(node: unknown, into = new Set<string>()): Set<string> {
  const def = (node as { _zod?: { def?: Record<string, unknown> } })?._zod?.def;
  if (!def) return into;
  if (def.shape) for (const [key, child] of Object.entries(def.shape as Record<string, unknown>)) schemaKeys(child, into.add(key));
  for (const k of ['innerType', 'in', 'out', 'element', 'valueType', 'catchall', 'left', 'right']) schemaKeys(def[k], into);
  for (const option of (def.options as unknown[] | undefined) ?? []) schemaKeys(option, into);
  return into;
}

/** The ```yaml blocks of a Markdown file, dedented. */
function yamlBlocks(file: string): Array<{ line: number; text: string }> {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const blocks: Array<{ line: number; text: string }> = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```yaml\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    const indent = open[1]?.length ?? 0;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] ?? ''); i++) body.push((lines[i] ?? '').slice(indent));
    // A block that names another program's file in its first line (`# prometheus.yml`) is not service.yaml.
    const other = /^#\s*(\S+\.ya?ml)\s*$/.exec(body[0] ?? '');
    if (other && other[1] !== 'service.yaml') continue;
    blocks.push({ line: i - body.length, text: body.join('\n') });
  }
  return blocks;
}

/**
 * A template's service.yaml with its optional blocks switched on, as its header tells a user to:
 * "Remove the leading "# " from a block". Commented lines that are YAML (a `key:` at the start, or
 * indented under one) lose the `# `; prose comments stay comments.
 */
function uncommentOptional(text: string): string {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.includes('Optional settings'));
  return lines.map((l, i) => (i > start && /^# (?:[A-Za-z_][\w-]*:(?:\s|$)|\s)/.test(l) ? l.slice(2) : l)).join('\n');
}

const markdown = ['README.md', ...fs.readdirSync(path.join(repoRoot, 'docs')).map((f) => `docs/${f}`)].filter((f) => f.endsWith('.md'));
const templates = fs.readdirSync(path.join(repoRoot, 'templates', 'assistant')).map((t) => `templates/assistant/${t}/service.yaml`);

describe('configuration keys in the docs and templates', () => {
  it('every key of a YAML example in README.md and docs/ is one the schema knows', () => {
    const found = markdown.flatMap((file) => yamlBlocks(path.join(repoRoot, file)).map((b) => ({ where: `${file}:${b.line}`, value: parse(b.text) })));
    expect(found.length).toBeGreaterThanOrEqual(5);
    const stale = found.flatMap(({ where, value }) => unknownKeys(value).map((key) => `${where}: ${key}`));
    expect(stale).toEqual([]);
  });

  it("every key of a template's service.yaml, its commented optional blocks switched on, is one the schema knows", () => {
    for (const file of templates) {
      const text = uncommentOptional(fs.readFileSync(path.join(repoRoot, file), 'utf8'));
      const value = parse(text) as Record<string, unknown>;
      // The switch-on worked: the optional blocks are keys now.
      expect(Object.keys(value), file).toEqual(expect.arrayContaining(['maxConcurrent', 'sessionTtlDays', 'channels', 'provider', 'gateway']));
      expect(unknownKeys(value).map((key) => `${file}: ${key}`)).toEqual([]);
    }
  });

  it('every setting the docs name with a time unit (`…Hours`, `…Days`, `…Minutes`, `…Seconds`) is a key the schema knows', () => {
    const keys = schemaKeys(schema);
    expect(keys).toContain('sessionTtlDays');
    expect(keys).toContain('failoverSeconds');
    const named = markdown.flatMap((file) =>
      [...fs.readFileSync(path.join(repoRoot, file), 'utf8').matchAll(/`([a-z][A-Za-z]*(?:Hours|Days|Minutes|Seconds))`/g)].map((m) => ({
        file,
        key: m[1] ?? '',
      })),
    );
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter(({ key }) => !keys.has(key)).map(({ file, key }) => `${file}: ${key}`)).toEqual([]);
  });

  it('the check sees a stale key, also inside a block and inside a union', () => {
    expect(unknownKeys({ sessionTtlHours: 24 })).toEqual(['sessionTtlHours']);
    expect(unknownKeys({ access: { admin: [] } })).toEqual(['access.admin']);
    expect(unknownKeys({ mcp: { s: { command: 'x', environment: {} } } })).toContain('mcp.s.environment');
  });

  it('the README names every built-in skill init installs', () => {
    const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    const paragraph = readme.slice(readme.indexOf('Writes `service.yaml`, `skills/`'), readme.indexOf('plus the template'));
    for (const skill of fs.readdirSync(path.join(repoRoot, 'templates', 'skills'))) expect(paragraph).toContain(`\`${skill}\``);
  });
});
