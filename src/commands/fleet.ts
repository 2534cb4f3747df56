import fs from 'node:fs';
import path from 'node:path';
import { AppError, errorMessage } from '../core/errors.js';
import type { FleetEntry } from '../core/fleet/entry.js';
import { probeHealth, type HealthProbe } from '../core/fleet/health.js';
import { createFleetDirectory, resolveFleetDir } from '../core/fleet/fleet-directory.js';
import { mergeFleetEntries } from '../core/fleet/membership.js';
import { readHostname, resolveFleetDatabaseUrl } from '../core/fleet/shared-fleet.js';
import { formatSafeUrl } from '../core/config/secrets.js';
import { escapeControl } from '../core/util/escape-text.js';
import { createPgFleetTable, formatFleetError } from '../core/fleet/pg-fleet-table.js';
import { loadServiceConfig } from '../definitions.js';
import type { CommandIO } from './io.js';

export interface FleetListOptions {
  json?: boolean;
  /** Injected by tests; the CLI passes nothing and gets the process environment. */
  env?: NodeJS.ProcessEnv;
  healthTimeoutMs?: number;
  /** `--store <url>`: list this PostgreSQL database's fleet too. */
  store?: string;
  /** The assistant directory (`-d`, default the current one): its store.url names the database, as for its gateway. */
  dir?: string;
}

/**
 * `service fleet ls [--store <url>] [--json]`: the gateways registered on this machine (dead ones
 * are dropped and their files removed) and, when a PostgreSQL database is named (`--store`, else
 * as the gateway finds its store: SERVICE_STORE_URL, else `store.url` of the assistant directory),
 * the gateways registered there from every host; each once, with its host, and whether it answers
 * GET /health. Exit 0 even when one does not answer or the database cannot be read: the listing
 * is the answer, and what it could not reach is said on stderr.
 */
export async function runFleetList(opts: FleetListOptions, io: CommandIO): Promise<number> {
  const env = opts.env ?? process.env;
  const registry = createFleetDirectory({ dir: resolveFleetDir(env) });
  const database = findFleetDatabase(opts, env, io);
  const local = registry.list();
  const shared = database ? await readDatabaseFleet(database, io) : { entries: [] };
  const entries = mergeFleetEntries(local, shared.entries, readHostname());
  const probes = await Promise.all(entries.map((e) => probeHealth(e.url, opts.healthTimeoutMs ?? 1_500)));
  const rows = entries.map((e, i) => ({ ...e, health: probes[i] as HealthProbe }));
  if (opts.json) {
    io.out(
      JSON.stringify(
        {
          dir: registry.dir,
          ...(database ? { database: formatSafeUrl(database) } : {}),
          ...(shared.error ? { databaseError: shared.error } : {}),
          gateways: rows.map(({ health, ...e }) => ({ ...e, healthy: health.ok, ...(health.error ? { healthError: health.error } : {}) })),
        },
        null,
        2,
      ),
    );
    return 0;
  }
  if (rows.length === 0) {
    io.out(`No gateways registered in ${registry.dir}${database ? ` or in the fleet of ${formatSafeUrl(database)}` : ''}.`);
    return 0;
  }
  const header = ['NAME', 'ROLE', 'ENGINE', 'HOST', 'URL', 'PID', 'UP', 'HEALTH'];
  // Rows of the shared fleet table are written by any assistant of the database: shown escaped.
  const table = [header, ...rows.map((r) => describeRow(r).map(escapeControl))];
  const widths = header.map((_, col) => Math.max(...table.map((r) => (r[col] ?? '').length)));
  for (const r of table) io.out(r.map((cell, col) => (col === r.length - 1 ? cell : cell.padEnd(widths[col] ?? 0))).join('  '));
  return 0;
}

// --- internal ---

/** `--store`, else what the assistant directory's gateway would use, else SERVICE_STORE_URL alone. */
function findFleetDatabase(opts: FleetListOptions, env: NodeJS.ProcessEnv, io: CommandIO): string | undefined {
  if (opts.store !== undefined) {
    if (!/^postgres(ql)?:\/\/\S+$/.test(opts.store)) throw new AppError('usage', '--store: expected a postgres:// or postgresql:// URL');
    return opts.store;
  }
  const dir = path.resolve(opts.dir ?? process.cwd());
  if (fs.existsSync(path.join(dir, 'service.yaml'))) {
    try {
      return resolveFleetDatabaseUrl(loadServiceConfig(dir, env).config, env);
    } catch (err) {
      io.err(`note: ${path.join(dir, 'service.yaml')} could not be read (${errorMessage(err)}); its store's fleet is not listed`);
    }
  }
  return env.SERVICE_STORE_URL?.trim() || undefined;
}

async function readDatabaseFleet(url: string, io: CommandIO): Promise<{ entries: FleetEntry[]; error?: string }> {
  const table = createPgFleetTable({ url, connectTimeoutMs: 5_000 });
  try {
    return { entries: await table.list() };
  } catch (err) {
    const error = formatFleetError(err);
    io.err(`cannot read the fleet of ${formatSafeUrl(url)}: ${error}; listing this machine's gateways only`);
    return { entries: [], error };
  } finally {
    await table.close().catch(() => undefined);
  }
}

function describeRow(e: FleetEntry & { health: HealthProbe }): string[] {
  const role = e.role ? (e.role.length > 40 ? `${e.role.slice(0, 39)}…` : e.role) : '-';
  const health = e.health.ok ? `ok (${e.health.ms} ms)` : `not answering: ${e.health.error ?? 'unknown'}`;
  return [e.name, role, e.engine, e.hostname ?? '-', e.url, String(e.pid), since(e.startedAt), health];
}

function since(iso: string): string {
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 1000));
  if (!Number.isFinite(s)) return '?';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}
