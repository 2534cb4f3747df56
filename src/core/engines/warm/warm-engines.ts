import { createHash } from 'node:crypto';
import path from 'node:path';
import type { ApprovalBroker } from '../../approvals/approval-broker.js';
import type { ServiceConfig } from '../../config/schema.js';
import { errorMessage } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { Clock } from '../../util/clock.js';
import { createWarmPool, type WarmProcessInfo, type WarmSettings } from './warm-pool.js';
import { reapWarmLeftovers, treeRssBytes } from './warm-records.js';
import { createWarmTurns } from './warm-turns.js';

/**
 * The warm engines of one engine runner, assembled: the pool, the turns on it, and what the rest
 * of the assistant sees of them (settings, the processes with their memory, stop). At start the
 * processes an earlier owner left running (killed with SIGKILL) are ended first.
 */
export interface WarmControl {
  settings(): WarmSettings;
  /** The live warm processes, each with the resident memory of its process tree. */
  processes(): Array<WarmProcessInfo & { rssBytes: number }>;
  /**
   * The configuration changed: processes started under another one (engine, model, provider,
   * permissions, MCP, context…) are retired, the idle ones now, the busy ones after their turn.
   */
  configure(config: ServiceConfig): void;
  /** End every warm process (shutdown, drain); resolves when they have ended. */
  stop(): Promise<void>;
}

export interface WarmEnginesDeps {
  stateDir: string;
  log: Logger;
  broker: ApprovalBroker;
  now: () => number;
  clock?: Clock;
}

export const DEFAULT_WARM: WarmSettings = { enabled: true, maxProcesses: 4, idleSeconds: 600 };

export function createWarmEngines(deps: WarmEnginesDeps) {
  let settings = DEFAULT_WARM;
  let configStamp: string | undefined;
  const log = deps.log.child('warm');
  const pool = createWarmPool({
    settings: () => settings,
    log,
    ...(deps.clock ? { clock: deps.clock } : {}),
    endedByItself: (entry, exit) => turns.endedByItself(entry, exit),
  });
  const reaped = reapWarmLeftovers(deps.stateDir)
    .then((n) => {
      if (n > 0) log.warn(`ended ${n} warm engine process(es) left running when this assistant last stopped`);
    })
    .catch((err: unknown) => log.warn(`cannot check for warm engine processes left running: ${errorMessage(err)}`));
  const turns = createWarmTurns({
    pool,
    stateDir: deps.stateDir,
    outboxRoot: path.join(deps.stateDir, 'outbox'),
    broker: deps.broker,
    log,
    now: deps.now,
    ready: reaped,
  });

  let configured: ServiceConfig | undefined;
  const configure = (config: ServiceConfig) => {
    // Every turn passes the configuration it runs under: a snapshot, replaced (never changed) on a
    // reload, so the same object needs no second look (its stamp is a hash of all of it).
    if (config === configured) return;
    configured = config;
    settings = config.warm;
    const stamp = configStampOf(config);
    // Every process running now was started under the previous configuration.
    if (configStamp !== undefined && stamp !== configStamp) {
      pool.retireWhere(() => true, 'the configuration changed');
      turns.forgetFailures();
    }
    if (!settings.enabled) pool.retireWhere(() => true, 'warm.enabled is off');
    pool.trim();
    configStamp = stamp;
  };
  const control: WarmControl = {
    settings: () => settings,
    processes: () => pool.list().map((p) => ({ ...p, rssBytes: treeRssBytes(pool.processesOf(p.sessionKey)) })),
    configure,
    stop: () => pool.stopAll(),
  };
  return { turns, configure, control };
}

// --- internal ---

/** Fields that never change how an engine is started (the gateway's, the channels', the queue's). */
const NOT_ENGINE_FIELDS = new Set([
  'tasks',
  'channels',
  'access',
  'streaming',
  'groupChat',
  'gateway',
  'warm',
  'timeout',
  'maxConcurrent',
  'maxQueuePerSession',
  'maxTurnsPerPerson',
  'sessionTtlDays',
  'inbox',
  'historyFetch',
  'store',
  'maxTasksPerChat',
  'replyRetryHours',
  'transcription',
  'metrics',
]);

function configStampOf(config: ServiceConfig): string {
  const relevant = Object.entries(config).filter(([key]) => !NOT_ENGINE_FIELDS.has(key));
  return createHash('sha256').update(JSON.stringify(relevant)).digest('hex');
}
