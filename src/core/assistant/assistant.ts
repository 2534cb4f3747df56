import { createApprovalCommands } from '../approvals/approval-commands.js';
import { type Approvals, createApprovals } from '../approvals/approvals.js';
import { maskSecretValues } from '../config/secrets.js';
import type { ConfigSource } from '../config/source.js';
import type { PeerAssistant } from '../engines/context.js';
import { describeMissingEngine } from '../engines/detect.js';
import type { EngineApiAccess } from '../engines/engine-env.js';
import { createEngineRunner, type EngineRunner } from '../engines/engine-runner.js';
import { enginesWith, getEngine } from '../engines/registry.js';
import { removeStaleOutboxes } from '../files/outbox.js';
import { createSentFiles } from '../files/sent-files.js';
import { mentionsControlFile } from '../guard/control-files.js';
import type { ControlGuard } from '../guard/control-guard.js';
import type { Logger } from '../logger.js';
import type { LiveMetrics } from '../metrics/live-metrics.js';
import { type AssistantPaths, resolveAssistantPaths } from '../paths.js';
import { createTurnQueue, type TurnQueue } from '../queue/turn-queue.js';
import type {
  ActivityRecord,
  ActivityStore,
  BudgetStore,
  ChatSessionStore,
  CoordinationStore,
  FailoverStore,
  HistoryStore,
  RunningTurnStore,
  SessionStore,
} from '../store/types.js';
import { createKeyedOrder } from '../util/keyed-order.js';
import { formatCommandRecord, formatRefusalRecord } from './activity-records.js';
import type { Assistant } from './assistant-api.js';
import { createBuiltinCommands } from './builtin-commands.js';
import { type ChatSessions, createChatSessions } from './chat-sessions.js';
import { pruneIdleSessions } from './prune-sessions.js';
import { createTurnRecorder } from './running-turns.js';
import { createSessionCommands } from './session-commands.js';
import type { CommandTable } from '../commands/command-table.js';
import { formatStatusText } from './status-text.js';
import { createTurnBudget, type TurnBudget } from './turn-budget.js';
import type { AssistantStatus } from './turn-options.js';
import { createTurnPipeline } from './turn-pipeline.js';
import { createTurnReports } from './turn-report.js';
import { createTurnTable, type TurnTable } from './turn-table.js';

export type { Assistant } from './assistant-api.js';
export type { AssistantStatus, ChatOptions, CommandOptions, Refusal } from './turn-options.js';

/**
 * The assistant's core, assembled from its parts: the chat core that the terminal, the HTTP
 * server, the channels and the scheduler call (assistant-api.ts). Its turns go through the turn
 * pipeline (turn-pipeline.ts); its slash commands are the table's, to which it adds its built-ins.
 * The embedding API's `createAssistant` (src/embedding.ts) opens a directory and builds one.
 */
export interface AssistantCoreDeps {
  dir: string;
  config: ConfigSource;
  store: SessionStore & ChatSessionStore & HistoryStore & ActivityStore & FailoverStore & RunningTurnStore & BudgetStore;
  log: Logger;
  version: string;
  /** The slash-command table; the assistant adds its built-ins, other modules (the scheduler) add theirs. */
  commands: CommandTable;
  engine?: EngineRunner;
  apiKey?: string;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  peers?: () => PeerAssistant[];
  /** With a store shared by several gateways of the assistant: a key runs on one of them at a time. */
  keyLocks?: Pick<CoordinationStore, 'lockSessionKey'>;
  /** Under a gateway: how the engine reaches its API (SERVICE_URL, a send-only token). */
  engineApi?: EngineApiAccess;
  /** Undoes what a turn a non-admin started changed of the assistant's own files and grants. */
  guard?: ControlGuard;
  /** Where each turn's outcome, timing and cost are counted (the dashboard's status and GET /metrics). */
  metrics?: LiveMetrics;
}

/** The long-lived parts every turn and command shares, built once, in this order. */
interface Parts {
  now: () => number;
  startedAt: number;
  paths: AssistantPaths;
  engine: EngineRunner;
  queue: TurnQueue;
  table: TurnTable;
  budget: TurnBudget;
  approvals: Approvals;
  sessions: ChatSessions;
  record(activity: ActivityRecord): Promise<void>;
  listeners: Set<(r: ActivityRecord) => void>;
  reset(key: string): Promise<void>;
}

export function createAssistantCore(deps: AssistantCoreDeps): Assistant {
  const parts = buildParts(deps);
  const { now, engine, sessions, table, approvals } = parts;
  const sentFiles = createSentFiles({ dir: parts.paths.sentFilesDir, now });
  sentFiles.prune();
  removeStaleOutboxes(parts.paths.outboxDir, now() - 86_400_000);
  const turns = createTurnPipeline({
    ...parts,
    config: deps.config,
    store: deps.store,
    log: deps.log,
    sentFiles,
    recorder: createTurnRecorder(deps.store, deps.log),
    inOrder: createKeyedOrder(),
    pruning: pruneIdleSessions(deps.store, deps.config.current().config.sessionTtlDays, now(), deps.log),
    ...(deps.keyLocks ? { keyLocks: deps.keyLocks } : {}),
    ...(deps.guard ? { guard: deps.guard } : {}),
    reports: createTurnReports({ log: deps.log, metrics: deps.metrics, engine: () => deps.config.current().config.engine, now }),
  });
  const status = (): AssistantStatus => {
    const c = deps.config.current().config;
    const q = parts.queue.stats();
    return {
      name: c.name,
      engine: c.engine,
      model: c.model ?? '',
      version: deps.version,
      uptime: now() - parts.startedAt,
      running: q.running,
      waiting: q.waiting,
      approvalsWaiting: approvals.waitingCount(),
    };
  };
  // A change of how the engine starts retires the warm processes started the old way.
  deps.config.onChange((next) => engine.warm.configure(next.config));
  addCommands(deps, parts, async (key) => formatStatusText(status(), await deps.store.getSession(key), key, table.isRunning(key)));

  return {
    config: deps.config,
    engine,
    sessions,
    files: sentFiles,
    engineWarning() {
      const located = engine.locate(deps.config.current().config);
      return located.found ? undefined : describeMissingEngine(located);
    },
    chat(message, opts = {}) {
      const shown = (text: string) => (text.trim() !== '' ? text : opts.images?.length ? '(image)' : opts.files?.length ? '(file)' : text);
      return turns.start({ prompt: shown(message), opts: { ...opts, ...(opts.messageText !== undefined ? { messageText: shown(opts.messageText) } : {}) } });
    },
    command(name, args, opts = {}) {
      const c = deps.config.current().config;
      const def = getEngine(c.engine);
      const refusal = def.nativeCommands
        ? undefined
        : `${c.engine} (${def.title}) does not support native commands; only engines with a command flag do: ${enginesWith('nativeCommands')}`;
      return turns.start({
        prompt: `/${name} ${args ?? ''}`.trim(),
        opts,
        command: { name, ...(args ? { arguments: args } : {}) },
        ...(refusal ? { refusal } : {}),
      });
    },
    async runCommand(line, opts = {}) {
      const started = now();
      const key = opts.chatKey !== undefined ? await sessions.resolve(opts.chatKey) : (opts.sessionKey ?? 'default');
      const result = await deps.commands.run(line, {
        sessionKey: key,
        ...(opts.chatKey !== undefined ? { chatKey: opts.chatKey } : {}),
        allowConfigChanges: opts.allowConfigChanges ?? true,
        ...(opts.caller ? { caller: opts.caller } : {}),
        ...(opts.chat ? { chat: opts.chat } : {}),
      });
      const source = opts.source ?? 'http';
      await parts.record(formatCommandRecord(line, result, { source, sender: opts.sender ?? source, sessionKey: key, started, ended: now() }));
      return result;
    },
    reset: parts.reset,
    abort: (key) => table.abort(key),
    isRunning: (key) => table.isRunning(key),
    answerApproval: (answer) => approvals.answer(answer),
    runsAtOnce: (line) => deps.commands.runsAtOnce(line),
    status,
    onActivity(listener) {
      parts.listeners.add(listener);
      return () => parts.listeners.delete(listener);
    },
    recentActivity: (limit) => deps.store.recentActivity(limit),
    metrics: () => deps.store.metrics(),
    recordRefusal: (r) => parts.record(formatRefusalRecord(r, new Date(now()).toISOString())),
    budget: () => parts.budget.today(),
    async drain(graceMs, why) {
      await turns.drain(graceMs, why);
      // No engine process outlives the assistant's turns (a later turn starts another).
      await engine.warm.stop();
    },
  };
}

// --- internal ---

function buildParts(deps: AssistantCoreDeps): Parts {
  const now = deps.now ?? Date.now;
  const paths = resolveAssistantPaths(deps.dir);
  const engine =
    deps.engine ??
    createEngineRunner({
      dir: paths.dir,
      stateDir: paths.stateDir,
      skillsDir: paths.skillsDir,
      log: deps.log.child('engine'),
      failover: deps.store,
      ...(deps.env ? { env: deps.env } : {}),
      ...(deps.apiKey ? { apiKey: deps.apiKey } : {}),
      ...(deps.peers ? { peers: deps.peers } : {}),
      ...(deps.engineApi ? { engineApi: deps.engineApi } : {}),
      now,
    });
  const queue = createTurnQueue(() => {
    const c = deps.config.current().config;
    return { maxConcurrent: c.maxConcurrent, maxQueuePerSession: c.maxQueuePerSession, maxTurnsPerPerson: c.maxTurnsPerPerson };
  });
  const table = createTurnTable();
  const approvals = createApprovals({
    timeoutMs: () => deps.config.current().config.approvalTimeoutSeconds * 1000,
    mask: (text) => maskSecretValues(text, deps.config.current().secretValues),
    touchesControlFiles: mentionsControlFile,
  });
  // A turn a reset overtook (its key was reset while it ran) keeps neither its engine session nor
  // its reply: saved after the reset, they would bring back what the user just cleared.
  const reset = async (key: string) => {
    table.reset(key);
    approvals.forget(key);
    await deps.store.deleteSession(key);
    await deps.store.clearHistory(key);
  };
  const listeners = new Set<(r: ActivityRecord) => void>();
  // Stored masked: the record outlives the configuration whose secrets it could echo (a reply naming a resolved ${VAR}).
  const record = async (raw: ActivityRecord) => {
    const r = maskSecretValues(raw, deps.config.current().secretValues);
    await deps.store.recordActivity(r);
    for (const l of listeners) l(r);
  };
  const budget = createTurnBudget({ store: deps.store, config: deps.config, now });
  const sessions = createChatSessions({ store: deps.store, reset, now });
  return { now, startedAt: now(), paths, engine, queue, table, budget, approvals, sessions, record, listeners, reset };
}

/** The assistant's own slash commands: the built-ins, the named sessions', the approvals'. */
function addCommands(deps: AssistantCoreDeps, parts: Parts, statusText: (key: string) => Promise<string>): void {
  const builtins = createBuiltinCommands({
    table: deps.commands,
    config: deps.config,
    skillsDir: parts.paths.skillsDir,
    env: deps.env ?? process.env,
    listModels: () => parts.engine.listModels(deps.config.current().config),
    reset: parts.reset,
    abort: (key) => parts.table.abort(key),
    statusText,
  });
  for (const command of [...builtins, ...createSessionCommands(parts.sessions, parts.now), ...createApprovalCommands(parts.approvals)])
    deps.commands.add(command);
}
