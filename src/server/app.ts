import { H3, type H3Event, type HTTPError, HTTPResponse, handleCors, type Middleware } from 'h3';
import type { LoadedConfig } from '../core/config/load.js';
import { maskSecretValues } from '../core/config/secrets.js';
import { errorMessage } from '../core/errors.js';
import { engineMayCall, identifyToken, presentedToken } from './auth.js';
import { CORS_OPTIONS } from './cors.js';
import { ApiError, errorBody, formatHttpLine, httpError, isJsonReply, JSON_TYPE, jsonReply } from './http.js';
import { isOpenAiPath, toOpenAiErrorBody } from './openai-wire.js';
import { registerAccessRoutes } from './routes/access.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerChatRoutes } from './routes/chat.js';
import { registerDashboardDataRoutes } from './routes/dashboard-data.js';
import { registerEventRoutes } from './routes/events.js';
import { FILES_PATH, registerFileRoutes } from './routes/files.js';
import { registerMetricsRoutes } from './routes/metrics.js';
import { registerOpenAiRoutes } from './routes/openai.js';
import { registerPublicRoutes } from './routes/public.js';
import { registerSessionRoutes } from './routes/session.js';
import { registerTaskRoutes } from './routes/tasks.js';
import { SSE_HEADERS } from './sse.js';
import type { Method, RouteOptions, RouteTable, ServerDeps } from './types.js';

/**
 * The HTTP API as an h3 app built only from what it is given: no module state, no listening
 * (listen.ts does that). The middleware chain: the request target (a path, else 400), CORS
 * (h3's handleCors: preflights answered without the token), the bearer token; then h3's router.
 * Every route but the public ones needs the token. A HEAD is answered wherever a GET is (a
 * streaming route's HEAD only by its head: nothing subscribes, no turn starts), and a path that
 * exists for other methods answers 405 with `Allow`.
 */
export interface ServerApp {
  app: H3;
  /** Resolves when every turn stream open now has written its last event (or after `ms`). */
  streamsFlushed(ms: number): Promise<void>;
}

export function createServerApp(deps: ServerDeps): ServerApp {
  const log = deps.log.child('http');
  const redact = createRedactor(deps);
  const streams = new Set<Promise<void>>();
  const app = new H3({
    // h3's own console output for unexpected errors is replaced by our log line (onError).
    silent: true,
    // Broken percent-encoding reaches the routes, which answer it in their own terms (routeParam).
    allowMalformedURL: true,
    onError: (error, event) => answerError(error, event),
  });

  const answerError = (error: HTTPError, event: H3Event): HTTPResponse => {
    const method = event.req.method;
    const path = event.url.pathname;
    if (error.unhandled) {
      const cause = error.cause instanceof Error ? error.cause : error;
      log.error(formatHttpLine(500, method, path, cause.stack ?? errorMessage(cause)), { status: 500, method, path });
      return jsonReply(500, shape(500, path, { error: 'internal error' }));
    }
    const body = errorBody(error);
    const detail = error instanceof ApiError && error.logDetail !== undefined ? error.logDetail : typeof body.error === 'string' ? body.error : undefined;
    log.info(formatHttpLine(error.status, method, path, detail), { status: error.status, method, path });
    const headers: Record<string, string> = {};
    error.headers?.forEach((v, k) => {
      headers[k] = v;
    });
    return jsonReply(error.status, redact(shape(error.status, path, body)), headers);
  };

  app.use(checkRequestTarget);
  app.use((event) => handleCors(event, CORS_OPTIONS) || undefined);
  const metricsPublic = deps.config.current().config.metrics.public;
  if (metricsPublic) log.warn(METRICS_PUBLIC);
  app.use(createTokenCheck(deps, metricsPublic));

  const paths = new Map<string, Set<Method>>();
  const table: RouteTable = {
    redact,
    trackStream(finished) {
      streams.add(finished);
      void finished.finally(() => streams.delete(finished));
    },
    add(method, path, handler, opts: RouteOptions = {}) {
      const methods = paths.get(path) ?? new Set<Method>();
      methods.add(method);
      paths.set(path, methods);
      const answer = async (event: H3Event) => redactResult(await handler(event), redact);
      app.on(method, path, answer);
      // HEAD is its GET without the body (h3 drops it) but with its length; a stream's HEAD is only its head.
      if (method === 'GET') {
        const head = async (event: H3Event) => withLength(await answer(event));
        app.on('HEAD', path, opts.stream ? () => new HTTPResponse(null, { status: 200, statusText: 'OK', headers: SSE_HEADERS }) : head);
      }
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
  registerMetricsRoutes(table, deps);
  registerOpenAiRoutes(table, deps);

  // Any other method on a known path: 405 with the methods it has. Any other path: 404.
  for (const [path, methods] of paths) {
    const allow = [...methods];
    app.all(path, (event) => {
      throw httpError(405, `method ${event.req.method} not allowed on ${event.url.pathname}`, { allow }, { allow: allow.join(', ') });
    });
  }
  app.all('/**', (event) => {
    throw httpError(404, `no route ${event.req.method} ${event.url.pathname}`);
  });

  return {
    app,
    async streamsFlushed(ms) {
      await Promise.race([Promise.allSettled([...streams]), new Promise((r) => setTimeout(r, ms).unref())]);
    },
  };
}

// --- internal ---

/** Errors under /v1/ (the OpenAI-compatible routes) in OpenAI's shape, whatever raised them (the token check, a 404); ours elsewhere. */
const shape = (status: number, path: string, body: Record<string, unknown>): Record<string, unknown> =>
  isOpenAiPath(path) ? toOpenAiErrorBody(status, body) : body;

const METRICS_PUBLIC =
  'metrics.public is on: GET /metrics answers without the token (turn counts, costs, channel names); expose the port to a private network only';

/** Routes served without the token: the health check and the dashboard's own files. */
const isPublic = (method: string, path: string) =>
  (method === 'GET' || method === 'HEAD') && (path === '/health' || path === '/' || path === '/index.html' || path.startsWith('/dashboard/'));

/**
 * A request target that is not a path (`*`, an absolute URL) names nothing here: 400. Checked on
 * the target as sent (h3's URL would already have turned it into a path).
 */
const checkRequestTarget: Middleware = (event) => {
  const target = event.runtime?.node?.req?.url;
  if (target !== undefined && !target.startsWith('/')) throw httpError(400, 'malformed request URL');
};

function createTokenCheck(deps: ServerDeps, metricsPublic: boolean): Middleware {
  return (event) => {
    const method = event.req.method;
    const { pathname } = event.url;
    if (isPublic(method, pathname)) return;
    if (metricsPublic && (method === 'GET' || method === 'HEAD') && pathname === '/metrics') return;
    // A sent file's URL carries its own token (routes/files.ts checks it, or the Bearer header).
    const reads = method === 'GET' || method === 'HEAD';
    if (reads && pathname.startsWith(FILES_PATH)) return;
    // EventSource cannot send headers: the feed takes the token in its query, for GET and its HEAD alike.
    const token = presentedToken(event.req.headers.get('authorization') ?? undefined, event.url, reads && pathname === '/api/events');
    const holder = token === undefined ? undefined : identifyToken(token, { gateway: deps.token, engine: deps.engineToken });
    if (holder === 'owner') return;
    if (holder === 'engine') {
      if (engineMayCall(method, pathname)) return;
      // The token is known, the route is not its own: 403, not 401.
      throw httpError(
        403,
        `the engine's token may only send messages and files (POST /api/send, GET /api/channels, GET /api/files/…), not ${method} ${pathname}`,
        {},
        {},
        "the engine's token",
      );
    }
    const none = token === undefined;
    throw httpError(
      401,
      none ? 'missing bearer token' : 'invalid bearer token',
      {},
      { 'www-authenticate': 'Bearer realm="service"' },
      none ? 'no token' : 'wrong token',
    );
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

/**
 * The length a GET's body would have, on its HEAD answer: h3 leaves the body out of a HEAD before
 * srvx counts it, and a client checking a download or a health probe reads the length.
 */
function withLength(out: unknown): unknown {
  if (!(out instanceof HTTPResponse) || out.headers.has('content-length')) return out;
  const body: unknown = out.body;
  if (typeof body === 'string') out.headers.set('content-length', String(Buffer.byteLength(body)));
  else if (body instanceof Uint8Array) out.headers.set('content-length', String(body.byteLength));
  return out;
}

/** Objects become JSON with secrets masked; JSON replies are re-read and masked; other replies (streams mask per event, files) go as they are. */
function redactResult(out: unknown, redact: <T>(value: T) => T): unknown {
  if (out instanceof HTTPResponse) {
    if (!isJsonReply(out)) return out;
    return jsonReply(out.status ?? 200, redact(JSON.parse(out.body) as unknown), { ...Object.fromEntries(out.headers), 'content-type': JSON_TYPE });
  }
  return jsonReply(200, redact(out));
}
