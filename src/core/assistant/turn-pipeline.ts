import { formatBudgetRefusal } from '../access/budget.js';
import type { Approvals } from '../approvals/approvals.js';
import type { ConfigSource } from '../config/source.js';
import type { EngineRunner } from '../engines/engine-runner.js';
import type { StreamEvent } from '../events.js';
import type { SentFiles } from '../files/sent-files.js';
import { PROTECTED_PATHS } from '../guard/control-files.js';
import type { ControlGuard } from '../guard/control-guard.js';
import type { Logger } from '../logger.js';
import type { AssistantPaths } from '../paths.js';
import type { ActivityRecord, CoordinationStore, HistoryStore, SessionStore } from '../store/types.js';
import { createAsyncQueue } from '../util/async-queue.js';
import { formatPreview } from './activity-records.js';
import type { TurnRecorder } from './running-turns.js';
import { type AdmitDeps, admitTurn } from './turn-admission.js';
import type { TurnBudget } from './turn-budget.js';
import { enterLane } from './turn-lane.js';
import { startedByAdmin, type ChatOptions } from './turn-options.js';
import { abortBeforeStart, createTurnLog, recordReply, rejectTurn, type TurnFacts, type TurnLog } from './turn-record.js';
import type { TurnReport, TurnReports } from './turn-report.js';
import { runEngine } from './turn-run.js';
import { streamReply } from './turn-stream.js';
import type { TurnTable } from './turn-table.js';
import { prepareWorkspace } from './turn-workspace.js';

/**
 * A turn from the caller's message to its last event, as named steps (docs/architecture.md,
 * "A turn, step by step"):
 *
 *   admit → queue → prepare the workspace → run → stream → record → release
 *
 * Each step that takes a resource hands it back as a disposable, declared with `using` where it
 * is taken, so it is released when the turn ends however it ends (a refusal, an abort, a throw),
 * in the reverse order of taking: nothing is released by hand at the end. A turn runs on its own
 * once admitted: a caller that stops reading its stream (an HTTP client that disconnected) does
 * not stop it; only an abort does.
 */
export interface TurnPipelineDeps extends Omit<AdmitDeps, 'budget'> {
  config: ConfigSource;
  store: SessionStore & HistoryStore;
  log: Logger;
  now: () => number;
  paths: Pick<AssistantPaths, 'dir' | 'imagesDir' | 'outboxDir'>;
  /** The run step's seam: the engine runner (a pool of warm engines can sit behind it). */
  engine: EngineRunner;
  sentFiles: SentFiles;
  budget: TurnBudget;
  table: TurnTable;
  approvals: Pick<Approvals, 'openTurn'>;
  recorder: TurnRecorder;
  /** Writes an activity record (masked) and tells the listeners. */
  record(activity: ActivityRecord): Promise<void>;
  /** With a store shared by several gateways of the assistant: a key runs on one of them at a time. */
  keyLocks?: Pick<CoordinationStore, 'lockSessionKey'>;
  /** Undoes what a turn a non-admin started changed of the assistant's own files and grants. */
  guard?: ControlGuard;
  /** Each turn's log line and live metrics (outcome, timing, cost, engine processes). */
  reports: TurnReports;
}

/** A turn as asked for: a chat message, or a native command (`refusal`: refused before anything). */
export interface TurnRequest {
  prompt: string;
  opts: ChatOptions;
  command?: { name: string; arguments?: string };
  refusal?: string;
}

export interface TurnPipeline {
  start(request: TurnRequest): AsyncIterable<StreamEvent>;
  /** Let the turns going on finish for up to `graceMs`, then abort what is left, queued turns too. */
  drain(graceMs: number, why?: string): Promise<void>;
}

/** How long an admitted turn waits for requests sent together with it before its engine starts. */
const START_COALESCE_MS = 5;

export function createTurnPipeline(deps: TurnPipelineDeps): TurnPipeline {
  const inFlight = new Set<Promise<unknown>>();

  /** The steps, in order; each `using` is a resource the turn holds until it ends. */
  async function runTurn(request: TurnRequest, facts: TurnFacts, log: TurnLog, report: TurnReport, emit: (e: StreamEvent) => void): Promise<void> {
    const { opts } = request;
    const byAdmin = startedByAdmin(opts);
    // admit (a member's turns count against maxTurnsPerPerson; an admin's and the owner's do not)
    const admitted = await admitTurn(deps, { opts, source: facts.source, person: byAdmin ? undefined : opts.caller, refusal: request.refusal });
    if (!admitted.ok) return log(admitted.key, rejectTurn(admitted.message, emit), 0, admitted.reason);
    const { key } = admitted;
    using _ticket = admitted.ticket;
    using control = deps.table.control(opts.signal);
    // queue
    const lane = await enterLane(admitted.ticket, key, control.signal, deps.keyLocks);
    if (!lane.ok) return log(key, rejectTurn(lane.message, emit), 0);
    await using _keyLock = lane.lock;
    // The budget once more, now that the turn starts: turns queued together were all let in
    // while the day had room; each holds its share while it runs (budget-holds.ts).
    const held = await deps.budget.hold(facts.source, control.signal);
    if (!held.ok) return log(key, rejectTurn(formatBudgetRefusal(held.budget), emit), 0, 'over_budget');
    await using hold = held.hold;
    await coalesce();
    if (control.signal.aborted) return log(key, abortBeforeStart(control.signal, emit), 0);
    using _running = deps.table.runOn(key, control);
    const overtaken = deps.table.overtakenFrom(key);
    // prepare the workspace
    const prepared = prepareWorkspace(deps.paths, { prompt: request.prompt, images: admitted.images, files: admitted.files }, deps.now());
    if (!prepared.ok) return log(key, rejectTurn(prepared.message, emit), 0);
    using workspace = prepared.workspace;
    await deps.store.appendHistory({ key, role: 'user', text: workspace.prompt, ts: deps.now() });
    const { source, sender } = facts;
    await using turnRecord = deps.recorder.begin({ sessionKey: key, source, sender, messagePreview: formatPreview(request.prompt), startedAt: deps.now() });
    await using guardWindow = byAdmin ? undefined : openGuardWindow(deps.guard, facts.sender);
    using approvals = openApprovals(deps.approvals, { key, opts, byAdmin, signal: control.signal, emit });
    // run
    const config = deps.config.current().config;
    const started = deps.now();
    report.started();
    const run = await runEngine(
      { config, store: deps.store, engine: deps.engine, now: deps.now },
      {
        key,
        prompt: workspace.prompt,
        images: workspace.images,
        outboxDir: workspace.outbox.dir,
        command: request.command,
        signal: control.signal,
        onProcesses: report.counting(turnRecord.processes),
        askApproval: approvals.ask,
        overtaken,
        ...(guardWindow ? { protectedPaths: PROTECTED_PATHS } : {}),
      },
    );
    // stream
    const end = { started, now: deps.now, signal: control.signal, session: run.session, outbox: workspace.outbox, sentFiles: deps.sentFiles };
    const outcome = await streamReply(run.events, { ...end, ...(guardWindow ? { afterEngine: guardWindow.end } : {}) }, emit);
    // record
    await recordReply(deps, { key, log, overtaken, hold }, outcome);
    // release: every `using` above, in reverse order, as this function returns
  }

  return {
    start(request) {
      const out = createAsyncQueue<StreamEvent>();
      let completed = false;
      const report = deps.reports.begin();
      const emit = report.timing((e: StreamEvent) => {
        completed ||= e.type === 'completion';
        out.push(e);
      });
      const { opts, command } = request;
      const source = opts.source ?? 'http';
      const facts: TurnFacts = {
        ts: new Date(deps.now()).toISOString(),
        source,
        sender: opts.sender ?? source,
        message: command ? `/${command.name} ${command.arguments ?? ''}`.trim() : (opts.messageText ?? request.prompt),
      };
      const task = runTurn(request, facts, createTurnLog(deps.record, facts, report), report, emit)
        .catch((err: unknown) => {
          deps.log.error(`turn on ${opts.chatKey ?? opts.sessionKey ?? 'default'} crashed: ${(err as Error).stack ?? String(err)}`);
          // A turn that has told its end (a release that failed after it) gets no second completion.
          if (!completed) rejectTurn(`internal error: ${(err as Error).message}`, emit);
        })
        .finally(() => {
          out.end();
          inFlight.delete(task);
        });
      inFlight.add(task);
      return out;
    },
    async drain(graceMs, why) {
      const all = Promise.allSettled([...inFlight]);
      const timer = new Promise((r) => setTimeout(r, graceMs).unref());
      await Promise.race([all, timer]);
      deps.table.stopAll(why);
      deps.queue.wakeWaiting(); // those waiting for a slot are admitted, and stopped, as slots free up
      await all;
      deps.table.resume(); // an embedder may go on using the assistant
    },
  };
}

// --- internal ---

/**
 * Starting a turn holds this thread for milliseconds (database writes, workspace files, the fork
 * of the engine). Requests sent together with this one (a burst on one key) reach us over a few
 * milliseconds: they are taken first, so every queued stream opens at once, not one fork later.
 * A few ms on a turn that takes seconds. Then once through the loop's I/O phase: on a busy
 * machine the wait can end before requests already sent are read.
 */
const coalesce = () => new Promise((r) => setTimeout(() => setImmediate(r), START_COALESCE_MS));

/** The control-file guard's window for a turn a non-admin started: its check runs once the engine exited, and at the latest when the turn ends. */
function openGuardWindow(guard: ControlGuard | undefined, who: string): (AsyncDisposable & { end(): Promise<string | undefined> }) | undefined {
  const window = guard?.begin(who);
  if (!window) return undefined;
  return { end: () => window.end(), [Symbol.asyncDispose]: async () => void (await window.end()) };
}

/** The turn's approvals: a request reaches its stream as `approval_request`; closing denies what still waits. */
function openApprovals(
  approvals: Pick<Approvals, 'openTurn'>,
  turn: { key: string; opts: ChatOptions; byAdmin: boolean; signal: AbortSignal; emit: (e: StreamEvent) => void },
): Disposable & { ask: ReturnType<Approvals['openTurn']>['ask'] } {
  const opened = approvals.openTurn({
    sessionKey: turn.key,
    ...(turn.opts.caller ? { requester: turn.opts.caller } : {}),
    startedByAdmin: turn.byAdmin,
    canAsk: turn.opts.askApprovals !== false,
    emit: (request) => turn.emit({ type: 'approval_request', ...request }),
    signal: turn.signal,
  });
  return { ask: opened.ask, [Symbol.dispose]: () => opened.close() };
}
