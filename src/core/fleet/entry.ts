import { z } from 'zod';

/**
 * One running gateway as the fleet registry records it: one JSON file per gateway. `format`
 * lets a later version change the shape; readers accept unknown extra fields so an older
 * `service fleet ls` still lists entries written by a newer gateway.
 */
export const FLEET_ENTRY_FORMAT = 1;

export interface FleetEntry {
  format: number;
  name: string;
  /** persona.role, when the assistant has one. */
  role?: string;
  engine: string;
  /** The address the gateway is bound to (may be 0.0.0.0). */
  host: string;
  port: number;
  /** Where peers on this machine reach it (a wildcard bind is advertised as loopback). */
  url: string;
  pid: number;
  /** ISO 8601. */
  startedAt: string;
  version: string;
  /** The assistant directory. */
  dir: string;
  /**
   * The machine it runs on (os.hostname()). Files written before it existed lack it: a folder's
   * entries are all of the reading machine, so readers take their own host name for them.
   */
  hostname?: string;
}

const entrySchema = z.looseObject({
  format: z.number().int().positive(),
  name: z.string().min(1),
  role: z.string().optional(),
  engine: z.string().min(1),
  host: z.string().min(1),
  port: z.number().int().min(0).max(65535),
  url: z.url({ protocol: /^https?$/ }),
  pid: z.number().int().positive(),
  startedAt: z.string(),
  version: z.string(),
  dir: z.string(),
  hostname: z.string().min(1).optional(),
});

/** The entry in a registry file, or undefined when the text is not one (garbage, another tool's file). */
export function parseFleetEntry(text: string): FleetEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = entrySchema.safeParse(value);
  if (!parsed.success) return undefined;
  const e = parsed.data;
  return {
    format: e.format,
    name: e.name,
    ...(e.role ? { role: e.role } : {}),
    engine: e.engine,
    host: e.host,
    port: e.port,
    url: e.url.replace(/\/+$/, ''),
    pid: e.pid,
    startedAt: e.startedAt,
    version: e.version,
    dir: e.dir,
    ...(e.hostname ? { hostname: e.hostname } : {}),
  };
}

/** One file per listening gateway: pid and port together, since one process could serve twice (tests). */
export function fleetEntryFileName(pid: number, port: number): string {
  return `gateway-${pid}-${port}.json`;
}

/**
 * The URL peers use: a wildcard bind is reachable on loopback (or, for peers on other machines,
 * at `wildcardAs`: the host name), and IPv6 hosts need brackets.
 */
export function advertisedUrl(host: string, port: number, wildcardAs?: string): string {
  const wildcard = host === '0.0.0.0' || host === '::' || host === '[::]';
  const reachable = wildcard && wildcardAs ? wildcardAs : host === '0.0.0.0' ? '127.0.0.1' : wildcard ? '::1' : host;
  const h = reachable.includes(':') && !reachable.startsWith('[') ? `[${reachable}]` : reachable;
  return `http://${h}:${port}`;
}
