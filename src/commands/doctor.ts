import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { channelDefinitions } from '../channels/registry.js';
import type { LoadedConfig } from '../core/config/load.js';
import { resolveGatewayBind } from '../core/config/bind.js';
import { findEngineBinary } from '../core/engines/detect.js';
import { engineDefinitions } from '../core/engines/registry.js';
import { probeVersion } from '../core/engines/runner.js';
import { ConfigError } from '../core/errors.js';
import { formatCliCommand } from '../core/invocation.js';
import { loadServiceConfig } from '../definitions.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { describeStoreTarget, openStore, resolveStoreTarget } from '../core/store/open-store.js';
import { findWritableOtherSchemas } from '../core/store/pg-roles.js';
import type { CommandIO } from './io.js';

interface Check {
  ok: boolean;
  /** Passed, with something to change (printed `warn`; the exit code stays 0). */
  warn?: boolean;
  title: string;
  detail: string;
  fix?: string;
}

/** `service doctor`: every check prints pass/fail with the fix; exit 1 on any failure. */
export async function runDoctor(opts: { dir: string; json?: boolean }, io: CommandIO): Promise<number> {
  const checks: Check[] = [];
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

  const engineIds = loaded ? [loaded.config.engine] : Object.keys(engineDefinitions);
  for (const id of engineIds) checks.push(...(await checkEngine(id, loaded)));
  if (loaded) checks.push(listInstalledEngines());
  if (loaded) {
    checks.push(...checkChannels(loaded));
    checks.push(...(await checkStore(loaded)));
    const bind = resolveGatewayBind(loaded.config, {});
    checks.push(await checkPort(bind.host, bind.port));
  }

  if (opts.json) io.out(JSON.stringify({ ok: checks.every((c) => c.ok), checks }, null, 2));
  else {
    for (const c of checks) {
      io.out(`${c.ok ? (c.warn ? 'warn' : 'pass') : 'FAIL'}  ${c.title}: ${c.detail}`);
      if ((!c.ok || c.warn) && c.fix) io.out(`      fix: ${c.fix}`);
    }
  }
  return checks.every((c) => c.ok) ? 0 : 1;
}

// --- internal ---

async function checkEngine(id: string, loaded: LoadedConfig | undefined): Promise<Check[]> {
  const def = engineDefinitions[id];
  if (!def) return [];
  const configured = loaded ? { config: loaded.config, dir: loaded.dir } : undefined;
  const named = configured && def.configuredBinary?.(configured.config);
  const bin = findEngineBinary(def, undefined, configured);
  const install = named
    ? `install ${named} or set ${def.options?.key}.command in service.yaml`
    : def.npmPackage
      ? `npm install -g ${def.npmPackage}`
      : "install it with the vendor's installer";
  if (!bin) {
    return [{ ok: false, title: `${id} (${def.title})`, detail: `${named ?? def.binaries.join(' / ')} not found on PATH`, fix: install }];
  }
  // A configured program (any ACP agent) need not know --version; the ones this engine knows do.
  const unknownProgram = named !== undefined && !def.binaries.includes(path.basename(named));
  const version = unknownProgram ? undefined : await probeVersion(bin);
  const checks: Check[] = [
    !version
      ? { ok: true, title: `${id} (${def.title})`, detail: `${bin} (version not probed: not a program this engine knows)` }
      : version.ok
        ? { ok: true, title: `${id} (${def.title})`, detail: `${bin} ${version.text}` }
        : { ok: false, title: `${id} (${def.title})`, detail: `${bin}: ${version.text}`, fix: `reinstall: ${install}` },
  ];
  if (loaded) {
    const cred = def.credentialStatus({ config: loaded.config, env: process.env, home: os.homedir() });
    checks.push({ ok: cred.ok, title: `${id} credentials`, detail: cred.detail, ...(cred.ok ? {} : { fix: cred.detail.replace(/^no credentials: /, '') }) });
  }
  return checks;
}

/** Every engine whose CLI is on PATH, so a user choosing another one sees what is installed. */
function listInstalledEngines(): Check {
  const found = Object.values(engineDefinitions).flatMap((def) => {
    const bin = findEngineBinary(def);
    return bin ? [`${def.id} (${def.title}: ${path.basename(bin)})`] : [];
  });
  return { ok: true, title: 'engines on PATH', detail: found.length > 0 ? found.join(', ') : 'none' };
}

function checkChannels(loaded: LoadedConfig): Check[] {
  return Object.entries(loaded.config.channels).map(([name, opts]): Check => {
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
async function checkStore(loaded: LoadedConfig): Promise<Check[]> {
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
async function checkStoreRole(target: { url: string; schema: string }): Promise<Check> {
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

function checkPort(host: string, port: number): Promise<Check> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      resolve({
        ok: false,
        title: 'gateway port',
        detail: `${host}:${port} is not free (${err.code})`,
        fix: 'stop what uses it (maybe a running gateway), or set gateway.port / SERVICE_PORT',
      }),
    );
    server.listen(port, host, () => server.close(() => resolve({ ok: true, title: 'gateway port', detail: `${host}:${port} is free` })));
  });
}
