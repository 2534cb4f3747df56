import type { FleetEntry } from '../core/fleet/entry.js';
import { probeHealth, type HealthProbe } from '../core/fleet/health.js';
import { createFleetDirectory, resolveFleetDir } from '../core/fleet/fleet-directory.js';
import type { CommandIO } from './io.js';

export interface FleetListOptions {
  json?: boolean;
  /** Injected by tests; the CLI passes nothing and gets the process environment. */
  env?: NodeJS.ProcessEnv;
  healthTimeoutMs?: number;
}

/**
 * `service fleet ls [--json]`: the gateways registered on this machine (dead ones are dropped and
 * their files removed) and whether each answers GET /health. Exit 0 even when one does not
 * answer: the listing is the answer, and a peer that is slow to answer is not this command's failure.
 */
export async function runFleetList(opts: FleetListOptions, io: CommandIO): Promise<number> {
  const registry = createFleetDirectory({ dir: resolveFleetDir(opts.env ?? process.env) });
  const entries = registry.list();
  const probes = await Promise.all(entries.map((e) => probeHealth(e.url, opts.healthTimeoutMs ?? 1_500)));
  const rows = entries.map((e, i) => ({ ...e, health: probes[i] as HealthProbe }));
  if (opts.json) {
    io.out(
      JSON.stringify(
        { dir: registry.dir, gateways: rows.map(({ health, ...e }) => ({ ...e, healthy: health.ok, ...(health.error ? { healthError: health.error } : {}) })) },
        null,
        2,
      ),
    );
    return 0;
  }
  if (rows.length === 0) {
    io.out(`No gateways registered in ${registry.dir}.`);
    return 0;
  }
  const header = ['NAME', 'ROLE', 'ENGINE', 'URL', 'PID', 'UP', 'HEALTH'];
  const table = [header, ...rows.map(describeRow)];
  const widths = header.map((_, col) => Math.max(...table.map((r) => (r[col] ?? '').length)));
  for (const r of table) io.out(r.map((cell, col) => (col === r.length - 1 ? cell : cell.padEnd(widths[col] ?? 0))).join('  '));
  return 0;
}

// --- internal ---

function describeRow(e: FleetEntry & { health: HealthProbe }): string[] {
  const role = e.role ? (e.role.length > 40 ? `${e.role.slice(0, 39)}…` : e.role) : '-';
  const health = e.health.ok ? `ok (${e.health.ms} ms)` : `not answering: ${e.health.error ?? 'unknown'}`;
  return [e.name, role, e.engine, e.url, String(e.pid), since(e.startedAt), health];
}

function since(iso: string): string {
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 1000));
  if (!Number.isFinite(s)) return '?';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}
