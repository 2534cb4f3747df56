import os from 'node:os';
import { type AccessAdmin, createAccessAdmin } from './core/access/access-admin.js';
import { createApproveCommand } from './core/access/approve-command.js';
import { type Assistant, createAssistantCore } from './core/assistant/assistant.js';
import { type CommandTable, createCommandTable } from './core/commands/command-table.js';
import type { ChannelHub } from './core/channel-hub.js';
import { type ConfigSource, createConfigSource } from './core/config/source.js';
import type { PeerAssistant } from './core/engines/context.js';
import type { EngineApiAccess } from './core/engines/engine-env.js';
import { createControlGuard } from './core/guard/control-guard.js';
import { createLogger, type Logger } from './core/logger.js';
import { createLiveMetrics, type LiveMetrics } from './core/metrics/live-metrics.js';
import { packageVersion, resolveAssistantPaths } from './core/paths.js';
import { createCronCommand } from './core/scheduler/cron-command.js';
import { createTaskCommands } from './core/scheduler/task-commands.js';
import { createTaskControl, type TaskControl } from './core/scheduler/task-control.js';
import { createTaskRunner, type TaskRunner } from './core/scheduler/task-runner.js';
import { countStoreErrors } from './core/store/counted-store.js';
import { openStore, resolveStoreTarget, type StoreTarget } from './core/store/open-store.js';
import type { Store } from './core/store/types.js';
import { configChecks, configParts } from './definitions.js';

/**
 * One assistant directory opened for use, the base every entry point builds on (`service chat`,
 * `service cron`, the gateway, embedding): in this order its live configuration, its state
 * database, the slash-command table, the assistant (which adds its built-in commands) and the
 * access admin (which adds `/approve`).
 */
export interface AssistantDirectory {
  /** The resolved directory. */
  dir: string;
  config: ConfigSource;
  store: Store;
  /** Where the store is (chosen once, at open): the fleet joins a PostgreSQL store's database. */
  storeTarget: StoreTarget;
  log: Logger;
  /** The slash commands of this assistant; modules that run tasks add `/cron`. */
  commands: CommandTable;
  assistant: Assistant;
  /** Pairings and approvals (`service access`, the HTTP API, `/approve`). */
  access: AccessAdmin;
  /** What this process counts (turns, channel messages, store errors): the dashboard's status and GET /metrics read it. */
  metrics: LiveMetrics;
  /** Stop watching the config and close the store (after draining turns). */
  close(): Promise<void>;
}

export interface OpenDirectoryOptions {
  dir: string;
  apiKey?: string;
  log?: Logger;
  env?: NodeJS.ProcessEnv;
  /** Follow outside edits of service.yaml (the gateway does; one-shot commands do not). */
  watchConfig?: boolean;
  /** Other assistants to name in the context file (the gateway's fleet). */
  peers?: () => PeerAssistant[];
  /** The gateway's: how the engine reaches its HTTP API (SERVICE_URL, a send-only token). */
  engineApi?: EngineApiAccess;
}

export function openAssistantDirectory(opts: OpenDirectoryOptions): AssistantDirectory {
  const log = opts.log ?? createLogger();
  const config = createConfigSource({
    dir: opts.dir,
    parts: configParts(),
    checks: configChecks,
    ...(opts.env ? { env: opts.env } : {}),
    log: log.child('config'),
  });
  log.addSecrets(config.current().secretValues);
  config.onChange((next) => log.addSecrets(next.secretValues));
  for (const w of config.current().warnings) log.warn(w);
  const paths = resolveAssistantPaths(opts.dir);
  // The store is chosen once, at start (store.url is a restart field).
  const storeTarget = resolveStoreTarget(config.current().config, opts.env ?? process.env, paths.database);
  const metrics = createLiveMetrics();
  const opened = openStore(storeTarget, {
    onIdleError: (err) => log.warn(`store: a pooled connection failed (${err.message}); the next query opens another`),
    // Engines keep their transcripts per machine and per working directory.
    origin: `${os.hostname()}:${paths.dir}`,
  });
  const store = countStoreErrors(opened, (operation) => metrics.storeError(operation));
  const unwatch = opts.watchConfig ? config.watch() : () => undefined;
  const commands = createCommandTable();
  // What a turn a non-admin started changed of the assistant's own files and grants is undone after it.
  const guard = createControlGuard({ dir: paths.dir, config, store, log });
  const assistant = createAssistantCore({
    dir: paths.dir,
    config,
    store,
    log,
    version: packageVersion(),
    commands,
    metrics,
    ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.peers ? { peers: opts.peers } : {}),
    ...(opts.engineApi ? { engineApi: opts.engineApi } : {}),
    ...(store.coordination ? { keyLocks: store.coordination } : {}),
    guard,
  });
  const access = createAccessAdmin({ store, access: () => config.current().config.access, onGranted: (g) => guard.noteGrant(g) });
  commands.add(createApproveCommand(access));
  return {
    dir: paths.dir,
    config,
    store,
    storeTarget,
    log,
    commands,
    assistant,
    access,
    metrics,
    close() {
      unwatch();
      return store.close();
    },
  };
}

/** A directory's tasks: the runner, and the control every run asked for goes through (one run of a task at a time). */
export interface DirectoryTasks {
  runner: TaskRunner;
  control: TaskControl;
}

/**
 * Scheduled tasks where no scheduler runs (`service chat`, `service cron`, embedding): a task
 * runner delivering through `channels` when given, and `/cron` with next runs from the schedule.
 */
export function addTaskRunner(directory: AssistantDirectory, channels?: ChannelHub): DirectoryTasks {
  const runner = createTaskRunner({
    assistant: directory.assistant,
    config: directory.config,
    store: directory.store,
    log: directory.log,
    ...(channels ? { channels } : {}),
  });
  const control = createTaskControl({ config: directory.config, runner, scheduled: false, log: directory.log.child('tasks') });
  directory.commands.add(createCronCommand({ config: directory.config, tasks: runner, control }));
  for (const command of createTaskCommands({ config: directory.config, control })) directory.commands.add(command);
  return { runner, control };
}
