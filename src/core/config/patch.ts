import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { nextTurn } from '../util/next-turn.js';
import { placeholderNames, resolvePlaceholders } from './env.js';
import { withEngineIds } from './engine-names.js';
import { formatIssues, formatPath } from './issues.js';
import type { LoadedConfig } from './load.js';
import { createConfigSchema, isExtensionKey } from './schema.js';
import { isSecretPath, MASK, maskSecrets } from './secrets.js';
import type { ConfigSource } from './source.js';

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

export async function applyConfigPatch(source: ConfigSource, patch: unknown): Promise<PatchResult> {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
    throw new PatchRejected([{ path: '(root)', message: 'expected an object of settings to change' }]);
  }
  // Engine names (`claude`) become ids before anything else: the file is written with the id.
  const body = withEngineIds(patch as Record<string, unknown>, source.parts.engineNames ?? []);
  const leaves = leafPaths(body);
  if (leaves.length === 0) throw new PatchRejected([{ path: '(root)', message: 'nothing to change' }]);

  // A large change costs tens of ms in this thread (parsing the body, checking it, validating the
  // file, answering; the YAML work is on the worker thread): each step gets its own turn of the
  // event loop, so other requests are answered in between.
  await nextTurn();
  const before = source.current();
  const introduced = checkIntroducedValues(body, before.raw);
  if (introduced.length > 0) throw new PatchRejected(introduced);
  await nextTurn();
  const issues = checkSettings(source, body, before.raw, leaves);
  if (issues.length > 0) throw new PatchRejected(issues);

  let after: LoadedConfig;
  try {
    after = await source.merge(body);
  } catch (err) {
    if (err instanceof ConfigError)
      throw new PatchRejected(err.problems.map((p) => ({ path: p.split(': ')[0] ?? '(root)', message: p.split(': ').slice(1).join(': ') })));
    throw err;
  }
  await nextTurn();
  const changed = leaves.filter((p) => JSON.stringify(valueAt(before.raw, p)) !== JSON.stringify(valueAt(after.raw, p))).map((p) => formatPath(p));
  // Engine-owned blocks (engine_d's `codex`) are read when a turn starts its engine: a restart applies them.
  const restartFields = [...RESTART_FIELDS, ...Object.keys(source.parts.engineOptions ?? {}).map((key) => [key])];
  const needsRestart = restartFields.some(
    (field) =>
      leaves.some((p) => startsWith(p, field) || startsWith([...field], p)) &&
      JSON.stringify(valueAt(before.raw, [...field])) !== JSON.stringify(valueAt(after.raw, [...field])),
  );
  // `raw` is the text just written, parsed: the file's content.
  return { config: maskSecrets(after.raw), needsRestart, changed };
}

// --- internal ---

type Path = Array<string | number>;

/**
 * The patch's settings against the schema, strict types (no string for a number here), merged
 * over the current values: only the settings it names, each with its own schema. The others are
 * the file's own (the whole file is validated before it is written), so a change costs what it
 * touches, not what the file holds.
 */
function checkSettings(source: ConfigSource, body: Record<string, unknown>, raw: Record<string, unknown>, leaves: Path[]): PatchRejected['issues'] {
  const fields = createConfigSchema(source.parts, { coerceScalars: false }).shape as Record<string, z.ZodType>;
  const issues = Object.keys(body)
    .filter((key) => !(key in fields) && !isExtensionKey(key))
    .map((key) => ({ path: key, message: 'unknown key' }));
  const merged = deepMerge(raw, body);
  const named = Object.keys(body).filter((key) => key in fields);
  const resolved = resolvePlaceholders(Object.fromEntries(named.map((key) => [key, merged[key]])), source.env).value;
  for (const key of named) {
    const parsed = (fields[key] as z.ZodType).safeParse(resolved[key], { reportInput: true });
    const found = parsed.success ? [] : parsed.error.issues.map((issue) => ({ ...issue, path: [key, ...issue.path] }) as z.core.$ZodIssue);
    for (const line of formatIssues(found.filter((issue) => touches(issue, leaves)))) {
      const cut = line.indexOf(': ');
      issues.push({ path: line.slice(0, cut), message: line.slice(cut + 2) });
    }
  }
  return issues;
}

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
  // The placeholders a field holds now, looked up once per field and only when a string brings
  // one (the items of a list share their field's): linear in the patch and the file.
  const namesAt = (field: Path) => {
    let names: Set<string> | undefined;
    return () => (names ??= collectPlaceholderNames(valueAt(raw, field)));
  };
  const walk = (node: unknown, path: Path, existing: () => Set<string>, inArray: boolean) => {
    if (typeof node === 'string') {
      if (node.includes(MASK) && (node !== MASK || inArray)) {
        issues.push({ path: formatPath(path), message: `holds the mask ${MASK}; send the real value, or leave the field out to keep the current one` });
      }
      const names = placeholderNames(node);
      const added = names.length > 0 && !isSecretPath(path) ? names.find((name) => !existing().has(name)) : undefined;
      if (added !== undefined) {
        issues.push({
          path: formatPath(path),
          message: `a \${${added}} placeholder can be added through the API only to secret fields (tokens, keys, passwords, env, headers); write it into service.yaml by hand`,
        });
      }
    } else if (Array.isArray(node)) {
      for (const [i, v] of node.entries()) walk(v, [...path, i], existing, true);
    } else if (node !== null && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) walk(v, [...path, k], inArray ? existing : namesAt([...path, k]), inArray);
    }
  };
  for (const [k, v] of Object.entries(patch)) walk(v, [k], namesAt([k]), false);
  return issues;
}

function collectPlaceholderNames(node: unknown, into = new Set<string>()): Set<string> {
  if (typeof node === 'string') for (const name of placeholderNames(node)) into.add(name);
  else if (Array.isArray(node)) for (const v of node) collectPlaceholderNames(v, into);
  else if (node !== null && typeof node === 'object') for (const v of Object.values(node)) collectPlaceholderNames(v, into);
  return into;
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
