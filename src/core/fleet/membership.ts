import type { ConfigSource } from '../config/source.js';
import type { PeerAssistant } from '../engines/context.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import { FLEET_ENTRY_FORMAT, advertisedUrl, type FleetEntry } from './entry.js';
import type { FleetRegistration, FleetDirectory } from './fleet-directory.js';
import type { SharedFleet, SharedRegistration } from './shared-fleet.js';

/**
 * A gateway's place in the fleet: its entry is written once it listens (with the real port),
 * follows changes of name, role and engine in service.yaml, and is removed on shutdown; with a
 * PostgreSQL store, the same in the database's fleet table too (shared-fleet.ts), so gateways on
 * other hosts see it. Registering is best effort: a fleet directory that cannot be written or a
 * database that cannot be reached costs peer awareness, never the gateway.
 */
export interface FleetMembership {
  readonly entry: FleetEntry | undefined;
  /** Removes the entry from the folder at once; resolves once the database row is gone too (never rejects). */
  leave(): Promise<void>;
}

/** Who "this gateway" is in a listing: its process on its machine. */
export interface FleetSelf {
  pid: number;
  hostname: string;
}

export interface JoinFleetOptions {
  registry: FleetDirectory;
  config: ConfigSource;
  host: string;
  port: number;
  dir: string;
  version: string;
  log: Logger;
  pid?: number;
  now?: () => number;
  /** The machine's name (default: os.hostname()). */
  hostname: string;
  /** With a PostgreSQL store: the database fleet and the store's URL. */
  shared?: { fleet: SharedFleet; url: string };
}

export function joinFleet(opts: JoinFleetOptions): FleetMembership {
  const startedAt = new Date((opts.now ?? Date.now)()).toISOString();
  const describe = (): FleetEntry => {
    const c = opts.config.current().config;
    return {
      format: FLEET_ENTRY_FORMAT,
      name: c.name,
      ...(c.persona?.role ? { role: c.persona.role } : {}),
      engine: c.engine,
      host: opts.host,
      port: opts.port,
      url: advertisedUrl(opts.host, opts.port),
      pid: opts.pid ?? process.pid,
      startedAt,
      version: opts.version,
      dir: opts.dir,
      hostname: opts.hostname,
    };
  };
  // Peers on other machines cannot use a loopback URL: a wildcard bind is advertised there by host name.
  const describeShared = () => ({ ...describe(), url: advertisedUrl(opts.host, opts.port, opts.hostname), hostname: opts.hostname });
  let entry = describe();
  const shared: SharedRegistration | undefined = opts.shared?.fleet.register(describeShared(), opts.shared.url);
  let reg: FleetRegistration | undefined;
  try {
    reg = opts.registry.register(entry);
  } catch (err) {
    opts.log.warn(`cannot register in the fleet directory ${opts.registry.dir}: ${errorMessage(err)}; peers on this machine will not see this gateway`);
  }
  const off = opts.config.onChange(() => {
    const next = describe();
    if (JSON.stringify(next) === JSON.stringify(entry)) return;
    entry = next;
    shared?.update(describeShared());
    try {
      reg?.update(next);
    } catch (err) {
      opts.log.warn(`cannot update the fleet entry ${reg?.file}: ${errorMessage(err)}`);
    }
  });
  return {
    get entry() {
      return reg ? entry : undefined;
    },
    leave() {
      off();
      try {
        reg?.remove();
      } catch (err) {
        opts.log.warn(`cannot remove the fleet entry ${reg?.file}: ${errorMessage(err)}`);
      }
      return shared?.remove() ?? Promise.resolve();
    },
  };
}

/**
 * The fleet as one list: this machine's folder and the database's rows, each gateway once, oldest
 * first. A database row is the folder's entry again when it comes from this machine and has its
 * pid and port, or its URL (a gateway restarted on the same port, its old row not yet stale).
 * Folder entries name this machine when their file does not.
 */
export function mergeFleetEntries(local: readonly FleetEntry[], shared: readonly FleetEntry[], hostname: string): FleetEntry[] {
  const mine = local.map((e) => (e.hostname ? e : { ...e, hostname }));
  const known = (r: FleetEntry) => mine.some((l) => l.hostname === r.hostname && ((l.pid === r.pid && l.port === r.port) || l.url === r.url));
  const all = [...mine, ...shared.filter((r) => !known(r))];
  return all.sort((a, b) => compareCodePoints(a.startedAt, b.startedAt) || compareCodePoints(a.hostname ?? '', b.hostname ?? '') || a.port - b.port);
}

/** Whether an entry is this gateway's process (a folder entry without a host name is of this machine). */
export function isSelfEntry(e: FleetEntry, self: FleetSelf): boolean {
  return e.pid === self.pid && (e.hostname ?? self.hostname) === self.hostname;
}

/** The other assistants for the assistant context: every live entry but this process's own. */
export function peerAssistants(entries: readonly FleetEntry[], self: FleetSelf): PeerAssistant[] {
  return entries
    .filter((e) => !isSelfEntry(e, self))
    .map((e) => ({ name: e.name, ...(e.role ? { role: e.role } : {}), url: e.url, host: e.hostname ?? self.hostname }));
}

/** Rows for the dashboard's fleet panel: every live gateway, this one marked, each with its host and dashboard link. */
export function fleetPanelRows(entries: readonly FleetEntry[], self: FleetSelf): Array<Record<string, unknown>> {
  return entries.map((e) => ({
    name: e.name,
    ...(e.role ? { role: e.role } : {}),
    engine: e.engine,
    url: e.url,
    dashboardUrl: `${e.url}/`,
    pid: e.pid,
    startedAt: e.startedAt,
    version: e.version,
    hostname: e.hostname ?? self.hostname,
    self: isSelfEntry(e, self),
  }));
}

// --- internal ---

function compareCodePoints(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
