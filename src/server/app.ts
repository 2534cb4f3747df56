import { H3, handleCors } from 'h3';
import type { LoadedConfig } from '../core/config/load.js';
import { maskSecretValues } from '../core/config/secrets.js';
import { errorMessage } from '../core/errors.js';
import { presentedToken, tokensMatch } from './auth.js';
import { formatHttpLine, HttpFailure, json } from './http.js';
import { registerAccessRoutes } from './routes/access.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerChatRoutes } from './routes/chat.js';
import { registerDashboardDataRoutes } from './routes/dashboard-data.js';
import { registerEventRoutes } from './routes/events.js';
import { FILES_PATH, registerFileRoutes } from './routes/files.js';
import { registerPublicRoutes } from './routes/public.js';
import { registerSessionRoutes } from './routes/session.js';
import { registerTaskRoutes } from './routes/tasks.js';
import type { RouteTable, ServerDeps } from './types.js';

/**
 * The HTTP API as an h3 app built only from what it is given: no module state, no listening
 * (listen.ts does that). Every route but the public ones needs the bearer token.
 */
export interface ServerApp {
  app: H3;
  /** Resolves when every turn stream open now has written its last event (or after `ms`). */
  streamsFlushed(ms: number): Promise<void>;
}

export const CORS = {
  origin: '*' as const,
  methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
  allowHeaders: ['Content-Type', 'Authorization'],
  exposeHeaders: ['WWW-Authenticate'],
  maxAge: '600',
};

/** Routes served without the token: the health check and the dashboard's own files. */
const PUBLIC = (method: string, path: string) =>
  (method === 'GET' || method === 'HEAD') && (path === '/health' || path === '/' || path === '/index.html' || path.startsWith('/dashboard/'));

export function createServerApp(deps: ServerDeps): ServerApp {
  const log = deps.log.child('http');
  const redact = createRedactor(deps);
  const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => json(status, redact(body), headers);
  const app = new H3({
    onError: (error, event) => {
      // A client's mistake h3 found (a malformed URL) is a 4xx like ours; anything else is a bug
      // of ours: logged with its stack, answered without details.
      if (error.status && error.status < 500) {
        log.info(formatHttpLine(error.status, event.req.method, event.url.pathname, error.message));
        return reply(error.status, { error: error.message });
      }
      const cause = error.cause ?? error;
      log.error(formatHttpLine(500, event.req.method, event.url.pathname, cause instanceof Error ? (cause.stack ?? cause.message) : errorMessage(cause)));
      return reply(500, { error: 'internal error' });
    },
  });

  app.use((event, next) => {
    const preflight = handleCors(event, CORS);
    if (preflight !== false) return preflight;
    return next();
  });

  app.use((event, next) => {
    const { pathname } = event.url;
    const method = event.req.method;
    if (PUBLIC(method, pathname)) return next();
    // A sent file's URL carries its own token (routes/files.ts checks it, or the Bearer header).
    if (method === 'GET' && pathname.startsWith(FILES_PATH)) return next();
    const token = presentedToken(event.req.headers, event.url, method === 'GET' && pathname === '/api/events');
    if (token !== undefined && tokensMatch(token, deps.token)) return next();
    log.info(formatHttpLine(401, method, pathname, token === undefined ? 'no token' : 'wrong token'));
    return reply(401, { error: token === undefined ? 'missing bearer token' : 'invalid bearer token' }, { 'www-authenticate': 'Bearer realm="service"' });
  });

  const methods = new Map<string, { match: RegExp; allowed: Set<string> }>();
  const streams = new Set<Promise<void>>();
  const table: RouteTable = {
    redact,
    trackStream(finished) {
      streams.add(finished);
      void finished.finally(() => streams.delete(finished));
    },
    add(method, path, handler) {
      const entry = methods.get(path) ?? { match: matchPattern(path), allowed: new Set<string>() };
      methods.set(path, entry);
      entry.allowed.add(method);
      app.on(method, path, async (event) => {
        try {
          return await redactResult(await handler(event), redact);
        } catch (err) {
          if (err instanceof HttpFailure) {
            log.info(formatHttpLine(err.status, event.req.method, event.url.pathname, err.message));
            return reply(err.status, err.body, err.headers);
          }
          throw err;
        }
      });
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

  app.all('/**', (event) => {
    // The methods of every route whose pattern matches (`/api/tasks/:id/run` included).
    const allowed = new Set([...methods.values()].filter((r) => r.match.test(event.url.pathname)).flatMap((r) => [...r.allowed]));
    if (allowed.size > 0 && !allowed.has(event.req.method)) {
      log.info(formatHttpLine(405, event.req.method, event.url.pathname));
      return reply(405, { error: `method ${event.req.method} not allowed on ${event.url.pathname}`, allow: [...allowed] }, { allow: [...allowed].join(', ') });
    }
    log.info(formatHttpLine(404, event.req.method, event.url.pathname));
    return reply(404, { error: `no route ${event.req.method} ${event.url.pathname}` });
  });
  return {
    app,
    async streamsFlushed(ms) {
      await Promise.race([Promise.allSettled([...streams]), new Promise((r) => setTimeout(r, ms).unref())]);
    },
  };
}

// --- internal ---

/** A route pattern as h3 writes it (`:name` is one path segment) as an exact matcher. */
function matchPattern(pattern: string): RegExp {
  const escaped = pattern.split('/').map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${escaped.join('/')}$`);
}

/**
 * What is never sent: the secret values of the config in force (placeholder resolutions, secret
 * fields, credential variables) and the gateway token. Rebuilt when the config changes.
 */
function createRedactor(deps: ServerDeps): <T>(value: T) => T {
  let basis: LoadedConfig | undefined;
  // Every secret value seen while this server runs stays masked: a value that stopped being a
  // secret (a PATCH replaced the placeholder that held it) may still sit in stored activity.
  const known = new Set<string>([deps.token]);
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

/** Objects become JSON with secrets masked; JSON Responses are re-read and masked; streams (sse.ts) mask per event. */
async function redactResult(out: unknown, redact: <T>(value: T) => T): Promise<unknown> {
  if (out instanceof Response) {
    if (!(out.headers.get('content-type') ?? '').includes('application/json')) return out;
    return new Response(JSON.stringify(redact(JSON.parse(await out.text()) as unknown)), { status: out.status, headers: out.headers });
  }
  return out === undefined ? out : json(200, redact(out));
}
