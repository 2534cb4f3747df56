import type { IncomingMessage, ServerResponse } from 'node:http';
import { maskSecretValues } from '../core/config/secrets.js';
import { CORS_HEADERS } from './cors.js';
import { JSON_TYPE } from './http.js';
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
 * request a gateway gets, and one that needs neither the token nor a body, so it skips the URL
 * parsing, routing and reply masking every other route goes through (and the body's masking is
 * computed once per set of secrets, below). Same status, headers and masked body as the app's route
 * (test/integration/server/health-fast-path.test.ts holds them equal); anything else about the
 * request (a query, another path or method, HEAD, a preflight) goes to the app.
 */
export function createHealthAnswer(
  deps: Pick<ServerDeps, 'assistant' | 'version' | 'config' | 'token'>,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const mask = createHealthMasking(deps);
  return (req, res) => {
    if (req.url !== '/health' || req.method !== 'GET') return false;
    const body = JSON.stringify(mask(readHealth(deps)));
    res.writeHead(200, [...HEADERS, 'content-length', String(Buffer.byteLength(body))]);
    res.end(body);
    return true;
  };
}

// --- internal ---

const HEADERS = [...Object.entries(CORS_HEADERS).flat(), 'content-type', JSON_TYPE];
/** The parts of the body that change with every request. */
const MOVING = ['timestamp', 'uptime'] as const;
/** The characters of an ISO 8601 time: a secret made of anything else cannot occur in one. */
const ISO_CHARS = /^[0-9TZ:.-]+$/;

/**
 * maskSecretValues(body) at a fraction of its cost per request (it copies the tree and sorts the
 * secrets on every call, several µs): the body but its time and uptime is masked once, and again
 * only when a new secret value or one of those values changes; the time is masked when some
 * secret could occur in one; the uptime is a number. The same result as masking the whole body.
 */
export function createHealthMasking(deps: Pick<ServerDeps, 'config' | 'token'>): (body: Record<string, unknown>) => Record<string, unknown> {
  // As the app's redactor: every secret value seen while this server runs stays masked (a value
  // that stopped being a secret after a PATCH may still be the name). Every configuration is seen.
  const known = new Set<string>([deps.token, ...deps.config.current().secretValues]);
  deps.config.onChange((next) => {
    for (const v of next.secretValues) known.add(v);
  });
  let basis = deps.config.current();
  let seen = -1;
  let secrets: string[] = [];
  let timeMayHoldSecret = false;
  let madeFrom: Record<string, unknown> = {};
  let template: Record<string, unknown> | undefined;
  let movingKeys: string[] = [];
  const sameFixed = (body: Record<string, unknown>) =>
    Object.keys(body).length === Object.keys(madeFrom).length &&
    Object.entries(body).every(([k, v]) => (MOVING as readonly string[]).includes(k) || madeFrom[k] === v);
  return (body) => {
    const current = deps.config.current();
    if (current !== basis) {
      basis = current;
      for (const v of current.secretValues) known.add(v);
    }
    if (known.size !== seen || !sameFixed(body)) {
      seen = known.size;
      secrets = [...known];
      timeMayHoldSecret = secrets.some((v) => ISO_CHARS.test(v));
      madeFrom = { ...body };
      const masked = maskSecretValues({ ...body, timestamp: '', uptime: 0 }, secrets);
      movingKeys = MOVING.map((k) => maskSecretValues(k, secrets));
      // Masked keys that ran together (a secret inside a key name) are left to the plain way.
      template = Object.keys(masked).length === Object.keys(body).length ? masked : undefined;
    }
    if (!template) return maskSecretValues(body, secrets);
    const out = { ...template };
    const [timeKey = 'timestamp', uptimeKey = 'uptime'] = movingKeys;
    out[timeKey] = timeMayHoldSecret ? maskSecretValues(body.timestamp, secrets) : body.timestamp;
    out[uptimeKey] = body.uptime;
    return out;
  };
}
