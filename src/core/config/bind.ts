import { UsageError } from '../errors.js';
import type { ServiceConfig } from './schema.js';

/** Where the gateway listens: flags, else SERVICE_PORT (port only), else gateway.host/port, else 127.0.0.1:3000. */
export function resolveGatewayBind(
  config: ServiceConfig,
  flags: { host?: string; port?: string | number },
  env: NodeJS.ProcessEnv = process.env,
): { host: string; port: number } {
  const host = flags.host ?? config.gateway.host;
  const fromEnv = env.SERVICE_PORT?.trim() ? env.SERVICE_PORT.trim() : undefined;
  const raw = flags.port ?? fromEnv ?? config.gateway.port;
  return { host, port: parsePort(raw, flags.port !== undefined ? '--port' : 'SERVICE_PORT') };
}

/** A port number 0-65535 (0 picks a free one), from a number or text; `source` names it in the error. */
export function parsePort(raw: string | number, source: string): number {
  const port = typeof raw === 'number' ? raw : Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`${source}: expected a port number 0-65535, got "${String(raw)}"`);
  return port;
}
