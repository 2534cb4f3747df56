import fs from 'node:fs';
import path from 'node:path';
import { channelDefinitions } from '../channels/registry.js';
import type { LoadedConfig } from '../core/config/load.js';
import { parseYaml } from '../core/config/yaml-document.js';
import { engineDefinitions, getEngine, resolveEngineId } from '../core/engines/registry.js';
import type { EngineDefinition } from '../core/engines/types.js';
import { ConfigError } from '../core/errors.js';
import { checkOwnCommandName, formatCliCommand } from '../core/invocation.js';
import { loadServiceConfig } from '../definitions.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { describeStoreTarget, openStore, resolveStoreTarget } from '../core/store/open-store.js';
import { checkEngine, listInstalledEngines } from './doctor-engine.js';
import { checkGatewayPort } from './doctor-gateway.js';
import { findWritableOtherSchemas } from '../core/store/pg-roles.js';
import type { CommandIO } from './io.js';

/** One line of the report: `pass`, `warn` (worth fixing, fails nothing) or `FAIL`, with the fix. */
export interface DoctorCheck {
  ok: boolean;
  /** Worth fixing, but nothing fails because of it (printed `warn`, exit code unchanged). */
  warn?: boolean;
  title: string;
  detail: string;
  fix?: string;
}

/** `service doctor`: every check prints pass/warn/FAIL with the fix; exit 1 on any failure. */
export async function runDoctor(opts: { dir: string; json?: boolean }, io: CommandIO): Promise<number> {
  const checks: DoctorCheck[] = [];
  let loaded: LoadedConfig | undefined;
  try {
    loaded = loadServiceConfig(opts.dir);
    checks.push({ ok: true, title: 'service.yaml', detail: `valid (${loaded.file})` });
    for (const w of loaded.warnings)
      checks.push({ ok: false, title: 'service.yaml', detail: w, fix: 'set the variable (or a .env file) or remove the channel block' });
  } catch (err) {
    const detail = err instanceof ConfigError ? err.problems.join('; ') : (err as Error).message;
    checks.push({ ok: false, title: 'service.yaml', detail, fix: err instanceof ConfigError ? `edit ${err.file}` : `run \`${formatCliCommand('init')}\`` });
  }

  // Without a valid file, only an engine the file names clearly is checked: one problem, one FAIL line.
  const engine = loaded ? getEngine(loaded.config.engine) : engineNamedIn(opts.dir);
  if (engine) checks.push(...(await checkEngine(engine, loaded)));
  checks.push(listInstalledEngines());
  if (loaded) {
    checks.push(...checkChannels(loaded));
    checks.push(...(await checkStore(loaded)));
    checks.push(...(await checkGatewayPort(loaded)));
  }
  checks.push(checkCommand());

  if (opts.json) io.out(JSON.stringify({ ok: checks.every((c) => c.ok), checks }, null, 2));
  else {
    for (const c of checks) {
      io.out(`${c.warn ? 'warn' : c.ok ? 'pass' : 'FAIL'}  ${c.title}: ${c.detail}`);
      if ((!c.ok || c.warn) && c.fix) io.out(`      fix: ${c.fix}`);
    }
  }
  return checks.every((c) => c.ok) ? 0 : 1;
}

// --- internal ---

/** The engine a file that does not validate names (an id or a program's name), when it parses at all. */
function engineNamedIn(dir: string): EngineDefinition | undefined {
  try {
    const file = resolveAssistantPaths(dir).configFile;
    const raw = parseYaml(fs.readFileSync(file, 'utf8'), file).toJS() as { engine?: unknown } | null;
    const id = typeof raw?.engine === 'string' ? resolveEngineId(raw.engine) : undefined;
    return id === undefined ? undefined : engineDefinitions[id];
  } catch {
    return undefined;
  }
}

/** What a bare `service` runs in the user's shell: a clash with the system's `service` is a warning with the fix. */
function checkCommand(): DoctorCheck {
  const report = checkOwnCommandName();
  return report.ok
    ? { ok: true, title: 'command', detail: report.detail }
    : { ok: true, warn: true, title: 'command', detail: report.detail, ...(report.fix ? { fix: report.fix } : {}) };
}

function checkChannels(loaded: LoadedConfig): DoctorCheck[] {
  return Object.entries(loaded.config.channels).map(([name, opts]): DoctorCheck => {
    const def = channelDefinitions[name];
    const moduleId = def ? def.sdkPackage : String((opts as { _adapter?: string })._adapter);
    const found = def ? canImport(moduleId) : customAdapterExists(moduleId, loaded.dir);
    return found
      ? { ok: true, title: `channel ${name}`, detail: `${def ? `${def.title} SDK` : 'custom adapter'} ${moduleId} found` }
      : {
          ok: false,
          title: `channel ${name}`,
          detail: `${moduleId} cannot be found`,
          fix: def ? `npm install ${moduleId}` : `check channels.${name}._adapter (a path relative to ${loaded.dir} or an installed package)`,
        };
  });
}

function canImport(specifier: string): boolean {
  try {
    import.meta.resolve(specifier);
    return true;
  } catch {
    return false;
  }
}

function customAdapterExists(spec: string, dir: string): boolean {
  if (spec.startsWith('.') || path.isAbsolute(spec)) return fs.existsSync(path.resolve(dir, spec));
  return fs.existsSync(path.join(dir, 'node_modules', spec)) || canImport(spec);
}

/**
 * The state store: the SQLite file needs nothing; a PostgreSQL store is connected to and migrated,
 * as a start would, and its role is checked for write access to other assistants' schemas.
 */
async function checkStore(loaded: LoadedConfig): Promise<DoctorCheck[]> {
  const target = resolveStoreTarget(loaded.config, process.env, resolveAssistantPaths(loaded.dir).database);
  if (target.kind === 'sqlite') return [{ ok: true, title: 'state store', detail: `SQLite ${target.file}` }];
  const store = openStore(target);
  try {
    await store.ready();
  } catch (err) {
    return [
      {
        ok: false,
        title: 'state store',
        detail: (err as Error).message,
        fix: 'check store.url / SERVICE_STORE_URL (user, password, host, database) and that the server accepts connections from this host',
      },
    ];
  } finally {
    await store.close();
  }
  return [{ ok: true, title: 'state store', detail: `PostgreSQL ${describeStoreTarget(target)}: connected, schema up to date` }, await checkStoreRole(target)];
}

/** Whether the store's role could write another assistant's schema (it should own its own only). */
async function checkStoreRole(target: { url: string; schema: string }): Promise<DoctorCheck> {
  const title = 'store role';
  try {
    const others = await findWritableOtherSchemas(target.url, target.schema);
    if (others.length === 0) return { ok: true, title, detail: `can write no other assistant's schema` };
    return {
      ok: true,
      warn: true,
      title,
      detail: `the role of store.url can write other assistants' schemas (${others.join(', ')}): with its password, any of them can be changed, its approvals too`,
      fix: `give each assistant a role of its own: \`${formatCliCommand('store migrate --to <admin url> --role')}\` (or \`--print-sql\` for your database administrator)`,
    };
  } catch (err) {
    return { ok: true, warn: true, title, detail: `could not check what the role may write: ${(err as Error).message}` };
  }
}
