import path from 'node:path';
import { resolveGatewayBind } from '../core/config/bind.js';
import { errorMessage } from '../core/errors.js';
import { fleetPanelRows, joinFleet, peerAssistants } from '../core/fleet/membership.js';
import { createFleetRegistry, resolveFleetDir } from '../core/fleet/registry.js';
import { createLogger } from '../core/logger.js';
import { resolveAssistantPaths, packageVersion, templatesDir } from '../core/paths.js';
import { openAssistant } from '../open-assistant.js';
import { createServerApp } from '../server/app.js';
import { resolveGatewayToken, type TokenSource } from '../server/auth.js';
import { listenApp } from '../server/listen.js';
import { createScheduler, type Scheduler } from '../core/scheduler/scheduler.js';
import { systemClock } from '../core/scheduler/clock.js';
import type { OpenedAssistant } from '../open-assistant.js';
import { createGatewayChannels, type GatewayChannels } from './gateway-channels.js';
import type { CommandIO } from './io.js';

export interface GatewayOptions {
  dir: string;
  host?: string;
  port?: string;
  token?: string;
}

const TOKEN_SOURCES: Record<TokenSource, string> = {
  flag: '--token',
  env: 'SERVICE_TOKEN',
  config: 'gateway.token in service.yaml',
  stored: '.service/gateway-token (generated earlier)',
  generated: '.service/gateway-token (generated now)',
};

/**
 * `service gateway`: the HTTP API and dashboard first, then the channels and the scheduler.
 * SIGINT/SIGTERM: stop accepting, let running turns finish for a grace period, abort the rest,
 * stop the channels, close the store, exit 0.
 */
export async function runGateway(opts: GatewayOptions, io: CommandIO): Promise<number> {
  const log = createLogger();
  const fleet = createFleetRegistry({ dir: resolveFleetDir(process.env) });
  // The channels and the scheduler are created below; the closures reach them once they exist.
  let channels: GatewayChannels | undefined;
  let scheduler: Scheduler | undefined;
  const opened = openAssistant({
    dir: opts.dir,
    log,
    watchConfig: true,
    peers: () => peerAssistants(fleet.list(), process.pid),
    hub: () => channels?.hub,
    nextRun: (id) => scheduler?.nextRun(id),
  });
  const { config, assistant } = opened;
  const paths = resolveAssistantPaths(opts.dir);
  const bind = resolveGatewayBind(config.current().config, { ...(opts.host ? { host: opts.host } : {}), ...(opts.port ? { port: opts.port } : {}) });
  const { token, source } = resolveGatewayToken({ ...(opts.token ? { flag: opts.token } : {}), env: process.env, ...(config.current().config.gateway.token ? { configToken: config.current().config.gateway.token } : {}), tokenFile: paths.tokenFile });
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
  let server;
  try {
    server = await listenApp(app, bind);
  } catch (err) {
    opened.close();
    throw err;
  }
  // Registered only now: the entry carries the port actually bound (--port 0 picks one).
  const membership = joinFleet({ registry: fleet, config, host: server.host, port: server.port, dir: paths.dir, version: packageVersion(), log: log.child('fleet') });
  process.once('exit', () => membership.leave());
  channels.start();
  scheduler = startScheduler(opened);
  const shown = source === 'generated' || source === 'stored' ? token : '(hidden: you set it)';
  io.out(
    [
      `${config.current().config.name} (${config.current().config.engine}) is serving on ${server.url}`,
      `token: ${shown}  [from ${TOKEN_SOURCES[source]}]`,
      `dashboard: ${server.url}/#token=${source === 'generated' || source === 'stored' ? token : '<TOKEN>'}`,
    ].join('\n'),
  );

  return new Promise<number>((resolve) => {
    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      membership.leave(); // peers stop listing this gateway as soon as it stops taking requests
      scheduler?.stop();
      log.info(`${signal}: shutting down; running turns get ${graceMs() / 1000} s to finish`);
      try {
        server.stopAccepting();
        await assistant.drain(graceMs());
        await streamsFlushed(5_000); // the last events of each turn reach their clients
        await server.close();
        // Replies of turns that just ended still go out before the adapters disconnect.
        await Promise.race([channels?.bridge.idle(), new Promise((r) => setTimeout(r, 5_000).unref())]);
        await channels?.stop();
      } catch (err) {
        log.error(`shutdown: ${errorMessage(err)}`);
      }
      opened.close();
      resolve(0);
    };
    process.once('SIGINT', () => void shutdown('SIGINT'));
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
  });
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

/** Documented default: 30 s; SERVICE_SHUTDOWN_GRACE_MS overrides it (tests use a short one). */
function graceMs(): number {
  const v = Number(process.env.SERVICE_SHUTDOWN_GRACE_MS);
  return Number.isFinite(v) && v >= 0 ? v : 30_000;
}
