import path from 'node:path';
import { createEmptyHub } from '../core/channel-hub.js';
import { resolveGatewayBind } from '../core/config/bind.js';
import { errorMessage } from '../core/errors.js';
import { createLogger } from '../core/logger.js';
import { resolveAssistantPaths, packageVersion, templatesDir } from '../core/paths.js';
import { channelNames } from '../channels/registry.js';
import { openAssistant } from '../open-assistant.js';
import { createServerApp } from '../server/app.js';
import { resolveGatewayToken, type TokenSource } from '../server/auth.js';
import { listenApp } from '../server/listen.js';
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
  const opened = openAssistant({ dir: opts.dir, log, watchConfig: true });
  const { config, assistant } = opened;
  const paths = resolveAssistantPaths(opts.dir);
  const bind = resolveGatewayBind(config.current().config, { ...(opts.host ? { host: opts.host } : {}), ...(opts.port ? { port: opts.port } : {}) });
  const { token, source } = resolveGatewayToken({ ...(opts.token ? { flag: opts.token } : {}), env: process.env, ...(config.current().config.gateway.token ? { configToken: config.current().config.gateway.token } : {}), tokenFile: paths.tokenFile });
  log.addSecrets([token]);
  const hub = createEmptyHub(channelNames);

  const { app, streamsFlushed } = createServerApp({
    assistant,
    config,
    channels: hub,
    token,
    log,
    version: packageVersion(),
    dashboardDir: path.join(templatesDir(), 'dashboard'),
  });
  let server;
  try {
    server = await listenApp(app, bind);
  } catch (err) {
    opened.close();
    throw err;
  }
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
      log.info(`${signal}: shutting down; running turns get ${graceMs() / 1000} s to finish`);
      try {
        server.stopAccepting();
        await assistant.drain(graceMs());
        await streamsFlushed(5_000); // the last events of each turn reach their clients
        await server.close();
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

/** Documented default: 30 s; SERVICE_SHUTDOWN_GRACE_MS overrides it (tests use a short one). */
function graceMs(): number {
  const v = Number(process.env.SERVICE_SHUTDOWN_GRACE_MS);
  return Number.isFinite(v) && v >= 0 ? v : 30_000;
}
