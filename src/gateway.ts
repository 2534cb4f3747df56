import path from 'node:path';
import { createGatewayChannels, type GatewayChannels } from './gateway-channels.js';
import { resolveGatewayBind } from './core/config/bind.js';
import type { Assistant } from './core/assistant/assistant.js';
import { errorMessage } from './core/errors.js';
import { fleetPanelRows, joinFleet, peerAssistants } from './core/fleet/membership.js';
import { createFleetRegistry, resolveFleetDir } from './core/fleet/registry.js';
import { createLogger, type Logger } from './core/logger.js';
import { packageVersion, resolveAssistantPaths, templatesDir } from './core/paths.js';
import { systemClock } from './core/scheduler/clock.js';
import { createScheduler, type Scheduler } from './core/scheduler/scheduler.js';
import { withTimeout } from './core/util/timeout.js';
import { openAssistant, type OpenedAssistant } from './open-assistant.js';
import { createServerApp } from './server/app.js';
import { resolveGatewayToken, type TokenSource } from './server/auth.js';
import { listenApp, type RunningServer } from './server/listen.js';

export interface StartGatewayOptions {
  /** The assistant directory (service.yaml + skills/). */
  dir: string;
  /** Default: SERVICE_PORT, else `gateway.port` in service.yaml (3000). 0 picks a free port. */
  port?: number | string;
  /** Default: `gateway.host` in service.yaml (127.0.0.1). */
  hostname?: string;
  /** Default: SERVICE_TOKEN, else `gateway.token`, else the one stored in .service/gateway-token (generated once). */
  token?: string;
  /** The engine's API key, used instead of its environment variable. */
  apiKey?: string;
  /** Default: the CLI's logger (stderr). */
  log?: Logger;
}

export interface Gateway {
  url: string;
  host: string;
  port: number;
  token: string;
  /** Where the token came from; a `generated` or `stored` token is the one to show the user. */
  tokenSource: TokenSource;
  /** The chat core the gateway serves (the same one its HTTP routes, channels and tasks use). */
  assistant: Assistant;
  /**
   * Stops in the order that loses nothing: leave the fleet and stop the scheduler, stop accepting
   * requests, let running turns finish for `graceMs` (then abort them), flush the last events of
   * each stream, close the server, let replies of just-ended turns go out, stop the channels,
   * close the state database. Idempotent.
   */
  close(graceMs?: number): Promise<void>;
}

/**
 * The whole gateway, as `service gateway` runs it: the HTTP API and dashboard first, then the
 * channels and the scheduler once the port is bound.
 */
export async function startGateway(opts: StartGatewayOptions): Promise<Gateway> {
  const log = opts.log ?? createLogger();
  const fleet = createFleetRegistry({ dir: resolveFleetDir(process.env) });
  // The channels and the scheduler are created below; the closures reach them once they exist.
  let channels: GatewayChannels | undefined;
  let scheduler: Scheduler | undefined;
  const opened = openAssistant({
    dir: opts.dir,
    log,
    watchConfig: true,
    ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
    peers: () => peerAssistants(fleet.list(), process.pid),
    hub: () => channels?.hub,
    nextRun: (id) => scheduler?.nextRun(id),
  });
  const { config, assistant } = opened;
  const paths = resolveAssistantPaths(opts.dir);
  let bind: ReturnType<typeof resolveGatewayBind>;
  let token: string;
  let tokenSource: TokenSource;
  try {
    bind = resolveGatewayBind(config.current().config, {
      ...(opts.hostname ? { host: opts.hostname } : {}),
      ...(opts.port !== undefined ? { port: opts.port } : {}),
    });
    const configToken = config.current().config.gateway.token;
    ({ token, source: tokenSource } = resolveGatewayToken({
      ...(opts.token ? { flag: opts.token } : {}),
      env: process.env,
      ...(configToken ? { configToken } : {}),
      tokenFile: paths.tokenFile,
    }));
  } catch (err) {
    opened.close();
    throw err;
  }
  log.addSecrets([token]);
  // Built now (the server reports their state), connected once the HTTP server listens.
  channels = createGatewayChannels(opened, paths.dir);

  const { app, streamsFlushed } = createServerApp({
    assistant,
    config,
    channels: channels.hub,
    activity: opened.store,
    token,
    log,
    version: packageVersion(),
    dashboardDir: path.join(templatesDir(), 'dashboard'),
    fleet: () => fleetPanelRows(fleet.list(), process.pid),
  });
  let server: RunningServer;
  try {
    server = await listenApp(app, bind);
  } catch (err) {
    opened.close();
    throw err;
  }
  // Registered only now: the entry carries the port actually bound (port 0 picks one).
  const membership = joinFleet({
    registry: fleet,
    config,
    host: server.host,
    port: server.port,
    dir: paths.dir,
    version: packageVersion(),
    log: log.child('fleet'),
  });
  const leaveOnExit = () => membership.leave();
  process.once('exit', leaveOnExit);
  channels.start();
  scheduler = startScheduler(opened);

  let closing: Promise<void> | undefined;
  const shutdown = async (graceMs: number): Promise<void> => {
    membership.leave(); // peers stop listing this gateway as soon as it stops taking requests
    process.off('exit', leaveOnExit);
    scheduler?.stop();
    try {
      server.stopAccepting();
      await assistant.drain(graceMs);
      await streamsFlushed(5_000); // the last events of each turn reach their clients
      await server.close();
      // Replies of turns that just ended still go out before the adapters disconnect.
      if (channels) await withTimeout(channels.bridge.idle(), 5_000).catch(() => undefined);
      await channels?.stop();
    } catch (err) {
      log.error(`shutdown: ${errorMessage(err)}`);
    }
    opened.close();
  };
  return {
    url: server.url,
    host: server.host,
    port: server.port,
    token,
    tokenSource,
    assistant,
    close: (graceMs = 30_000) => (closing ??= shutdown(graceMs)),
  };
}

/** Scheduled tasks run inside the gateway; edits of `tasks` (from anywhere) are picked up live. */
function startScheduler(opened: OpenedAssistant): Scheduler {
  const scheduler = createScheduler({
    tasks: () => opened.config.current().config.tasks,
    clock: systemClock,
    run: (task) => opened.tasks.run(task),
    onSkipped: (task, at) => opened.tasks.recordSkipped(task, at),
    log: opened.log.child('scheduler'),
  });
  scheduler.refresh();
  opened.config.onChange(() => scheduler.refresh());
  return scheduler;
}
