import path from 'node:path';
import { packageVersion, templatesDir } from '../core/paths.js';
import { once } from '../core/util/once.js';
import { createServerApp } from './app.js';
import { createHealthAnswer } from './health.js';
import { listenApp, type RunningServer } from './listen.js';
import type { TlsFiles } from './tls.js';
import type { ServerDeps } from './types.js';

/**
 * An assistant's HTTP server, assembled and stopped in one place: the API's h3 app (app.ts), the
 * listener's own GET /health (health.ts), listhen (listen.ts). Both the gateway (gateway.ts) and
 * the embedding API's `startServer` (embedding.ts) run it; they differ only in what they hand in
 * (the gateway: its channels, its scheduled tasks, the engine's token, the fleet panel).
 *
 * `stop` goes in the order that loses nothing: stop accepting connections → let the assistant's
 * running turns finish for `graceMs`, then abort them (their completion says why) → write the
 * last events of every open stream (at most 5 s) → close the connections still open.
 */
export interface ServeOptions {
  /** What the routes serve; `version` and `dashboardDir` default to the package's. */
  deps: Omit<ServerDeps, 'version' | 'dashboardDir'> & Partial<Pick<ServerDeps, 'version' | 'dashboardDir'>>;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Serve HTTPS with these files (tls.ts resolves or makes them). */
  tls?: TlsFiles;
}

export interface AssistantServer extends Omit<RunningServer, 'stopAccepting' | 'close'> {
  /** Stop as described above; idempotent (a second call returns the first one's promise). */
  stop(graceMs: number): Promise<void>;
}

/** How long the last events of the streams open at shutdown may take to be written. */
const FLUSH_MS = 5_000;

export async function serveAssistant(opts: ServeOptions): Promise<AssistantServer> {
  const deps: ServerDeps = {
    ...opts.deps,
    version: opts.deps.version ?? packageVersion(),
    dashboardDir: opts.deps.dashboardDir ?? path.join(templatesDir(), 'dashboard'),
  };
  const { app, streamsFlushed } = createServerApp(deps);
  const answerFirst = createHealthAnswer(deps);
  const server = await listenApp(app, { host: opts.host, port: opts.port, answerFirst, ...(opts.tls ? { tls: opts.tls } : {}) });
  const stop = once(async (graceMs: number) => {
    server.stopAccepting();
    await deps.assistant.drain(graceMs);
    await streamsFlushed(FLUSH_MS);
    await server.close();
  });
  return {
    url: server.url,
    host: server.host,
    port: server.port,
    ...(server.tls ? { tls: server.tls } : {}),
    urls: () => server.urls(),
    showQr: (url) => server.showQr(url),
    stop,
  };
}
