import { formatBudgetRefusal, isBudgeted, readBudget } from '../access/budget.js';
import { createBudgetGuard } from '../access/budget-holds.js';
import { createApprovalCommands } from '../approvals/approval-commands.js';
import { createApprovals, type TurnApprovals } from '../approvals/approvals.js';
import { maskSecretValues } from '../config/secrets.js';
import type { ConfigSource } from '../config/source.js';
import type { PeerAssistant } from '../engines/context.js';
import { describeMissingEngine } from '../engines/detect.js';
import { enginesWith, getEngine } from '../engines/registry.js';
import type { EngineApiAccess } from '../engines/engine-env.js';
import { mentionsControlFile, PROTECTED_PATHS } from '../guard/control-files.js';
import type { ControlGuard } from '../guard/control-guard.js';
import { createEngineRunner, type EngineRunner } from '../engines/engine-runner.js';
import type { Completion, StreamEvent } from '../events.js';
import type { Logger } from '../logger.js';
import { resolveAssistantPaths } from '../paths.js';
import { createTurnQueue, formatAdmissionRefusal } from '../queue/turn-queue.js';
import { decodeFiles, promptWithFiles, saveIncomingFiles } from '../files/incoming.js';
import { removeStaleOutboxes } from '../files/outbox.js';
import { createSentFiles } from '../files/sent-files.js';
import type {
  ActivityRecord,
  ActivityStore,
  BudgetStore,
  ChatSessionStore,
  CoordinationStore,
  FailoverStore,
  HistoryStore,
  RefusalReason,
  RunningTurnStore,
  SessionStore,
} from '../store/types.js';
import { createKeyedOrder } from '../util/keyed-order.js';
import { pruneIdleSessions } from './prune-sessions.js';
import { createAsyncQueue } from '../util/async-queue.js';
import { formatCommandRecord, formatPreview, formatRefusalRecord, formatTurnRecord } from './activity-records.js';
import { createBuiltinCommands } from './builtin-commands.js';
import { createChatSessions } from './chat-sessions.js';
import { createSessionCommands } from './session-commands.js';
import type { CommandTable } from './slash-commands.js';
import { decodeImages } from './images.js';
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
}

import { type AssistantStatus, type ChatOptions, type CommandOptions, type Refusal, startedByAdmin } from './turn-options.js';

export type { AssistantStatus, ChatOptions, CommandOptions, Refusal };
export type { Assistant } from './assistant-api.js';
import type { Assistant } from './assistant-api.js';

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
      ...(deps.engineApi ? { engineApi: deps.engineApi } : {}),
      now,
    });
  const queue = createTurnQueue(() => {
    const c = deps.config.current().config;
    return { maxConcurrent: c.maxConcurrent, maxQueuePerSession: c.maxQueuePerSession, maxTurnsPerPerson: c.maxTurnsPerPerson };
  });
  const running = new Map<string, AbortController>();
  /** Every admitted turn, running or queued behind its key, and the stop given to all once draining. */
  const admitted = new Set<AbortController>();
  let stopping: TurnStop | undefined;
  const inFlight = new Set<Promise<unknown>>();
  const listeners = new Set<(r: ActivityRecord) => void>();

  const pruning = pruneIdleSessions(deps.store, deps.config.current().config.sessionTtlDays, now(), deps.log);
  const inOrder = createKeyedOrder();
  const recorder = createTurnRecorder(deps.store, deps.log);
  const sentFiles = createSentFiles({ dir: paths.sentFilesDir, now });
  sentFiles.prune();
  removeStaleOutboxes(paths.outboxDir, now() - 86_400_000);
  const approvals = createApprovals({
    timeoutMs: () => deps.config.current().config.approvalTimeoutSeconds * 1000,
    mask: (text) => maskSecretValues(text, deps.config.current().secretValues),
    touchesControlFiles: mentionsControlFile,
  });

  // Stored masked: the record outlives the configuration whose secrets it could echo (a reply naming a resolved ${VAR}).
  const record = async (raw: ActivityRecord) => {
    const r = maskSecretValues(raw, deps.config.current().secretValues);
    await deps.store.recordActivity(r);
    for (const l of listeners) l(r);
  };

  /** Admit, wait for the key's turn, run (`refusal`: refused before anything); the stream is fed by a task of its own. */
  const startTurn = (prompt: string, opts: ChatOptions, command?: { name: string; arguments?: string }, refusal?: string): AsyncIterable<StreamEvent> => {
    const out = createAsyncQueue<StreamEvent>();
    const emit = (e: StreamEvent) => out.push(e);
    let key = opts.sessionKey ?? 'default';
    const source = opts.source ?? 'http';
    const sender = opts.sender ?? source;
    const ts = new Date(now()).toISOString();
    const message = command ? `/${command.name} ${command.arguments ?? ''}`.trim() : (opts.messageText ?? prompt);
    const byAdmin = startedByAdmin(opts);
    const log = (completion: Completion, costUsd: number, refused?: RefusalReason) =>
      record(formatTurnRecord({ ts, source, sender, message, sessionKey: key, completion, costUsd, ...(refused ? { refused } : {}) }));

    const task = (async () => {
      if (refusal) return log(rejectTurn(refusal, emit), 0);
      const images = decodeImages(opts.images);
      if (!images.ok) return log(rejectTurn(images.message, emit), 0);
      const files = decodeFiles(opts.files);
      if (!files.ok) return log(rejectTurn(files.message, emit), 0);
      // Admitted in call order per chat (or key), though the store reads on the way may finish in any order.
      const pre = await inOrder(opts.chatKey ?? key, async () => {
        await pruning;
        if (opts.chatKey !== undefined) key = await sessions.resolve(opts.chatKey);
        const budget = budgeted(source) ? await budgetNow() : undefined;
        if (budget?.reached) return { spent: true as const, budget };
        // A member's turns count against maxTurnsPerPerson; an admin's and the owner's do not.
        const person = byAdmin ? undefined : opts.caller;
        return {
          spent: false as const,
          admitting: opts.waitForCapacity ? queue.admitWhenFree(key, opts.signal, person) : Promise.resolve(queue.admit(key, person)),
        };
      });
      if (pre.spent) return log(rejectTurn(formatBudgetRefusal(pre.budget), emit), 0, 'over_budget');
      const admission = await pre.admitting;
      if (!admission.ok) return log(rejectTurn(formatAdmissionRefusal(admission), emit), 0);
      const ctl = new AbortController();
      admitted.add(ctl);
      let turnRecord: TurnRecord | undefined;
      let turnApprovals: TurnApprovals | undefined;
      let guarded: ReturnType<ControlGuard['begin']> | undefined;
      let unlockKey: (() => Promise<void>) | undefined;
      let releaseHold: ((costUsd?: number) => Promise<void>) | undefined;
      const onCallerAbort = () => ctl.abort();
      opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
      if (opts.signal?.aborted) ctl.abort();
      if (stopping) ctl.abort(stopping);
      try {
        await Promise.race([admission.ticket.ready, new Promise((r) => ctl.signal.addEventListener('abort', r, { once: true }))]);
        // This gateway's lane is free; another gateway of the assistant (a second host on the
        // same store) may still be running this key: its turn ends first.
        if (deps.keyLocks && !ctl.signal.aborted) {
          const locked = await deps.keyLocks.lockSessionKey(key, ctl.signal).then(
            (unlock) => ({ unlock }),
            (err: unknown) => ({ error: err as Error }),
          );
          if ('unlock' in locked) unlockKey = locked.unlock;
          else if (!ctl.signal.aborted)
            return log(rejectTurn(`cannot take session ${key} from the assistant's other gateways: ${locked.error.message}`, emit), 0);
        }
        // The budget once more, now that the turn starts: turns queued together were all let in
        // while the day had room; each holds its share while it runs (budget-holds.ts).
        const held = budgeted(source) && !ctl.signal.aborted ? await budgetGuard.hold(ctl.signal) : undefined;
        if (held?.status === 'spent') return log(rejectTurn(formatBudgetRefusal(held.budget), emit), 0, 'over_budget');
        if (held?.status === 'held') releaseHold = held.release;
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
        const resetsAtStart = resetsOf(key);
        const overtaken = () => resetsOf(key) !== resetsAtStart;
        const full = promptWithFiles(prompt, saveIncomingFiles(paths.dir, files.files, now()));
        await deps.store.appendHistory({ key, role: 'user', text: full, ts: now() });
        turnRecord = recorder.begin({ sessionKey: key, source, sender, messagePreview: formatPreview(prompt), startedAt: now() });
        if (!byAdmin) guarded = deps.guard?.begin(sender);
        turnApprovals = approvals.openTurn({
          sessionKey: key,
          ...(opts.caller ? { requester: opts.caller } : {}),
          startedByAdmin: byAdmin,
          canAsk: opts.askApprovals !== false,
          emit: (request) => emit({ type: 'approval_request', ...request }),
          signal: ctl.signal,
        });
        const outcome = await executeTurn(
          { config: deps.config.current().config, store: deps.store, engine, imagesDir: paths.imagesDir, outboxDir: paths.outboxDir, sentFiles, now },
          {
            key,
            prompt: full,
            images: images.images,
            ...(command ? { command } : {}),
            signal: ctl.signal,
            onProcesses: turnRecord.processes,
            askApproval: turnApprovals.ask,
            overtaken,
            ...(guarded ? { afterEngine: guarded.end, protectedPaths: PROTECTED_PATHS } : {}),
          },
          emit,
        );
        const reply = outcome.completion.finalText;
        if (reply && !overtaken()) await deps.store.appendHistory({ key, role: 'assistant', text: reply, ts: now() });
        await log(outcome.completion, outcome.costUsd);
        // Its cost is counted now (the record above): the hold can go.
        await releaseHold?.(outcome.costUsd);
        releaseHold = undefined;
      } finally {
        await releaseHold?.();
        turnApprovals?.close();
        await guarded?.end();
        await turnRecord?.end();
        if (running.get(key) === ctl) running.delete(key);
        admitted.delete(ctl);
        opts.signal?.removeEventListener('abort', onCallerAbort);
        await unlockKey?.();
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
  // Without a cap (0) nothing is refused or held: today's spending is not read for nothing.
  const budgeted = (source: string) => isBudgeted(source) && deps.config.current().config.access.dailyBudgetUsd > 0;
  const budgetGuard = createBudgetGuard({ store: deps.store, config: deps.config, now });

  const abort = (key: string) => {
    const ctl = running.get(key);
    if (!ctl) return false;
    ctl.abort();
    return true;
  };

  // A turn that a reset overtook (its key was reset while it ran) keeps neither its engine session
  // nor its reply: saved after the reset, they would bring back what the user just cleared.
  const resets = new Map<string, number>();
  const resetsOf = (key: string) => resets.get(key) ?? 0;
  const reset = async (key: string) => {
    resets.set(key, resetsOf(key) + 1);
    abort(key);
    approvals.forget(key);
    await deps.store.deleteSession(key);
    await deps.store.clearHistory(key);
  };

  const status = (): AssistantStatus => {
    const c = deps.config.current().config;
    const q = queue.stats();
    return { name: c.name, engine: c.engine, model: c.model ?? '', version: deps.version, uptime: now() - startedAt, running: q.running, waiting: q.waiting };
  };

  const sessions = createChatSessions({ store: deps.store, reset, now });
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
  for (const command of createSessionCommands(sessions, now)) deps.commands.add(command);
  for (const command of createApprovalCommands(approvals)) deps.commands.add(command);

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
      return startTurn(shown(message), { ...opts, ...(opts.messageText !== undefined ? { messageText: shown(opts.messageText) } : {}) });
    },
    command(name, args, opts = {}) {
      const c = deps.config.current().config;
      const def = getEngine(c.engine);
      const refusal = def.nativeCommands
        ? undefined
        : `${c.engine} (${def.title}) does not support native commands; only engines with a command flag do: ${enginesWith('nativeCommands')}`;
      return startTurn(`/${name} ${args ?? ''}`.trim(), opts, { name, ...(args ? { arguments: args } : {}) }, refusal);
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
      await record(formatCommandRecord(line, result, { source, sender: opts.sender ?? source, sessionKey: key, started, ended: now() }));
      return result;
    },
    reset,
    abort,
    answerApproval: (answer) => approvals.answer(answer),
    runsAtOnce: (line) => deps.commands.runsAtOnce(line),
    status,
    onActivity(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    recentActivity: (limit) => deps.store.recentActivity(limit),
    metrics: () => deps.store.metrics(),
    recordRefusal: (r) => record(formatRefusalRecord(r, new Date(now()).toISOString())),
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
