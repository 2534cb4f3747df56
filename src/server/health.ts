import type { IncomingMessage, ServerResponse } from 'node:http';
import { maskSecretValues } from '../core/config/secrets.js';
import type { ServerDeps } from './types.js';

/**
 * GET /health: liveness plus facts that are not secret (for the dashboard's status panel, load
 * balancers, `service fleet ls`). One body for both ways it is answered: the app's route, and
 * the listener's own answer below.
 */
export function readHealth(deps: Pick<ServerDeps, 'assistant' | 'version'>): Record<string, unknown> {
  const s = deps.assistant.status();
  return { status: 'ok', timestamp: new Date().toISOString(), name: s.name, engine: s.engine, model: s.model, version: deps.version, uptime: s.uptime };
}

/**
 * The listener answers a plain `GET /health` itself, before the app: the most frequent
 * request a gateway gets, and one that needs neither the token nor a body, so it skips the web
 * Request/Response machinery every other route goes through (measured: about half the CPU per
 * request). Same status, headers and masked body as the app's route
 * (test/integration/server/health-fast-path.test.ts holds them equal); anything else about the
 * request (a query, another path or method, HEAD, a preflight) goes to the app.
 */
export function createHealthAnswer(
  deps: Pick<ServerDeps, 'assistant' | 'version' | 'config' | 'token'>,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  let basis: unknown;
  let secrets: string[] = [];
  return (req, res) => {
    if (req.url !== '/health' || req.method !== 'GET') return false;
    const current = deps.config.current();
    if (current !== basis) {
      basis = current;
      secrets = [...current.secretValues, deps.token];
    }
    const body = JSON.stringify(maskSecretValues(readHealth(deps), secrets));
    res.writeHead(200, {
      'access-control-allow-origin': '*',
      'access-control-expose-headers': 'WWW-Authenticate',
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
    return true;
  };
}
