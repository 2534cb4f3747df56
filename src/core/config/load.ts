import fs from 'node:fs';
import { AppError, ConfigError } from '../errors.js';
import { formatCliCommand } from '../invocation.js';
import { CONFIG_FILE_NAME, resolveAssistantPaths } from '../paths.js';
import { formatMissing, resolvePlaceholders } from './env.js';
import { formatIssues, formatPath } from './issues.js';
import { fileSizeProblem, findTooDeep } from './limits.js';
import { createConfigSchema, isExtensionKey, type ConfigSchemaParts, type ServiceConfig } from './schema.js';
import { collectSecretEnvValues, collectSecretValues, collectUrlSecrets } from './secrets.js';
import { nextTurn } from '../util/next-turn.js';
import { findUnsafeValues } from './unsafe-values.js';
import { parseYaml } from './yaml-document.js';

export interface LoadedConfig {
  file: string;
  dir: string;
  config: ServiceConfig;
  /** Problems that do not stop loading (a channel disabled by a missing variable, an ignored nested fallback). */
  warnings: string[];
  disabledChannels: Array<{ name: string; reason: string }>;
  /** Dotted paths whose value came from a `${VAR}` placeholder. */
  placeholderPaths: Set<string>;
  /** The file's content as plain data, placeholders unresolved. */
  raw: Record<string, unknown>;
  /**
   * Values never to be shown: every placeholder resolution, every secret field's value, and the
   * environment's credential variables (secrets.ts). Responses, events and logs mask them.
   */
  secretValues: ReadonlySet<string>;
}

/** A check that only a plugin can make (engine_c's model format), returning problems with their paths. */
export type ConfigCheck = (config: ServiceConfig) => Array<{ path: Array<string | number>; message: string }>;

export interface LoadConfigOptions {
  dir: string;
  parts: ConfigSchemaParts;
  checks?: readonly ConfigCheck[];
  env?: NodeJS.ProcessEnv;
}

/** Read, resolve and validate service.yaml; throws ConfigError listing every problem at once. */
export function loadConfig(opts: LoadConfigOptions): LoadedConfig {
  const paths = resolveAssistantPaths(opts.dir);
  let text: string;
  try {
    text = fs.readFileSync(paths.configFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new AppError('config_missing', `No ${CONFIG_FILE_NAME} in ${paths.dir}`, {
        hint: `run \`${formatCliCommand('init')}\` there, or pass --dir <assistant directory>`,
      });
    }
    throw err;
  }
  return parseConfigText(text, { ...opts, file: paths.configFile });
}

/** Validate config text already in memory (used by edits before anything is written). */
export function parseConfigText(text: string, opts: LoadConfigOptions & { file: string }): LoadedConfig {
  // Before parsing: a file past the limit is not read into a document at all.
  const tooLarge = fileSizeProblem(text, 'is');
  if (tooLarge) throw new ConfigError(opts.file, [tooLarge]);
  return configFromData(parseYaml(text, opts.file).toJS() ?? {}, opts);
}

/** Validate a file's content already parsed into plain data. */
export function configFromData(raw: unknown, opts: LoadConfigOptions & { file: string }): LoadedConfig {
  const steps = validationSteps(asMapping(raw, opts.file), opts);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * The same, each step (the unsafe-value scan, placeholders and secrets, the schema, the checks)
 * in its own turn of the event loop: for a PATCH, whose file may hold 1,000 tasks, while the
 * gateway answers other requests (its worker thread parsed the file).
 */
export async function configFromDataInTurns(raw: unknown, opts: LoadConfigOptions & { file: string }): Promise<LoadedConfig> {
  const steps = validationSteps(asMapping(raw, opts.file), opts);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await nextTurn();
  }
}

// --- internal ---

function asMapping(raw: unknown, file: string): Record<string, unknown> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(file, ['(root): expected a mapping of settings (name, engine, ...)']);
  }
  return raw as Record<string, unknown>;
}

/** Validation as a generator: each `yield` is a point where an asynchronous caller lets other work run. */
function* validationSteps(raw: Record<string, unknown>, opts: LoadConfigOptions & { file: string }): Generator<void, LoadedConfig, void> {
  // NUL and prototype keys first, on the raw values: nothing below may act on them.
  const problems: string[] = findUnsafeValues(raw).map((u) => `${formatPath(u.path)}: ${u.message}`);
  const tooDeep = findTooDeep(raw);
  if (tooDeep) problems.push(`${formatPath(tooDeep.path)}: ${tooDeep.message}`);
  const warnings: string[] = [];
  const disabledChannels: LoadedConfig['disabledChannels'] = [];
  yield;

  const env = opts.env ?? process.env;
  const resolved = resolvePlaceholders(raw, env);
  const value = resolved.value;
  // Collected before disabled channels are dropped: their literal secrets are still secrets.
  // The store URL's password too, from the file or SERVICE_STORE_URL, in either form (`user:pw@`, `?password=`).
  const storeUrl = (value.store as { url?: unknown } | undefined)?.url;
  const secretValues = new Set([
    ...resolved.substituted,
    ...collectSecretValues(value),
    ...collectSecretEnvValues(env),
    ...collectUrlSecrets(typeof storeUrl === 'string' ? storeUrl : undefined),
    ...collectUrlSecrets(env.SERVICE_STORE_URL?.trim()),
  ]);
  for (const m of resolved.missing) {
    const [top, channel] = m.path;
    if (top === 'channels' && typeof channel === 'string') {
      const reason = formatMissing(m);
      warnings.push(`${reason}; channel ${channel} is disabled`);
      if (!disabledChannels.some((d) => d.name === channel)) disabledChannels.push({ name: channel, reason });
    } else {
      problems.push(formatMissing(m));
    }
  }
  const channels = value.channels;
  if (channels && typeof channels === 'object' && !Array.isArray(channels)) {
    const kept = { ...(channels as Record<string, unknown>) };
    for (const d of disabledChannels) delete kept[d.name];
    value.channels = kept;
  }
  yield;

  const schema = createConfigSchema(opts.parts, { coerceScalars: true });
  const known = new Set(Object.keys(schema.shape));
  const forSchema: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (isExtensionKey(k)) continue;
    forSchema[k] = v;
    if (!known.has(k)) problems.push(`${k}: unknown key (extension keys must start with "x-")`);
  }
  const fallback = (value.provider as { fallback?: Record<string, unknown> } | undefined)?.fallback;
  if (fallback && typeof fallback === 'object' && 'fallback' in fallback) {
    warnings.push('provider.fallback.fallback: a nested fallback is ignored');
  }

  const parsed = schema.safeParse(forSchema, { reportInput: true });
  yield;
  if (!parsed.success) {
    const unknownTop = new Set(Object.keys(forSchema).filter((k) => !known.has(k)));
    problems.push(...formatIssues(parsed.error.issues.filter((i) => !isUnknownTopLevel(i, unknownTop))));
  } else {
    for (const check of opts.checks ?? []) {
      problems.push(...check(parsed.data).map((p) => `${formatPath(p.path)}: ${p.message}`));
    }
  }
  if (problems.length > 0 || !parsed.success) throw new ConfigError(opts.file, [...new Set(problems)].sort());

  return {
    file: opts.file,
    dir: resolveAssistantPaths(opts.dir).dir,
    config: parsed.data,
    warnings,
    disabledChannels,
    placeholderPaths: resolved.placeholderPaths,
    raw,
    secretValues,
  };
}

function isUnknownTopLevel(issue: { code: string; path: PropertyKey[]; keys?: string[] }, unknownTop: Set<string>): boolean {
  return issue.code === 'unrecognized_keys' && issue.path.length === 0 && (issue.keys ?? []).every((k) => unknownTop.has(k));
}
