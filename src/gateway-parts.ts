import { randomUUID } from 'node:crypto';
import type { AssistantDirectory } from './assistant-directory.js';
import type { ChannelRuntime } from './channels/channel-runtime.js';
import { resolveGatewayBind } from './core/config/bind.js';
import { errorMessage } from './core/errors.js';
import { createFleetDirectory, resolveFleetDir } from './core/fleet/fleet-directory.js';
import { type FleetMembership, type FleetSelf, joinFleet, mergeFleetEntries } from './core/fleet/membership.js';
import { createSharedFleet, readHostname, resolveHeartbeatMs } from './core/fleet/shared-fleet.js';
import { createLeaderLease, type LeaderLease } from './core/leader/leader-lease.js';
import type { Logger } from './core/logger.js';
import { resolveAssistantPaths } from './core/paths.js';
import type { Clock } from './core/util/clock.js';
import { createCronCommand } from './core/scheduler/cron-command.js';
import { createScheduler, type Scheduler } from './core/scheduler/scheduler.js';
import { createTaskCommands } from './core/scheduler/task-commands.js';
import { createTaskControl, type TaskControl } from './core/scheduler/task-control.js';
import { createTaskRunner } from './core/scheduler/task-runner.js';
import { acquireGatewayLock, type GatewayLock } from './core/store/gateway-lock.js';
import { withTimeout } from './core/util/timeout.js';
import { resolveGatewayToken } from './server/auth.js';

/**
 * The parts the gateway's composition root (gateway.ts) builds, one function each, in the order
 * it calls them: the fleet view, the held directory (lock and store), where to listen and the
 * token, the scheduled tasks, the leader lease. Each takes what was built before it; none
 * reaches for something built later.
 */

const INBOX_OFF =
  'inbox.enabled is off: if this gateway dies while it leads, the messages it took in but had not answered are lost; with gateways on several hosts, turn the inbox on so the next leader answers them';
export const STANDBY = 'standby: another gateway of this assistant runs the channels (it holds the leader lease)';

/** The fleet as this gateway sees it: the folder's entries and, with a PostgreSQL store, the database's rows. */
export interface Fleet {
  self: FleetSelf;
  list(): ReturnType<typeof mergeFleetEntries>;
  /** This gateway's entry, once it listens. */
  join(directory: AssistantDirectory, at: { host: string; port: number; version: string }): FleetMembership;
}

export function openFleet(env: NodeJS.ProcessEnv, log: Logger): Fleet {
  const registry = createFleetDirectory({ dir: resolveFleetDir(env) });
  // With a PostgreSQL store the fleet spans hosts: the database's rows, as the last heartbeat read them.
  const shared = createSharedFleet({ heartbeatMs: resolveHeartbeatMs(env), log: log.child('fleet') });
  const self = { pid: process.pid, hostname: readHostname() };
  return {
    self,
    list: () => mergeFleetEntries(registry.list(), shared.entries(), self.hostname),
    join(directory, at) {
      const database = directory.storeTarget.kind === 'postgres' ? directory.storeTarget.url : undefined;
      return joinFleet({
        registry,
        config: directory.config,
        ...at,
        dir: directory.dir,
        log: log.child('fleet'),
        hostname: self.hostname,
        ...(database ? { shared: { fleet: shared, url: database } } : {}),
      });
    },
  };
}

/** The directory held by this gateway: its lock taken (one gateway per directory) and its store ready; `release` gives both back. */
export interface HeldDirectory {
  lock: GatewayLock;
  release(): Promise<void>;
}

export async function holdDirectory(directory: AssistantDirectory, log: Logger): Promise<HeldDirectory> {
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
  await directory.store.ready().catch(async (err: unknown) => {
    await release();
    throw err;
  });
  return { lock, release };
}

/** Where to listen and the token the API asks for (flag, SERVICE_PORT/SERVICE_TOKEN, service.yaml, the stored token). */
export function resolveAccess(directory: AssistantDirectory, opts: { hostname?: string; port?: number | string; token?: string }, env: NodeJS.ProcessEnv) {
  const c = directory.config.current().config;
  return {
    bind: resolveGatewayBind(c, { ...(opts.hostname ? { host: opts.hostname } : {}), ...(opts.port !== undefined ? { port: opts.port } : {}) }, env),
    auth: resolveGatewayToken({
      ...(opts.token ? { flag: opts.token } : {}),
      env,
      ...(c.gateway.token ? { configToken: c.gateway.token } : {}),
      tokenFile: resolveAssistantPaths(directory.dir).tokenFile,
    }),
  };
}

/**
 * The scheduled tasks: the runner (delivers through the hub, an answer the platform refuses
 * waiting in the reply outbox), its control, the scheduler, its /cron command and the chat's
 * task commands (/remind, /task, /tasks).
 */
export function buildTasks(directory: AssistantDirectory, channels: ChannelRuntime, log: Logger, clock: Clock): { control: TaskControl; scheduler: Scheduler } {
  const { assistant, config, store } = directory;
  const runner = createTaskRunner({ assistant, config, store, log, channels: channels.deliveries });
  const control = createTaskControl({ config, runner, scheduled: true, log: log.child('tasks') });
  const scheduler = createScheduler({
    tasks: () => config.current().config.tasks,
    clock,
    // Each cron time is taken in the store first: across a leader change it runs on one gateway.
    run: (task, at) =>
      control.runScheduled(task, async () => {
        if (await store.claimTaskSlot(task.id, at)) return true;
        log.info(`task ${task.id}: its run of ${new Date(at).toISOString()} was already taken by another gateway`);
        return false;
      }),
    onSkipped: (task, at) => runner.recordSkipped(task, at),
    log: log.child('scheduler'),
  });
  directory.commands.add(createCronCommand({ config, tasks: runner, control, nextRun: (id) => scheduler.nextRun(id) }));
  for (const command of createTaskCommands({ config, control })) directory.commands.add(command);
  return { control, scheduler };
}

/**
 * With a store shared by several gateways of this assistant, the one holding the lease runs the
 * channels and the scheduler; every one serves HTTP. Without one: undefined (this gateway runs both).
 */
export function leadWithLease(
  directory: AssistantDirectory,
  run: { channels: ChannelRuntime; scheduler: Scheduler; self: FleetSelf; log: Logger; clock: Clock },
): LeaderLease | undefined {
  const { config, store } = directory;
  if (!store.coordination) return undefined;
  const { channels, scheduler, log } = run;
  if (!config.current().config.inbox.enabled && Object.keys(config.current().config.channels).length > 0) log.warn(INBOX_OFF);
  return createLeaderLease({
    store: store.coordination,
    holder: `${run.self.hostname}:${run.self.pid}:${randomUUID().slice(0, 8)}`,
    failoverSeconds: config.current().config.store.failoverSeconds,
    log: log.child('leader'),
    onLead: async ({ since }) => {
      channels.start();
      scheduler.start();
      // The lease measures the gap on this machine's time; the scheduler counts it back on its own clock.
      if (since !== undefined) scheduler.catchUp(run.clock.now() - (Date.now() - since));
    },
    onFollow: async () => {
      scheduler.stop();
      await withTimeout(channels.idle(), 5_000).catch(() => undefined);
      await channels.stop({ standby: STANDBY });
    },
  });
}

/** Run a step of the assembly; if it throws, what is open so far (watcher, database, lock) is closed first. */
export function closingOnFailure<T>(close: () => void, step: () => T): T {
  try {
    return step();
  } catch (err) {
    close();
    throw err;
  }
}

/**
 * Test and operator knobs: SERVICE_CHANNEL_RETRY_MS (one restart delay), SERVICE_CHANNEL_CONNECT_TIMEOUT_MS,
 * SERVICE_REPLY_RETRY_MS (one wait before a refused reply is sent again).
 */
export function channelTuning(env: NodeJS.ProcessEnv): { backoffMs?: number[]; connectTimeoutMs?: number; replyRetryMs?: number[] } {
  const backoff = Number(env.SERVICE_CHANNEL_RETRY_MS);
  const connect = Number(env.SERVICE_CHANNEL_CONNECT_TIMEOUT_MS);
  const reply = Number(env.SERVICE_REPLY_RETRY_MS);
  return {
    ...(Number.isFinite(backoff) && backoff > 0 ? { backoffMs: [backoff] } : {}),
    ...(Number.isFinite(connect) && connect > 0 ? { connectTimeoutMs: connect } : {}),
    ...(Number.isFinite(reply) && reply > 0 ? { replyRetryMs: [reply] } : {}),
  };
}
