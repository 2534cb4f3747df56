import type { ConfigSource } from '../config/source.js';
import type { PeerAssistant } from '../engines/context.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import { FLEET_ENTRY_FORMAT, advertisedUrl, type FleetEntry } from './entry.js';
import type { FleetRegistration, FleetDirectory } from './fleet-directory.js';

/**
 * A gateway's place in the fleet: its entry is written once it listens (with the real port),
 * follows changes of name, role and engine in service.yaml, and is removed on shutdown.
 * Registering is best effort: a fleet directory that cannot be written costs peer awareness,
 * never the gateway.
 */
export interface FleetMembership {
  readonly entry: FleetEntry | undefined;
  leave(): void;
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
    };
  };
  let entry = describe();
  let reg: FleetRegistration;
  try {
    reg = opts.registry.register(entry);
  } catch (err) {
    opts.log.warn(`cannot register in the fleet directory ${opts.registry.dir}: ${errorMessage(err)}; peers will not see this gateway`);
    return { entry: undefined, leave: () => undefined };
  }
  const off = opts.config.onChange(() => {
    const next = describe();
    if (JSON.stringify(next) === JSON.stringify(entry)) return;
    entry = next;
    try {
      reg.update(next);
    } catch (err) {
      opts.log.warn(`cannot update the fleet entry ${reg.file}: ${errorMessage(err)}`);
    }
  });
  return {
    get entry() {
      return entry;
    },
    leave() {
      off();
      try {
        reg.remove();
      } catch (err) {
        opts.log.warn(`cannot remove the fleet entry ${reg.file}: ${errorMessage(err)}`);
      }
    },
  };
}

/** The other assistants for the assistant context: every live entry but this process's own. */
export function peerAssistants(entries: readonly FleetEntry[], selfPid: number): PeerAssistant[] {
  return entries.filter((e) => e.pid !== selfPid).map((e) => ({ name: e.name, ...(e.role ? { role: e.role } : {}), url: e.url }));
}

/** Rows for the dashboard's fleet panel: every live gateway, this one marked, each with its dashboard link. */
export function fleetPanelRows(entries: readonly FleetEntry[], selfPid: number): Array<Record<string, unknown>> {
  return entries.map((e) => ({
    name: e.name,
    ...(e.role ? { role: e.role } : {}),
    engine: e.engine,
    url: e.url,
    dashboardUrl: `${e.url}/`,
    pid: e.pid,
    startedAt: e.startedAt,
    version: e.version,
    self: e.pid === selfPid,
  }));
}
