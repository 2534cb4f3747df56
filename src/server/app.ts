import { H3, handleCors } from 'h3';
import { errorMessage } from '../core/errors.js';
import { presentedToken, tokensMatch } from './auth.js';
import { HttpFailure, json } from './http.js';
import { registerAccessRoutes } from './routes/access.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerChatRoutes } from './routes/chat.js';
import { registerDashboardDataRoutes } from './routes/dashboard-data.js';
import { registerEventRoutes } from './routes/events.js';
import { registerPublicRoutes } from './routes/public.js';
import { registerSessionRoutes } from './routes/session.js';
import type { RouteTable, ServerDeps } from './types.js';

/**
 * The HTTP API as an h3 app built only from what it is given (ServerDeps, in types.ts): no module
 * state, no listening (listen.ts does that). Every route but the public ones needs the bearer token.
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
  const app = new H3({
    onError: (error, event) => {
      log.error(`${event.req.method} ${event.url.pathname}: ${errorMessage(error)}`);
      return json(error.status && error.status < 500 ? error.status : 500, { error: error.status && error.status < 500 ? error.message : 'internal error' });
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
    const token = presentedToken(event.req.headers, event.url, method === 'GET' && pathname === '/api/events');
    if (token !== undefined && tokensMatch(token, deps.token)) return next();
    log.info(`401 ${method} ${pathname}: ${token === undefined ? 'no token' : 'wrong token'}`);
    return json(401, { error: token === undefined ? 'missing bearer token' : 'invalid bearer token' }, { 'www-authenticate': 'Bearer realm="service"' });
  });

  const methods = new Map<string, Set<string>>();
  const streams = new Set<Promise<void>>();
  const table: RouteTable = {
    trackStream(finished) {
      streams.add(finished);
      void finished.finally(() => streams.delete(finished));
    },
    add(method, path, handler) {
      methods.set(path, (methods.get(path) ?? new Set()).add(method));
      app.on(method, path, async (event) => {
        try {
          return await handler(event);
        } catch (err) {
          if (err instanceof HttpFailure) {
            log.info(`${err.status} ${event.req.method} ${event.url.pathname}: ${err.message}`);
            return json(err.status, err.body, err.headers);
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
  registerAccessRoutes(table, deps);

  app.all('/**', (event) => {
    const allowed = methods.get(event.url.pathname);
    if (allowed && !allowed.has(event.req.method)) {
      log.info(`405 ${event.req.method} ${event.url.pathname}`);
      return json(405, { error: `method ${event.req.method} not allowed on ${event.url.pathname}`, allow: [...allowed] }, { allow: [...allowed].join(', ') });
    }
    log.info(`404 ${event.req.method} ${event.url.pathname}`);
    return json(404, { error: `no route ${event.req.method} ${event.url.pathname}` });
  });
  return {
    app,
    async streamsFlushed(ms) {
      await Promise.race([Promise.allSettled([...streams]), new Promise((r) => setTimeout(r, ms).unref())]);
    },
  };
}
