import { createChatCore, type Assistant } from './core/assistant/assistant.js';
import type { ChannelHub } from './core/channel-hub.js';
import { createConfigSource, type ConfigSource } from './core/config/source.js';
import type { PeerAssistant } from './core/engines/context.js';
import { createLogger, type Logger } from './core/logger.js';
import { packageVersion, resolveAssistantPaths } from './core/paths.js';
import { createSqliteStore } from './core/store/sqlite-store.js';
import type { Store } from './core/store/types.js';
import { createTaskRunner, type TaskRunner } from './core/scheduler/task-runner.js';
import { configChecks, configParts } from './definitions.js';

/** An assistant directory opened for use: its live config, its state database and the chat core. */
export interface OpenedAssistant {
  assistant: Assistant;
  config: ConfigSource;
  store: Store;
  log: Logger;
  /** Runs scheduled tasks on this assistant (the gateway's scheduler, `service cron run`, /cron run). */
  tasks: TaskRunner;
  /** Stop watching the config and close the database (after draining turns). */
  close(): void;
}

export interface OpenAssistantOptions {
  dir: string;
  apiKey?: string;
  log?: Logger;
  env?: NodeJS.ProcessEnv;
  /** Follow outside edits of service.yaml (the gateway does; one-shot commands do not). */
  watchConfig?: boolean;
  peers?: () => PeerAssistant[];
  /** Where task replies are delivered (the gateway's channels). */
  hub?: () => ChannelHub | undefined;
  /** Next run times as the running scheduler sees them, for /cron list. */
  nextRun?: (id: string) => Date | undefined;
}

export function openAssistant(opts: OpenAssistantOptions): OpenedAssistant {
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
  const store = createSqliteStore(paths.database);
  const unwatch = opts.watchConfig ? config.watch() : () => undefined;
  let tasks: TaskRunner | undefined;
  const assistant = createChatCore({
    dir: paths.dir,
    config,
    store,
    log,
    version: packageVersion(),
    ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.peers ? { peers: opts.peers } : {}),
    tasks: () => (tasks as TaskRunner).commands(opts.nextRun),
  });
  tasks = createTaskRunner({ assistant, config, store, log, ...(opts.hub ? { hub: opts.hub } : {}) });
  return {
    assistant,
    config,
    store,
    log,
    tasks,
    close() {
      unwatch();
      store.close();
    },
  };
}
