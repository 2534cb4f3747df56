import { randomUUID, X509Certificate } from 'node:crypto';
import path from 'node:path';
import { type AssistantDirectory, openAssistantDirectory } from './assistant-directory.js';
import { type ChannelRuntime, createChannelRuntime } from './channels/channel-runtime.js';
import { formatAccessNotices } from './core/access/notices.js';
import type { Assistant } from './core/assistant/assistant.js';
import { resolveGatewayBind } from './core/config/bind.js';
import { errorMessage } from './core/errors.js';
import { createFleetDirectory, resolveFleetDir } from './core/fleet/fleet-directory.js';
import { fleetPanelRows, joinFleet, mergeFleetEntries, peerAssistants } from './core/fleet/membership.js';
import { createSharedFleet, readHostname, resolveHeartbeatMs } from './core/fleet/shared-fleet.js';
import { createEngineApiAccess } from './core/engines/engine-env.js';
import { reapInterruptedTurns } from './core/engines/orphan-reaper.js';
import { createLeaderLease } from './core/leader/leader-lease.js';
import { createLogger, type Logger } from './core/logger.js';
import { packageVersion, resolveAssistantPaths, templatesDir } from './core/paths.js';
import { systemClock } from './core/scheduler/clock.js';
import { createCronCommand } from './core/scheduler/cron-command.js';
import { createScheduler } from './core/scheduler/scheduler.js';
import { createTaskCommands } from './core/scheduler/task-commands.js';
import { createTaskControl } from './core/scheduler/task-control.js';
import { createTaskRunner } from './core/scheduler/task-runner.js';
import { acquireGatewayLock } from './core/store/gateway-lock.js';
import { once } from './core/util/once.js';
import { withTimeout } from './core/util/timeout.js';
import { createServerApp } from './server/app.js';
import { resolveGatewayToken, type TokenSource } from './server/auth.js';
import { createHealthAnswer } from './server/health.js';
import { listenApp } from './server/listen.js';
import { resolveTlsFiles } from './server/tls.js';

/**
 * The gateway's composition root: the one place that builds the running objects, in dependency
 * order, and starts and stops them in an explicit order. Nothing built here needs a
 * collaborator created after it.
 *
 *   build:  fleet directory and database fleet → assistant directory (config, store, commands, assistant)
 *           → the directory's gateway lock → stop what a killed earlier run left running
 *           → channel runtime → task runner → scheduler (+ /cron) → HTTP server
 *   start:  listen → join the fleet → connect the channels → arm the scheduler (with a store
 *           shared by several gateways of the assistant: only while holding the leader lease)
 *   stop:   leave the fleet, stop the scheduler → stop accepting → drain turns → flush streams
 *           → close the server → let last replies go out → stop the channels → close the store
 *           → release the lock
 */
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
  /** Default: process.env (SERVICE_PORT, SERVICE_TOKEN, SERVICE_FLEET_DIR, engine credentials). */
  env?: NodeJS.ProcessEnv;
  /** Serve HTTPS: with `true` a self-signed certificate made on first use and kept in .service/tls/; or these PEM files. */
  https?: boolean | { cert: string; key: string };
  /** Open a public URL through a tunnel once listening; when it cannot open, the gateway goes on locally. */
  tunnel?: boolean;
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

export async function startGateway(opts: StartGatewayOptions): Promise<Gateway> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? createLogger();
  const version = packageVersion();

  // --- build, in dependency order ---
  const fleet = createFleetDirectory({ dir: resolveFleetDir(env) });
  // With a PostgreSQL store the fleet spans hosts: the database's rows, as the last heartbeat read them.
  const sharedFleet = createSharedFleet({ heartbeatMs: resolveHeartbeatMs(env), log: log.child('fleet') });
  const self = { pid: process.pid, hostname: readHostname() };
  const listFleet = () => mergeFleetEntries(fleet.list(), sharedFleet.entries(), self.hostname);
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
    peers: () => peerAssistants(listFleet(), self),
  });
  const { config, store, assistant } = directory;
  // One gateway per directory: a second one would run every task twice and one session in two processes.
  const lock = closingOnFailure(
    () => void directory.close(),
    () => acquireGatewayLock(resolveAssistantPaths(directory.dir).stateDir),
  );
  const release = async () => {
    await directory.close().catch((err: unknown) => log.error(`closing the store: ${errorMessage(err)}`));
    lock.release();
  };
  // A store on a server is reached (and migrated) before anything is served from it.
  await store.ready().catch(async (err: unknown) => {
    await release();
    throw err;
  });
  const { bind, auth } = closingOnFailure(
    () => void release(),
    () => {
      const c = config.current().config;
      return {
        bind: resolveGatewayBind(c, { ...(opts.hostname ? { host: opts.hostname } : {}), ...(opts.port !== undefined ? { port: opts.port } : {}) }, env),
        auth: resolveGatewayToken({
          ...(opts.token ? { flag: opts.token } : {}),
          env,
          ...(c.gateway.token ? { configToken: c.gateway.token } : {}),
          tokenFile: resolveAssistantPaths(directory.dir).tokenFile,
        }),
      };
    },
  );
  log.addSecrets([auth.token]);
  // Engines a killed run of this directory left running are stopped before anything new starts.
  await reapInterruptedTurns({ store, log }).catch((err: unknown) => log.error(`cannot check for interrupted turns: ${errorMessage(err)}`));

  const channels = createChannelRuntime({ dir: directory.dir, assistant, config, store, log, ...channelTuning(env) });
  for (const line of formatAccessNotices({ raw: config.current().raw, config: config.current().config, dir: directory.dir })) log.warn(line);
  // An engine whose program is missing is said now, not at the first turn (and in /api/status).
  const engineWarning = assistant.engineWarning();
  if (engineWarning) log.warn(engineWarning);
  const tasks = createTaskRunner({ assistant, config, store, log, channels: channels.deliveries });
  const taskControl = createTaskControl({ config, runner: tasks, scheduled: true, log: log.child('tasks') });
  const scheduler = createScheduler({
    tasks: () => config.current().config.tasks,
    clock: systemClock,
    // Each cron time is taken in the store first: across a leader change it runs on one gateway.
    run: (task, at) => taskControl.runScheduled(task, () => store.claimTaskSlot(task.id, at)),
    onSkipped: (task, at) => tasks.recordSkipped(task, at),
    log: log.child('scheduler'),
  });
  directory.commands.add(createCronCommand({ config, tasks, control: taskControl, nextRun: (id) => scheduler.nextRun(id) }));
  for (const command of createTaskCommands({ config, control: taskControl })) directory.commands.add(command);
  const { app, streamsFlushed } = createServerApp({
    assistant,
    commands: directory.commands,
    config,
    channels: channels.hub,
    tasks: taskControl,
    activity: store,
    replies: store,
    access: directory.access,
    token: auth.token,
    engineToken: engineApi.token,
    log,
    version,
    dashboardDir: path.join(templatesDir(), 'dashboard'),
    fleet: () => fleetPanelRows(listFleet(), self),
  });

  // With a store shared by several gateways of this assistant, the one holding the lease runs
  // the channels and the scheduler; every one serves HTTP.
  if (store.coordination && !config.current().config.inbox.enabled && Object.keys(config.current().config.channels).length > 0) log.warn(INBOX_OFF);
  const leadership = store.coordination
    ? createLeaderLease({
        store: store.coordination,
        holder: `${self.hostname}:${self.pid}:${randomUUID().slice(0, 8)}`,
        failoverSeconds: config.current().config.store.failoverSeconds,
        log: log.child('leader'),
        onLead: async ({ since }) => {
          channels.start();
          scheduler.start();
          if (since !== undefined) scheduler.catchUp(since);
        },
        onFollow: async () => {
          scheduler.stop();
          await withTimeout(channels.idle(), 5_000).catch(() => undefined);
          await channels.stop({ standby: STANDBY });
        },
      })
    : undefined;

  // --- start ---
  const answerFirst = createHealthAnswer({ assistant, version, config, token: auth.token });
  const tls = opts.https
    ? closingOnFailure(
        () => void release(),
        () => resolveTlsFiles({ stateDir: resolveAssistantPaths(directory.dir).stateDir, ...(typeof opts.https === 'object' ? opts.https : {}) }),
      )
    : undefined;
  const server = await listenApp(app, { ...bind, answerFirst, ...(tls ? { tls } : {}) }).catch(async (err: unknown) => {
    await release();
    throw err;
  });
  // Loaded only with --tunnel (untun and what it brings).
  const tunnel = opts.tunnel ? (await import('./server/tunnel.js')).startTunnel(server.url) : undefined;
  lock.describe({ url: server.url });
  engineApi.describe({ host: server.host, port: server.port, ...(tls ? { tls: { certFile: tls.certFile } } : {}) });
  // Registered only now: the entry carries the port actually bound (port 0 picks one).
  const fleetDatabase = directory.storeTarget.kind === 'postgres' ? directory.storeTarget.url : undefined;
  const membership = joinFleet({
    registry: fleet,
    config,
    host: server.host,
    port: server.port,
    dir: directory.dir,
    version,
    log: log.child('fleet'),
    hostname: self.hostname,
    ...(fleetDatabase ? { shared: { fleet: sharedFleet, url: fleetDatabase } } : {}),
  });
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
  const stop = async (graceMs: number): Promise<void> => {
    const left = membership.leave(); // peers stop listing this gateway as soon as it stops taking requests
    process.off('exit', leaveOnExit);
    unwatchTasks();
    scheduler.stop();
    const schedulerStopped = Date.now();
    try {
      await tunnel?.close().catch((err: unknown) => log.error(`closing the tunnel: ${errorMessage(err)}`));
      server.stopAccepting();
      await assistant.drain(graceMs);
      await streamsFlushed(5_000); // the last events of each turn reach their clients
      await server.close();
      // Replies of turns that just ended still go out before the adapters disconnect.
      await withTimeout(channels.idle(), 5_000).catch(() => undefined);
      // The lease is given up only once the channels are down: the next leader connects them.
      if (leadership) await leadership.stop({ idleSince: schedulerStopped });
      else await channels.stop();
    } catch (err) {
      log.error(`shutdown: ${errorMessage(err)}`);
    }
    await withTimeout(left, 5_000); // the database row is deleted (an unreachable server: it goes stale)
    await release();
  };
  const close = once(stop);
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

const INBOX_OFF =
  'inbox.enabled is off: if this gateway dies while it leads, the messages it took in but had not answered are lost; with gateways on several hosts, turn the inbox on so the next leader answers them';
const STANDBY = 'standby: another gateway of this assistant runs the channels (it holds the leader lease)';

/** Run a step of the assembly; if it throws, what is open so far (watcher, database, lock) is closed first. */
function closingOnFailure<T>(close: () => void, step: () => T): T {
  try {
    return step();
  } catch (err) {
    close();
    throw err;
  }
}

/** Test and operator knobs: SERVICE_CHANNEL_RETRY_MS (one restart delay), SERVICE_CHANNEL_CONNECT_TIMEOUT_MS, SERVICE_REPLY_RETRY_MS (one wait before a refused reply is sent again). */
function channelTuning(env: NodeJS.ProcessEnv): { backoffMs?: number[]; connectTimeoutMs?: number; replyRetryMs?: number[] } {
  const backoff = Number(env.SERVICE_CHANNEL_RETRY_MS);
  const connect = Number(env.SERVICE_CHANNEL_CONNECT_TIMEOUT_MS);
  const reply = Number(env.SERVICE_REPLY_RETRY_MS);
  return {
    ...(Number.isFinite(backoff) && backoff > 0 ? { backoffMs: [backoff] } : {}),
    ...(Number.isFinite(connect) && connect > 0 ? { connectTimeoutMs: connect } : {}),
    ...(Number.isFinite(reply) && reply > 0 ? { replyRetryMs: [reply] } : {}),
  };
}
