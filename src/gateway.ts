import { X509Certificate } from 'node:crypto';
import { type AssistantDirectory, openAssistantDirectory } from './assistant-directory.js';
import { type ChannelRuntime, createChannelRuntime } from './channels/channel-runtime.js';
import { formatAccessNotices } from './core/access/notices.js';
import type { Assistant } from './core/assistant/assistant.js';
import { errorMessage } from './core/errors.js';
import { type FleetMembership, fleetPanelRows, peerAssistants } from './core/fleet/membership.js';
import { createEngineApiAccess } from './core/engines/engine-env.js';
import { reapInterruptedTurns } from './core/engines/orphan-reaper.js';
import type { LeaderLease } from './core/leader/leader-lease.js';
import { createLogger, type Logger } from './core/logger.js';
import { packageVersion, resolveAssistantPaths } from './core/paths.js';
import { type Clock, systemClock } from './core/util/clock.js';
import type { Scheduler } from './core/scheduler/scheduler.js';
import { once } from './core/util/once.js';
import { withTimeout } from './core/util/timeout.js';
import {
  buildTasks,
  channelTuning,
  closingOnFailure,
  type HeldDirectory,
  holdDirectory,
  leadWithLease,
  openFleet,
  resolveAccess,
  STANDBY,
} from './gateway-parts.js';
import type { TokenSource } from './server/auth.js';
import { type AssistantServer, serveAssistant } from './server/serve.js';
import { resolveTlsFiles } from './server/tls.js';

/**
 * The gateway's composition root: the one place that builds the running objects, in dependency
 * order, and starts and stops them in an explicit order. Nothing built here needs a
 * collaborator created after it; each part is built by one function of gateway-parts.ts.
 *
 *   build:  fleet directory and database fleet → assistant directory (config, store, commands, assistant)
 *           → the directory's gateway lock → stop what a killed earlier run left running
 *           → channel runtime → task runner → scheduler (+ /cron) → leader lease (shared store)
 *   start:  the HTTP server assembled and listening (server/serve.ts, as `startServer` has it)
 *           → join the fleet → connect the channels → arm the scheduler (with a store shared by
 *           several gateways of the assistant: only while holding the leader lease)
 *   stop:   leave the fleet, stop the scheduler → the HTTP server's stop (stop accepting → drain
 *           turns → flush streams → close) → let last replies go out → stop the channels
 *           → close the store → release the lock
 */
export interface LaunchGatewayOptions {
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
  /** Default: process.env (SERVICE_PORT, SERVICE_TOKEN, SERVICE_FLEET_DIR, engine credentials). */
  env?: NodeJS.ProcessEnv;
  /** Serve HTTPS: with `true` a self-signed certificate made on first use and kept in .service/tls/; or these PEM files. */
  https?: boolean | { cert: string; key: string };
  /** Open a public URL through a tunnel once listening; when it cannot open, the gateway goes on locally. */
  tunnel?: boolean;
  /** The scheduler's time (default: the system clock); an embedder or a test may run it on a clock of its own. */
  clock?: Clock;
}

export interface Gateway {
  url: string;
  host: string;
  port: number;
  token: string;
  /** Where the token came from; a `generated` or `stored` token is the one to show the user. */
  tokenSource: TokenSource;
  /** The assistant the gateway serves (the same one its HTTP routes, channels and tasks use). */
  assistant: Assistant;
  /** The opened directory (configuration and state), for embedders and tests. */
  directory: AssistantDirectory;
  channels: ChannelRuntime;
  /** With https: the certificate file, whether it was made by this start, and its SHA-256 fingerprint. */
  tls?: { certFile: string; made: boolean; fingerprint: string };
  /** Where the gateway can be reached: the local URL, and on a public bind each network address. */
  urls(): Promise<Array<{ url: string; type: string }>>;
  /** Print `url` as a QR code with the URLs it is reached at. */
  showQr(url: string): Promise<void>;
  /** With `tunnel`: the public URL once open, or the reason it could not open (the gateway serves locally either way). */
  tunnel?: Promise<string>;
  /**
   * Stops in the order that loses nothing: leave the fleet and stop the scheduler, stop accepting
   * requests, let running turns finish for `graceMs` (then abort them), flush the last events of
   * each stream, close the server, let replies of just-ended turns go out, stop the channels,
   * close the state database. Idempotent.
   */
  close(graceMs?: number): Promise<void>;
}

export async function launchGateway(opts: LaunchGatewayOptions): Promise<Gateway> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? createLogger();
  const version = packageVersion();

  // --- build, in dependency order ---
  const fleet = openFleet(env, log);
  // The engine's own way to the API (send-only token; SERVICE_URL once listening): never the gateway's token.
  const engineApi = createEngineApiAccess();
  log.addSecrets([engineApi.token]);
  const directory = openAssistantDirectory({
    dir: opts.dir,
    log,
    env,
    engineApi,
    watchConfig: true,
    ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
    peers: () => peerAssistants(fleet.list(), fleet.self),
  });
  const { config, store, assistant } = directory;
  const held = await holdDirectory(directory, log);
  const { bind, auth } = closingOnFailure(held.release, () => resolveAccess(directory, opts, env));
  log.addSecrets([auth.token]);
  // Engines a killed run of this directory left running are stopped before anything new starts.
  await reapInterruptedTurns({ store, log }).catch((err: unknown) => log.error(`cannot check for interrupted turns: ${errorMessage(err)}`));
  const channels = createChannelRuntime({ dir: directory.dir, assistant, config, store, log, metrics: directory.metrics, ...channelTuning(env) });
  for (const line of formatAccessNotices({ raw: config.current().raw, config: config.current().config, dir: directory.dir })) log.warn(line);
  // An engine whose program is missing is said now, not at the first turn (and in /api/status).
  const engineWarning = assistant.engineWarning();
  if (engineWarning) log.warn(engineWarning);
  const { control: tasks, scheduler } = buildTasks(directory, channels, log, opts.clock ?? systemClock);
  const leadership = leadWithLease(directory, { channels, scheduler, self: fleet.self, log, clock: opts.clock ?? systemClock });

  // --- start ---
  const tls = opts.https
    ? closingOnFailure(held.release, () =>
        resolveTlsFiles({ stateDir: resolveAssistantPaths(directory.dir).stateDir, ...(typeof opts.https === 'object' ? opts.https : {}) }),
      )
    : undefined;
  const server = await serveAssistant({
    deps: {
      assistant,
      commands: directory.commands,
      config,
      channels: channels.hub,
      tasks,
      activity: store,
      replies: store,
      access: directory.access,
      metrics: directory.metrics,
      token: auth.token,
      engineToken: engineApi.token,
      log,
      version,
      fleet: () => fleetPanelRows(fleet.list(), fleet.self),
    },
    ...bind,
    ...(tls ? { tls } : {}),
  }).catch(async (err: unknown) => {
    await held.release();
    throw err;
  });
  // Loaded only with --tunnel (untun and what it brings).
  const tunnel = opts.tunnel ? (await import('./server/tunnel.js')).startTunnel(server.url, (line) => log.info(`tunnel: ${line}`)) : undefined;
  held.lock.describe({ url: server.url });
  engineApi.describe({ host: server.host, port: server.port, ...(tls ? { tls: { certFile: tls.certFile } } : {}) });
  // Registered only now: the entry carries the port actually bound (port 0 picks one).
  const membership = fleet.join(directory, { host: server.host, port: server.port, version });
  const leaveOnExit = () => void membership.leave();
  process.once('exit', leaveOnExit);
  if (leadership) {
    await channels.stop({ standby: STANDBY }); // until this gateway leads
    leadership.start();
  } else {
    channels.start();
    scheduler.start();
  }
  const unwatchTasks = config.onChange(() => scheduler.refresh());

  // --- stop ---
  const close = once((graceMs: number) =>
    stopGateway({ membership, scheduler, tunnel, server, channels, leadership, held, log }, graceMs, () => {
      process.off('exit', leaveOnExit);
      unwatchTasks();
    }),
  );
  return {
    url: server.url,
    host: server.host,
    port: server.port,
    token: auth.token,
    tokenSource: auth.source,
    assistant,
    directory,
    channels,
    ...(tls && server.tls
      ? { tls: { certFile: tls.certFile, made: tls.selfSigned !== undefined, fingerprint: new X509Certificate(server.tls.cert).fingerprint256 } }
      : {}),
    urls: () => server.urls(),
    showQr: (url) => server.showQr(url),
    ...(tunnel ? { tunnel: tunnel.url } : {}),
    close: (graceMs = 30_000) => close(graceMs),
  };
}

// --- internal ---

interface Running {
  membership: FleetMembership;
  scheduler: Scheduler;
  tunnel: { close(): Promise<void> } | undefined;
  server: AssistantServer;
  channels: ChannelRuntime;
  leadership: LeaderLease | undefined;
  held: HeldDirectory;
  log: Logger;
}

/** The gateway's stop, in the order that loses nothing (see `Gateway.close`). */
async function stopGateway(g: Running, graceMs: number, detach: () => void): Promise<void> {
  const left = g.membership.leave(); // peers stop listing this gateway as soon as it stops taking requests
  detach();
  g.scheduler.stop();
  const schedulerStopped = Date.now();
  try {
    await g.tunnel?.close().catch((err: unknown) => g.log.error(`closing the tunnel: ${errorMessage(err)}`));
    // Stop accepting, let running turns finish (then abort them), write the last events of each stream, close.
    await g.server.stop(graceMs);
    // Replies of turns that just ended still go out before the adapters disconnect.
    await withTimeout(g.channels.idle(), 5_000).catch(() => undefined);
    // The lease is given up only once the channels are down: the next leader connects them.
    if (g.leadership) await g.leadership.stop({ idleSince: schedulerStopped });
    else await g.channels.stop();
  } catch (err) {
    g.log.error(`shutdown: ${errorMessage(err)}`);
  }
  await withTimeout(left, 5_000); // the database row is deleted (an unreachable server: it goes stale)
  await g.held.release();
}
