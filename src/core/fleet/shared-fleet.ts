import os from 'node:os';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import { createPgFleetTable, formatFleetError, type PgFleetTable } from './pg-fleet-table.js';
import type { ServiceConfig } from '../config/schema.js';
import { resolveStoreTarget } from '../store/open-store.js';
import { formatSafeUrl } from '../config/secrets.js';
import type { FleetEntry } from './entry.js';

/**
 * The fleet in a PostgreSQL database, for gateways whose store is there: the gateway's row is
 * written once it listens and rewritten by a heartbeat; each beat also deletes stale rows and
 * reads the live ones into a cache, which is what `entries()` answers (the assistant context is
 * built synchronously, per turn: it must not wait for a query). Best effort throughout: a
 * database that cannot be reached costs fleet awareness (the cache empties, one warning until it
 * works again), never the gateway.
 */
export interface SharedFleet {
  /** The database's live gateways as of the last heartbeat (none before joining or while unreachable). */
  entries(): FleetEntry[];
  /** Start registering in the database at `url`; `entry` must carry `hostname`. */
  register(entry: FleetEntry & { hostname: string }, url: string): SharedRegistration;
}

export interface SharedRegistration {
  /** Write the new entry now (name, role or engine changed), not at the next beat. */
  update(entry: FleetEntry & { hostname: string }): void;
  /** Stop the heartbeat, delete the row, close the pool; resolves when done, never rejects. */
  remove(): Promise<void>;
}

export interface SharedFleetOptions {
  /** How often the row is refreshed; readers drop it after STALE_BEATS of these are missed. */
  heartbeatMs: number;
  log: Logger;
  /** Injected by tests; default: the PostgreSQL fleet table. */
  openTable?: (url: string) => PgFleetTable;
}

/** Documented default 5 s; `SERVICE_FLEET_HEARTBEAT_MS` overrides it (tests use a short one). */
export function resolveHeartbeatMs(env: NodeJS.ProcessEnv): number {
  const v = Number(env.SERVICE_FLEET_HEARTBEAT_MS);
  return Number.isFinite(v) && v >= 50 ? Math.round(v) : 5_000;
}

/** The database whose fleet an assistant joins: its store's, when that is PostgreSQL (as the gateway finds it). */
export function resolveFleetDatabaseUrl(config: Pick<ServiceConfig, 'name' | 'store'>, env: NodeJS.ProcessEnv): string | undefined {
  const target = resolveStoreTarget(config, env, '');
  return target.kind === 'postgres' ? target.url : undefined;
}

/** The machine's name as rows record it. */
export function readHostname(): string {
  return os.hostname() || 'localhost';
}

export function createSharedFleet(opts: SharedFleetOptions): SharedFleet {
  const open = opts.openTable ?? ((url: string) => createPgFleetTable({ url, onIdleError: () => undefined }));
  let cache: FleetEntry[] = [];
  return {
    entries: () => cache,
    register(first, url) {
      let entry = first;
      let table: PgFleetTable | undefined;
      let timer: NodeJS.Timeout | undefined;
      let running: Promise<void> = Promise.resolve();
      let stopped = false;
      let failing = false;
      const where = formatSafeUrl(url);

      const beatOnce = async () => {
        table ??= open(url);
        const t = table;
        try {
          await t.beat(entry, opts.heartbeatMs);
          await t.prune();
          const rows = await t.list();
          if (!stopped) cache = rows;
          if (failing) opts.log.info(`registered in the fleet of ${where} again`);
          failing = false;
        } catch (err) {
          cache = [];
          if (!failing)
            opts.log.warn(`cannot register in the fleet of ${where}: ${formatFleetError(err)}; gateways on other hosts will not see this one until it can`);
          failing = true;
          // A pool whose first connection or migration failed stays failed: open a new one next time.
          if (
            await t.ready.then(
              () => false,
              () => true,
            )
          ) {
            table = undefined;
            void t.close().catch(() => undefined);
          }
        }
      };
      // One beat at a time, each scheduled after the previous one ends, so a slow server never piles them up.
      const beat = () => {
        running = running.then(beatOnce);
        return running;
      };
      const schedule = () => {
        if (stopped) return;
        timer = setTimeout(() => void beat().then(schedule), opts.heartbeatMs);
        timer.unref();
      };
      void beat().then(schedule);

      return {
        update(next) {
          entry = next;
          if (!stopped) void beat();
        },
        async remove() {
          if (stopped) return running;
          stopped = true;
          if (timer) clearTimeout(timer);
          cache = [];
          running = running.then(async () => {
            const t = table;
            if (!t) return;
            try {
              await t.remove({ hostname: entry.hostname, pid: entry.pid, port: entry.port });
            } catch (err) {
              opts.log.warn(`cannot remove this gateway from the fleet of ${where}: ${errorMessage(err)}; it drops out when its heartbeat is missed`);
            }
            await t.close().catch(() => undefined);
          });
          return running;
        },
      };
    },
  };
}
