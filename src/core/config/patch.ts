import fs from 'node:fs';
import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { placeholderNames, resolvePlaceholders } from './env.js';
import { withEngineIds } from './engine-names.js';
import { formatIssues, formatPath } from './issues.js';
import { type LoadedConfig, parseYaml } from './load.js';
import { createConfigSchema, isExtensionKey } from './schema.js';
import { isSecretPath, MASK, maskSecrets } from './secrets.js';
import type { ConfigSource } from './source.js';
import { mergePatch } from './write-back.js';

/**
 * A partial configuration record (PATCH /api/config): validated with the same schema as the
 * file (types strict: no string-for-number here), merged into service.yaml through write-back,
 * applied live for the next turn. `needsRestart` is true exactly when a field the spec lists as
 * restart-only changed.
 */
export const RESTART_FIELDS: ReadonlyArray<readonly string[]> = [
  ['engine'],
  ['model'],
  ['channels'],
  ['gateway'],
  ['mcp'],
  ['provider', 'baseUrl'],
  ['provider', 'apiKey'],
  ['provider', 'fallback'],
  // Not in the spec's table: these are read once when the gateway connects its channels.
  ['inbox'],
  ['historyFetch'],
  // The state store is opened once, when the process starts.
  ['store'],
  // Whether GET /metrics needs the token is decided when the server is built.
  ['metrics'],
];

export interface PatchResult {
  /** The file's content after the merge: placeholders as written, literal secrets masked. */
  config: Record<string, unknown>;
  needsRestart: boolean;
  changed: string[];
}

export class PatchRejected extends Error {
  readonly issues: Array<{ path: string; message: string }>;
  constructor(issues: Array<{ path: string; message: string }>) {
    super(issues.map((i) => `${i.path}: ${i.message}`).join('; '));
    this.issues = issues;
  }
}

export function applyConfigPatch(source: ConfigSource, patch: unknown): PatchResult {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
    throw new PatchRejected([{ path: '(root)', message: 'expected an object of settings to change' }]);
  }
  // Engine names (`claude`) become ids before anything else: the file is written with the id.
  const body = withEngineIds(patch as Record<string, unknown>, source.parts.engineNames ?? []);
  const leaves = leafPaths(body);
  if (leaves.length === 0) throw new PatchRejected([{ path: '(root)', message: 'nothing to change' }]);

  const before = source.current();
  const introduced = checkIntroducedValues(body, before.raw);
  if (introduced.length > 0) throw new PatchRejected(introduced);
  const merged = deepMerge(before.raw, body);
  const resolved = resolvePlaceholders(merged, source.env).value;
  const schema = createConfigSchema(source.parts, { coerceScalars: false });
  const known = new Set(Object.keys(schema.shape));
  const issues: Array<{ path: string; message: string }> = [];
  for (const key of Object.keys(body)) {
    if (!known.has(key) && !isExtensionKey(key)) issues.push({ path: key, message: 'unknown key' });
  }
  const forSchema = Object.fromEntries(Object.entries(resolved).filter(([k]) => known.has(k)));
  const parsed = schema.safeParse(forSchema, { reportInput: true });
  if (!parsed.success) {
    for (const issue of parsed.error.issues.filter((i) => touches(i, leaves))) {
      for (const line of formatIssues([issue])) {
        const cut = line.indexOf(': ');
        issues.push({ path: line.slice(0, cut), message: line.slice(cut + 2) });
      }
    }
  }
  if (issues.length > 0) throw new PatchRejected(issues);

  let after: LoadedConfig;
  try {
    after = source.edit(mergePatch(body, source.env));
  } catch (err) {
    if (err instanceof ConfigError)
      throw new PatchRejected(err.problems.map((p) => ({ path: p.split(': ')[0] ?? '(root)', message: p.split(': ').slice(1).join(': ') })));
    throw err;
  }
  const changed = leaves.filter((p) => JSON.stringify(valueAt(before.raw, p)) !== JSON.stringify(valueAt(after.raw, p))).map((p) => formatPath(p));
  // Engine-owned blocks (engine_d's `codex`) are read when a turn starts its engine: a restart applies them.
  const restartFields = [...RESTART_FIELDS, ...Object.keys(source.parts.engineOptions ?? {}).map((key) => [key])];
  const needsRestart = restartFields.some(
    (field) =>
      leaves.some((p) => startsWith(p, field) || startsWith([...field], p)) &&
      JSON.stringify(valueAt(before.raw, [...field])) !== JSON.stringify(valueAt(after.raw, [...field])),
  );
  const fileContent = (parseYaml(fs.readFileSync(after.file, 'utf8'), after.file).toJS() ?? {}) as Record<string, unknown>;
  return { config: maskSecrets(fileContent), needsRestart, changed };
}

// --- internal ---

type Path = Array<string | number>;

/**
 * Two things a PATCH may not write:
 * - a new `${VAR}` outside the fields meant for secrets (tokens, keys, passwords, `env`,
 *   `headers`): the API cannot turn an arbitrary environment variable of the gateway into a
 *   setting (a name, a URL, an argument); a placeholder the field already has may be sent back;
 * - the mask anywhere but as a whole secret value (which keeps the current one): inside an
 *   array or a longer string it would be written as eight asterisks.
 */
function checkIntroducedValues(patch: Record<string, unknown>, raw: Record<string, unknown>): Array<{ path: string; message: string }> {
  const issues: Array<{ path: string; message: string }> = [];
  const walk = (node: unknown, path: Path, leaf: Path, inArray: boolean) => {
    if (typeof node === 'string') {
      if (node.includes(MASK) && (node !== MASK || inArray)) {
        issues.push({ path: formatPath(path), message: `holds the mask ${MASK}; send the real value, or leave the field out to keep the current one` });
      }
      const existing = new Set(collectPlaceholderNames(valueAt(raw, leaf)));
      const added = placeholderNames(node).filter((name) => !existing.has(name));
      if (added.length > 0 && !isSecretPath(path)) {
        issues.push({
          path: formatPath(path),
          message: `a \${${added[0]}} placeholder can be added through the API only to secret fields (tokens, keys, passwords, env, headers); write it into service.yaml by hand`,
        });
      }
    } else if (Array.isArray(node)) {
      for (const [i, v] of node.entries()) walk(v, [...path, i], leaf, true);
    } else if (node !== null && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) walk(v, [...path, k], inArray ? leaf : [...path, k], inArray);
    }
  };
  for (const [k, v] of Object.entries(patch)) walk(v, [k], [k], false);
  return issues;
}

function collectPlaceholderNames(node: unknown): string[] {
  if (typeof node === 'string') return placeholderNames(node);
  if (Array.isArray(node)) return node.flatMap(collectPlaceholderNames);
  if (node !== null && typeof node === 'object') return Object.values(node).flatMap(collectPlaceholderNames);
  return [];
}

/** Paths of the values the patch sets: objects are walked, arrays and scalars are leaves. */
function leafPaths(obj: Record<string, unknown>, prefix: Path = []): Path[] {
  return Object.entries(obj).flatMap(([k, v]) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0
      ? leafPaths(v as Record<string, unknown>, [...prefix, k])
      : [[...prefix, k]],
  );
}

/** Whether a schema issue is about something the patch changed (problems elsewhere are the file's own). */
function touches(issue: z.core.$ZodIssue, leaves: Path[]): boolean {
  const at: Path = issue.path.map((p) => (typeof p === 'number' ? p : String(p)));
  const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => [...at, k]) : [at];
  return keys.some((p) =>
    leaves.some((leaf) => startsWith(p, leaf) || (issue.code !== 'unrecognized_keys' && startsWith(leaf, p) && p.length > 0 && isObjectLevel(issue))),
  );
}

function isObjectLevel(issue: z.core.$ZodIssue): boolean {
  return issue.code === 'invalid_type' || issue.code === 'custom' || issue.code === 'invalid_union';
}

function startsWith(path: Path, prefix: readonly (string | number)[]): boolean {
  return prefix.length <= path.length && prefix.every((seg, i) => String(seg) === String(path[i]));
}

function valueAt(obj: unknown, path: readonly (string | number)[]): unknown {
  let cur: unknown = obj;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[String(seg)];
  }
  return cur;
}

function deepMerge(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    const current = out[k];
    if (v === null) delete out[k];
    else if (typeof v === 'object' && !Array.isArray(v) && current !== null && typeof current === 'object' && !Array.isArray(current)) {
      out[k] = deepMerge(current as Record<string, unknown>, v as Record<string, unknown>);
    } else out[k] = v;
  }
  return out;
}
