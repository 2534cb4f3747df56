import type { IncomingMessage, ServerResponse } from 'node:http';
import { addRoute, createRouter, findRoute } from 'rou3';
import type { LoadedConfig } from '../core/config/load.js';
import { maskSecretValues } from '../core/config/secrets.js';
import { errorMessage } from '../core/errors.js';
import { engineMayCall, identifyToken, presentedToken } from './auth.js';
import { CORS_HEADERS, isPreflight, PREFLIGHT_HEADERS } from './cors.js';
import { type ApiRequest, formatHttpLine, HttpFailure, JSON_TYPE, json, Reply, sendReply } from './http.js';
import { registerAccessRoutes } from './routes/access.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerChatRoutes } from './routes/chat.js';
import { registerDashboardDataRoutes } from './routes/dashboard-data.js';
import { registerEventRoutes } from './routes/events.js';
import { FILES_PATH, registerFileRoutes } from './routes/files.js';
import { registerPublicRoutes } from './routes/public.js';
import { registerSessionRoutes } from './routes/session.js';
import { registerTaskRoutes } from './routes/tasks.js';
import type { Method, RouteHandler, RouteTable, ServerDeps } from './types.js';

/**
 * The HTTP API as a node:http request handler built only from what it is given: no module state,
 * no listening (listen.ts does that). Every route but the public ones needs the bearer token.
 * Routes are matched by rou3 (`:name` is one path segment; a trailing slash matches too).
 */
export type ApiHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface ServerApp {
  app: ApiHandler;
  /** Resolves when every turn stream open now has written its last event (or after `ms`). */
  streamsFlushed(ms: number): Promise<void>;
}

const METHODS: readonly Method[] = ['GET', 'POST', 'PATCH', 'DELETE'];
/** The engine's token on a route it may not call (auth.ts engineMayCall): 403, not 401 (the token is known). */
const FORBIDDEN = Symbol('forbidden');

/** Routes served without the token: the health check and the dashboard's own files. */
const PUBLIC = (method: string, path: string) =>
  (method === 'GET' || method === 'HEAD') && (path === '/health' || path === '/' || path === '/index.html' || path.startsWith('/dashboard/'));

export function createServerApp(deps: ServerDeps): ServerApp {
  const log = deps.log.child('http');
  const redact = createRedactor(deps);
  const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => json(status, redact(body), headers);
  const router = createRouter<RouteHandler>();
  const streams = new Set<Promise<void>>();
  const table: RouteTable = {
    redact,
    trackStream(finished) {
      streams.add(finished);
      void finished.finally(() => streams.delete(finished));
    },
    add(method, path, handler) {
      addRoute(router, method, path, handler);
    },
  };

  registerPublicRoutes(table, deps);
  registerChatRoutes(table, deps);
  registerSessionRoutes(table, deps);
  registerAdminRoutes(table, deps);
  registerEventRoutes(table, deps);
  registerDashboardDataRoutes(table, deps);
  registerTaskRoutes(table, deps);
  registerAccessRoutes(table, deps);
  registerFileRoutes(table, deps);

  /** The answer to one request; a thrown HttpFailure is the client's mistake, anything else a bug of ours. */
  const answer = async (req: IncomingMessage): Promise<Reply> => {
    const method = req.method ?? 'GET';
    const url = parseRequestUrl(req.url);
    if (!url) {
      log.info(formatHttpLine(400, method, String(req.url).slice(0, 200), 'malformed URL'));
      return reply(400, { error: 'malformed request URL' });
    }
    const { pathname } = url;
    try {
      const token = authorize(method, pathname, req, url);
      if (token === FORBIDDEN) {
        log.info(formatHttpLine(403, method, pathname, "the engine's token"));
        return reply(403, {
          error: `the engine's token may only send messages and files (POST /api/send, GET /api/channels, GET /api/files/…), not ${method} ${pathname}`,
        });
      }
      if (token !== true) {
        log.info(formatHttpLine(401, method, pathname, token === undefined ? 'no token' : 'wrong token'));
        return reply(401, { error: token === undefined ? 'missing bearer token' : 'invalid bearer token' }, { 'www-authenticate': 'Bearer realm="service"' });
      }
      // A HEAD request is its GET without the body (Node leaves the body out).
      const match = findRoute(router, method === 'HEAD' ? 'GET' : method, pathname);
      if (!match) return refuse(method, pathname);
      const request = createApiRequest(req, method, url, match.params);
      return await redactResult(await match.data(request), redact);
    } catch (err) {
      if (err instanceof HttpFailure) {
        log.info(formatHttpLine(err.status, method, pathname, err.message));
        return reply(err.status, err.body, err.headers);
      }
      log.error(formatHttpLine(500, method, pathname, err instanceof Error ? (err.stack ?? err.message) : errorMessage(err)));
      return reply(500, { error: 'internal error' });
    }
  };

  /** true when the request may go on; FORBIDDEN for the engine's token off its routes; else the token it presented (undefined: none). */
  const authorize = (method: string, pathname: string, req: IncomingMessage, url: URL): true | typeof FORBIDDEN | string | undefined => {
    if (PUBLIC(method, pathname)) return true;
    // A sent file's URL carries its own token (routes/files.ts checks it, or the Bearer header).
    if (method === 'GET' && pathname.startsWith(FILES_PATH)) return true;
    const token = presentedToken(req.headers.authorization, url, method === 'GET' && pathname === '/api/events');
    const holder = token === undefined ? undefined : identifyToken(token, { gateway: deps.token, engine: deps.engineToken });
    if (holder === 'engine') return engineMayCall(method, pathname) ? true : FORBIDDEN;
    return holder === 'owner' ? true : token;
  };

  /** No route for this method: 405 with the methods the path has, or 404 when it has none. */
  const refuse = (method: string, pathname: string): Reply => {
    const allowed = METHODS.filter((m) => findRoute(router, m, pathname));
    if (allowed.length > 0) {
      log.info(formatHttpLine(405, method, pathname));
      return reply(405, { error: `method ${method} not allowed on ${pathname}`, allow: allowed }, { allow: allowed.join(', ') });
    }
    log.info(formatHttpLine(404, method, pathname));
    return reply(404, { error: `no route ${method} ${pathname}` });
  };

  const app: ApiHandler = (req, res) => {
    if (isPreflight(req)) {
      res.writeHead(204, PREFLIGHT_HEADERS);
      res.end();
      return;
    }
    for (const [k, v] of Object.entries(CORS_HEADERS)) res.setHeader(k, v);
    // answer() turns every failure of a route into a reply; what is left (writing the reply: a
    // header value Node refuses, a stream writer that throws) ends this response, never the process.
    void answer(req)
      .then((out) => sendReply(res, out))
      .catch((err: unknown) => {
        log.error(formatHttpLine(500, req.method ?? '?', String(req.url).slice(0, 200), err instanceof Error ? (err.stack ?? err.message) : errorMessage(err)));
        if (!res.headersSent) sendReply(res, reply(500, { error: 'internal error' }));
        else res.destroy();
      });
  };
  return {
    app,
    async streamsFlushed(ms) {
      await Promise.race([Promise.allSettled([...streams]), new Promise((r) => setTimeout(r, ms).unref())]);
    },
  };
}

// --- internal ---

/** The request target as a URL on a fixed origin; undefined when it is not a path (`*`, an absolute URL) or does not parse. */
function parseRequestUrl(target: string | undefined): URL | undefined {
  if (!target?.startsWith('/')) return undefined;
  try {
    // Concatenated, not resolved: `//x` is a path here, never another host.
    return new URL(`http://localhost${target}`);
  } catch {
    return undefined;
  }
}

function createApiRequest(req: IncomingMessage, method: string, url: URL, params: Record<string, string> | undefined): ApiRequest {
  return {
    method,
    url,
    headers: req.headers,
    param(name) {
      try {
        return decodeURIComponent(params?.[name] ?? '');
      } catch {
        return undefined;
      }
    },
    raw: req,
    header(name) {
      const v = req.headers[name.toLowerCase()];
      return Array.isArray(v) ? v.join(', ') : v;
    },
  };
}

/**
 * What is never sent: the secret values of the config in force (placeholder resolutions, secret
 * fields, credential variables) and the gateway token. Rebuilt when the config changes.
 */
function createRedactor(deps: ServerDeps): <T>(value: T) => T {
  let basis: LoadedConfig | undefined;
  // Every secret value seen while this server runs stays masked: a value that stopped being a
  // secret (a PATCH replaced the placeholder that held it) may still sit in stored activity.
  const known = new Set<string>([deps.token, ...(deps.engineToken ? [deps.engineToken] : [])]);
  let values: string[] = [];
  return <T>(value: T): T => {
    const current = deps.config.current();
    if (current !== basis) {
      basis = current;
      for (const v of current.secretValues) known.add(v);
      values = [...known];
    }
    return maskSecretValues(value, values);
  };
}

/** Objects become JSON with secrets masked; JSON replies are re-read and masked; streams (sse.ts) mask per event. */
async function redactResult(out: unknown, redact: <T>(value: T) => T): Promise<Reply> {
  if (out instanceof Reply) {
    if (typeof out.body !== 'string' || !(out.headers['content-type'] ?? '').includes('application/json')) return out;
    return new Reply(out.status, { ...out.headers, 'content-type': JSON_TYPE }, JSON.stringify(redact(JSON.parse(out.body) as unknown)));
  }
  return json(200, redact(out));
}
