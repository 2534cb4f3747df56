import { type BudgetState, formatBudgetRefusal, isBudgeted, readBudget } from '../access/budget.js';
import { maskSecretValues } from '../config/secrets.js';
import type { ConfigSource } from '../config/source.js';
import type { PeerAssistant } from '../engines/context.js';
import { enginesWith, getEngine } from '../engines/registry.js';
import { createEngineRunner, type EngineRunner } from '../engines/engine-runner.js';
import type { Completion, StreamEvent } from '../events.js';
import type { Logger } from '../logger.js';
import { resolveAssistantPaths } from '../paths.js';
import { createTurnQueue } from '../queue/turn-queue.js';
import type { ActivityRecord, ActivityStore, FailoverStore, HistoryStore, Metrics, RefusalReason, RunningTurnStore, SessionStore } from '../store/types.js';
import { createAsyncQueue } from '../util/async-queue.js';
import { createBuiltinCommands } from './builtin-commands.js';
import type { CommandResult, CommandTable } from './slash-commands.js';
import { decodeImages, type ImageInput } from './images.js';
import { executeTurn, rejectTurn } from './run-turn.js';
import { formatStatusText } from './status-text.js';
import { createTurnRecorder, type TurnRecord } from './turn-records.js';
import { abortMessage, createShutdownStop, type TurnStop } from './turn-stop.js';

/**
 * The one turn pipeline that the terminal, the HTTP server, the channels and the scheduler call.
 * A turn runs on its own once admitted: a caller that stops reading its stream (an HTTP client
 * that disconnected) does not stop the turn; only an abort does.
 */
export interface AssistantDeps {
  dir: string;
  config: ConfigSource;
  store: SessionStore & HistoryStore & ActivityStore & FailoverStore & RunningTurnStore;
  log: Logger;
  version: string;
  /** The slash-command table; the assistant adds its built-ins, other modules (the scheduler) add theirs. */
  commands: CommandTable;
  engine?: EngineRunner;
  apiKey?: string;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  peers?: () => PeerAssistant[];
}

export interface ChatOptions {
  sessionKey?: string;
  images?: readonly ImageInput[];
  /** `http`, a channel key, `cron`, `terminal`... (activity and metrics). */
  source?: string;
  sender?: string;
  /**
   * What the person wrote, for the activity feed, when the prompt is built around it (a group
   * turn's prompt carries the chat's recent messages); the prompt itself by default.
   */
  messageText?: string;
  /** Aborts this turn (waiting or running). */
  signal?: AbortSignal;
  /**
   * Wait for a free slot instead of failing with "Server busy" / "Too many pending requests".
   * For callers whose messages are already durable (the channel bridge, the scheduler).
   */
  waitForCapacity?: boolean;
}

export interface CommandOptions {
  sessionKey?: string;
  /** Whether /engine, /model, /cron run… may change the configuration (not from a channel). */
  allowConfigChanges?: boolean;
  source?: string;
  sender?: string;
  /** `<channel>:<userId>` of who runs it from a chat (an approval keeps it). */
  caller?: string;
}

/** A message refused before any turn ran (access control): recorded as activity like a turn. */
export interface Refusal {
  source: string;
  sender: string;
  sessionKey: string;
  /** What the person wrote. */
  message: string;
  reason: RefusalReason;
  /** Why, for the activity feed (the pairing code sent, the limit hit...). */
  detail: string;
  /** What they were told ('' when nothing was sent). */
  reply: string;
}

export interface AssistantStatus {
  name: string;
  engine: string;
  model: string;
  version: string;
  uptime: number;
  running: number;
  waiting: number;
}

export interface Assistant {
  chat(message: string, opts?: ChatOptions): AsyncIterable<StreamEvent>;
  /** A native engine command (POST /command): never sent as prompt text. */
  command(name: string, args: string | undefined, opts?: ChatOptions): AsyncIterable<StreamEvent>;
  /** A slash command; recorded as an activity event like a turn (`source`/`sender` as in ChatOptions). */
  runCommand(line: string, opts?: CommandOptions): Promise<CommandResult>;
  /** Clear the engine session and history of a key (aborting its running turn first). */
  reset(key: string): Promise<void>;
  /** Cancel the running turn of a key; true when one was running. History is kept. */
  abort(key: string): boolean;
  status(): AssistantStatus;
  onActivity(listener: (record: ActivityRecord) => void): () => void;
  recentActivity(limit: number): Promise<ActivityRecord[]>;
  metrics(): Promise<Metrics>;
  /** Record a message refused before any turn (live on onActivity, like a turn). */
  recordRefusal(refusal: Refusal): Promise<void>;
  /** Today's spending against `access.dailyBudgetUsd`. */
  budget(): Promise<BudgetState>;
  /**
   * Let running turns finish for up to `graceMs`, then abort what is left, queued turns too; their
   * completion says `Aborted: <why>` (default: the gateway is shutting down).
   */
  drain(graceMs: number, why?: string): Promise<void>;
  readonly config: ConfigSource;
  readonly engine: EngineRunner;
}

const PREVIEW = 200;
/** How long an admitted turn waits for requests sent together with it before its engine starts. */
const START_COALESCE_MS = 5;

export function createAssistant(deps: AssistantDeps): Assistant {
  const now = deps.now ?? Date.now;
  const startedAt = now();
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
      now,
    });
  const queue = createTurnQueue(() => {
    const c = deps.config.current().config;
    return { maxConcurrent: c.maxConcurrent, maxQueuePerSession: c.maxQueuePerSession };
  });
  const running = new Map<string, AbortController>();
  /** Every admitted turn, running or queued behind its key, and the stop given to all once draining. */
  const admitted = new Set<AbortController>();
  let stopping: TurnStop | undefined;
  const inFlight = new Set<Promise<unknown>>();
  const listeners = new Set<(r: ActivityRecord) => void>();

  // Idle sessions are pruned at start-up, never mid-serving; turns wait for it (none resumes a session about to go).
  const ttlDays = deps.config.current().config.sessionTtlDays;
  const pruning = deps.store.pruneSessions(now() - ttlDays * 86_400_000).then(
    (n) => n > 0 && deps.log.info(`pruned ${n} session(s) idle for more than ${ttlDays} days`),
    (err: unknown) => deps.log.error(`cannot prune idle sessions: ${(err as Error).message}`),
  );

  const recorder = createTurnRecorder(deps.store, deps.log);

  // Stored masked: the record outlives the configuration whose secrets it could echo (a reply naming a resolved ${VAR}).
  const record = async (raw: ActivityRecord) => {
    const r = maskSecretValues(raw, deps.config.current().secretValues);
    await deps.store.recordActivity(r);
    for (const l of listeners) l(r);
  };

  /** Admit, wait for the key's turn, run; the returned stream is fed by a task of its own. */
  const startTurn = (prompt: string, opts: ChatOptions, command?: { name: string; arguments?: string }): AsyncIterable<StreamEvent> => {
    const out = createAsyncQueue<StreamEvent>();
    const emit = (e: StreamEvent) => out.push(e);
    const key = opts.sessionKey ?? 'default';
    const source = opts.source ?? 'http';
    const sender = opts.sender ?? source;
    const ts = new Date(now()).toISOString();
    const log = (completion: Completion, costUsd: number, refused?: RefusalReason) => {
      const reply = completion.finalText ?? completion.message ?? '';
      return record({
        ts,
        source,
        sender,
        messagePreview: preview(command ? `/${command.name} ${command.arguments ?? ''}`.trim() : (opts.messageText ?? prompt)),
        responsePreview: preview(reply),
        durationMs: completion.durationMs ?? 0,
        costUsd,
        status: refused ? 'refused' : completion.status,
        sessionKey: key,
        ...(completion.status === 'failed' || completion.status === 'aborted' ? { error: completion.message ?? completion.status } : {}),
        ...(refused ? { refused } : {}),
        // The marker opens the answer, which may follow text written before a tool call.
        ...(/(?:^|\n\n)\s*\[ESCALATE\]/.test(completion.finalText ?? '') ? { escalated: true } : {}),
      });
    };

    const task = (async () => {
      await pruning;
      const budget = isBudgeted(source) ? await budgetNow() : undefined;
      if (budget?.reached) return log(rejectTurn(formatBudgetRefusal(budget), emit), 0, 'over_budget');
      const images = decodeImages(opts.images);
      if (!images.ok) return log(rejectTurn(images.message, emit), 0);
      const admission = opts.waitForCapacity ? await queue.admitWhenFree(key, opts.signal) : queue.admit(key);
      if (!admission.ok) {
        const message =
          admission.reason === 'busy'
            ? `Server busy: too many concurrent requests (limit: ${admission.limit}). Try again later.`
            : `Too many pending requests for this session (limit: ${admission.limit}). Try again later.`;
        return log(rejectTurn(message, emit), 0);
      }
      const ctl = new AbortController();
      admitted.add(ctl);
      let turnRecord: TurnRecord | undefined;
      const onCallerAbort = () => ctl.abort();
      opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
      if (opts.signal?.aborted) ctl.abort();
      if (stopping) ctl.abort(stopping);
      try {
        await Promise.race([admission.ticket.ready, new Promise((r) => ctl.signal.addEventListener('abort', r, { once: true }))]);
        // Starting a turn holds this thread for milliseconds (database writes, workspace files, the
        // fork of the engine). Requests sent together with this one (a burst on one key) reach us
        // over a few milliseconds: they are taken first, so every queued stream opens at once,
        // not one fork later. A few ms on a turn that takes seconds.
        await new Promise((r) => setTimeout(r, START_COALESCE_MS));
        if (ctl.signal.aborted) {
          const completion: Completion = { status: 'aborted', finalText: '', message: abortMessage(ctl.signal, 'Aborted before it started'), durationMs: 0 };
          emit({ type: 'done', durationMs: 0 });
          emit({ type: 'completion', ...completion });
          return log(completion, 0);
        }
        running.set(key, ctl);
        await deps.store.appendHistory({ key, role: 'user', text: prompt, ts: now() });
        turnRecord = recorder.begin({ sessionKey: key, source, sender, messagePreview: preview(prompt), startedAt: now() });
        const outcome = await executeTurn(
          { config: deps.config.current().config, store: deps.store, engine, imagesDir: paths.imagesDir, now },
          { key, prompt, images: images.images, ...(command ? { command } : {}), signal: ctl.signal, onProcesses: turnRecord.processes },
          emit,
        );
        const reply = outcome.completion.finalText;
        if (reply) await deps.store.appendHistory({ key, role: 'assistant', text: reply, ts: now() });
        await log(outcome.completion, outcome.costUsd);
      } finally {
        await turnRecord?.end();
        if (running.get(key) === ctl) running.delete(key);
        admitted.delete(ctl);
        opts.signal?.removeEventListener('abort', onCallerAbort);
        admission.ticket.release();
      }
    })()
      .catch((err: unknown) => {
        deps.log.error(`turn on ${key} crashed: ${(err as Error).stack ?? String(err)}`);
        if (!out.ended) rejectTurn(`internal error: ${(err as Error).message}`, emit);
      })
      .finally(() => {
        out.end();
        inFlight.delete(task);
      });
    inFlight.add(task);
    return out;
  };

  const budgetNow = () => readBudget(deps.store, deps.config.current().config.access.dailyBudgetUsd, now());

  const abort = (key: string) => {
    const ctl = running.get(key);
    if (!ctl) return false;
    ctl.abort();
    return true;
  };

  const reset = async (key: string) => {
    abort(key);
    await deps.store.deleteSession(key);
    await deps.store.clearHistory(key);
  };

  const status = (): AssistantStatus => {
    const c = deps.config.current().config;
    const q = queue.stats();
    return { name: c.name, engine: c.engine, model: c.model ?? '', version: deps.version, uptime: now() - startedAt, running: q.running, waiting: q.waiting };
  };

  for (const command of createBuiltinCommands({
    table: deps.commands,
    config: deps.config,
    skillsDir: paths.skillsDir,
    env: deps.env ?? process.env,
    listModels: () => engine.listModels(deps.config.current().config),
    reset,
    abort,
    statusText: async (key) => formatStatusText(status(), await deps.store.getSession(key), key, running.has(key)),
  })) {
    deps.commands.add(command);
  }

  return {
    config: deps.config,
    engine,
    chat(message, opts = {}) {
      const shown = (text: string) => (text.trim() === '' && opts.images?.length ? '(image)' : text);
      return startTurn(shown(message), { ...opts, ...(opts.messageText !== undefined ? { messageText: shown(opts.messageText) } : {}) });
    },
    command(name, args, opts = {}) {
      const c = deps.config.current().config;
      const def = getEngine(c.engine);
      if (!def.nativeCommands) {
        const out = createAsyncQueue<StreamEvent>();
        const completion = rejectTurn(
          `${c.engine} (${def.title}) does not support native commands; only engines with a command flag (${enginesWith('nativeCommands')}) do`,
          (e) => out.push(e),
        );
        out.end();
        void record({
          ts: new Date(now()).toISOString(),
          source: opts.source ?? 'http',
          sender: opts.sender ?? 'http',
          messagePreview: `/${name}`,
          responsePreview: completion.message ?? '',
          durationMs: 0,
          costUsd: 0,
          status: 'failed',
          sessionKey: opts.sessionKey ?? 'default',
          error: completion.message ?? '',
        }).catch((err: unknown) => deps.log.error(`cannot record activity: ${(err as Error).message}`));
        return out;
      }
      return startTurn(`/${name} ${args ?? ''}`.trim(), opts, { name, ...(args ? { arguments: args } : {}) });
    },
    async runCommand(line, opts = {}) {
      const started = now();
      const key = opts.sessionKey ?? 'default';
      const result = await deps.commands.run(line, {
        sessionKey: key,
        allowConfigChanges: opts.allowConfigChanges ?? true,
        ...(opts.caller ? { caller: opts.caller } : {}),
      });
      const source = opts.source ?? 'http';
      const failed = result.error !== undefined;
      const refused = result.error === 'not_allowed_here';
      await record({
        ts: new Date(started).toISOString(),
        source,
        sender: opts.sender ?? source,
        messagePreview: preview(line),
        responsePreview: preview(result.text),
        durationMs: now() - started,
        costUsd: 0,
        status: refused ? 'refused' : failed ? 'failed' : 'completed',
        sessionKey: key,
        ...(failed ? { error: result.text } : {}),
        ...(refused ? { refused: 'admin_only' as const } : {}),
      });
      return result;
    },
    reset,
    abort,
    status,
    onActivity(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    recentActivity: (limit) => deps.store.recentActivity(limit),
    metrics: () => deps.store.metrics(),
    recordRefusal(r) {
      return record({
        ts: new Date(now()).toISOString(),
        source: r.source,
        sender: r.sender,
        messagePreview: preview(r.message),
        responsePreview: preview(r.reply),
        durationMs: 0,
        costUsd: 0,
        status: 'refused',
        sessionKey: r.sessionKey,
        error: r.detail,
        refused: r.reason,
      });
    },
    budget: () => budgetNow(),
    async drain(graceMs, why) {
      const all = Promise.allSettled([...inFlight]);
      const timer = new Promise((r) => setTimeout(r, graceMs).unref());
      await Promise.race([all, timer]);
      stopping = createShutdownStop(why);
      for (const ctl of admitted) ctl.abort(stopping);
      queue.wakeWaiting(); // those waiting for a slot are admitted, and stopped, as slots free up
      await all;
      stopping = undefined; // an embedder may go on using the assistant
    },
  };
}

// --- internal ---

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > PREVIEW ? `${flat.slice(0, PREVIEW - 1)}…` : flat;
}
