import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ApprovalBroker, HelperEndpoint } from '../../approvals/approval-broker.js';
import type { ApprovalAsk, ApprovalVerdict } from '../../approvals/approvals.js';
import type { AgentEvent } from '../../events.js';
import { openOutbox, type Outbox } from '../../files/outbox.js';
import type { Logger } from '../../logger.js';
import type { ProcessIdentity } from '../../store/types.js';
import type { ExitInfo } from '../runner.js';
import type { EngineDefinition, EngineTurn } from '../types.js';
import type { WarmMode } from './protocol.js';
import { startResidentProcess } from './resident-process.js';
import { recordWarmProcess, type WarmRecordFile } from './warm-records.js';
import type { WarmEntry, WarmPool } from './warm-pool.js';

/**
 * A turn on the conversation's warm process: the one the pool holds when it fits, else a new one
 * (room permitting). Whatever cannot run warm runs per turn (`cold`): warm mode off, an engine or
 * turn without a resident mode, every slot busy, a process that failed to start or failed before
 * the engine took the turn, or one that ended by itself as the turn reached it. What a per-turn run gets fresh each time, a resident process gets once
 * and keeps: its outbox folder (the turn's files are moved to the turn's own outbox when it ends)
 * and, for engines that ask through a helper, one approval endpoint that asks the current turn.
 */
export interface WarmTurnRequest {
  engine: EngineDefinition;
  binary: string;
  cwd: string;
  turn: EngineTurn;
  /** The engine's environment, less the turn's own SERVICE_OUTBOX. */
  env: NodeJS.ProcessEnv;
  /** What the workspace files say (context, skills): a change means a new process. */
  workspaceStamp: string;
  conversation: string;
  outboxDir?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  onProcesses?: (processes: ProcessIdentity[]) => void;
  /** The same turn run per turn. */
  cold(): AsyncIterable<AgentEvent>;
}

export interface WarmTurnsDeps {
  pool: WarmPool;
  stateDir: string;
  outboxRoot: string;
  broker: ApprovalBroker;
  log: Logger;
  now: () => number;
  /** Settled once what an earlier owner left running was ended (no new process starts before). */
  ready: Promise<unknown>;
}

/** A pool entry with what this module keeps beside the process. */
interface Held extends WarmEntry {
  /** The program it runs (a resident mode that does not work is remembered per program). */
  binary: string;
  /** Turns the engine took (answered or started to): a process that ends after one did not stay. */
  served: number;
  outbox: Outbox;
  /** The current turn's way to ask the person (the helper endpoint asks through it). */
  asking: { ask?: (request: ApprovalAsk) => Promise<ApprovalVerdict> };
}

/** Resident processes of one program that ended by themselves after one turn, in a row, before it runs per turn. */
const QUITS_BEFORE_PER_TURN = 2;

export function createWarmTurns(deps: WarmTurnsDeps) {
  /** Programs whose resident mode failed to start or does not stay: per turn until the configuration changes. */
  const failed = new Set<string>();
  /** Per program: its resident processes in a row that ended by themselves after their first turn. */
  const quits = new Map<string, number>();
  return {
    /** The turn's events, warm where it can be, per turn where not. */
    run(req: WarmTurnRequest): AsyncIterable<AgentEvent> {
      const warm = req.engine.warm;
      const settings = deps.pool.settings();
      if (!warm || !settings.enabled || settings.maxProcesses < 1 || warm.accepts?.(req.turn) === false) return req.cold();
      if (failed.has(req.binary)) return req.cold();
      return runWarm(deps, req, warm, {
        failedToStart: () => failed.add(req.binary),
        stayed: () => quits.delete(req.binary),
      });
    },
    /**
     * A process ended without being stopped. One that exits cleanly after a single turn each time
     * (an engine, or a wrapper, that ignores the resident mode's input) would cost a start per turn
     * plus a resident start: after two in a row its program runs per turn.
     */
    endedByItself(entry: WarmEntry, exit: ExitInfo): void {
      const { binary, served } = entry as Held;
      if (exit.code !== 0 || served > 1) return void quits.delete(binary);
      const n = (quits.get(binary) ?? 0) + 1;
      quits.set(binary, n);
      if (n < QUITS_BEFORE_PER_TURN || failed.has(binary)) return;
      failed.add(binary);
      deps.log.info(`warm ${entry.engine} processes end by themselves after each turn (${n} in a row); its turns run per turn until the configuration changes`);
    },
    /** The configuration changed: a resident mode that failed may start now. */
    forgetFailures: () => {
      failed.clear();
      quits.clear();
    },
  };
}

// --- internal ---

/** Events that say nothing about whether the engine took the turn: held until one that does. */
const PRELUDE = new Set<AgentEvent['type']>(['session', 'warning', 'usage']);

interface WarmMarks {
  failedToStart(): void;
  /** A process took its second turn: the program's resident mode stays. */
  stayed(): void;
}

async function* runWarm(deps: WarmTurnsDeps, req: WarmTurnRequest, warm: WarmMode, marks: WarmMarks): AsyncIterable<AgentEvent> {
  const helperShape = usesHelper(req) ? { url: '', token: '' } : undefined;
  // Without the session: that is the conversation's, matched apart (a resumed start names it).
  const { sessionId: _session, ...unresumed } = req.turn;
  const fingerprint = fingerprintOf(req, warm.buildInvocation(withHelper(unresumed, helperShape)));
  let entry = deps.pool.checkout(req.conversation, fingerprint, req.turn.sessionId) as Held | undefined;
  if (!entry) {
    if (req.turn.sessionId && warm.resumes === false) return yield* req.cold();
    if (!deps.pool.makeRoom(req.conversation)) return yield* req.cold();
    const started = await startEntry(deps, req, warm, fingerprint);
    if ('error' in started) {
      marks.failedToStart();
      deps.log.info(`could not start a warm ${req.engine.id} process (${started.error}); this turn runs per turn`);
      return yield* req.cold();
    }
    entry = started;
    deps.pool.add(entry);
  }
  entry.turns++;
  entry.asking.ask = req.turn.approvals?.ask;
  clearFolder(entry.outbox.dir); // what an aborted turn left there is not the next turn's
  req.onProcesses?.(entry.process.processes());
  const held: AgentEvent[] = [];
  let took = false;
  let fallBack: string | undefined;
  try {
    for await (const e of entry.process.runTurn(req.turn, { timeoutMs: req.timeoutMs, ...(req.signal ? { signal: req.signal } : {}) })) {
      if (e.type === 'session') entry.sessionId = e.sessionId;
      if (!took && e.type === 'error' && !entry.process.everReady() && !req.signal?.aborted) {
        fallBack = 'it failed before taking a turn';
        marks.failedToStart();
        deps.log.info(
          `the warm ${req.engine.id} process failed before it took the turn (${e.message}); this turn runs per turn, and so do the next ones until the configuration changes`,
        );
        break;
      }
      if (!took && endedUnasked(e) && !req.signal?.aborted) {
        fallBack = 'it ended by itself';
        deps.log.info(`the warm ${req.engine.id} process ended by itself before it took the turn (${e.message}); this turn runs per turn`);
        break;
      }
      if (!took && PRELUDE.has(e.type)) {
        held.push(e);
        continue;
      }
      if (!took) {
        took = true;
        if (++entry.served === 2) marks.stayed();
        yield* held;
      }
      yield e;
    }
  } finally {
    moveFiles(entry.outbox.dir, req.outboxDir);
    entry.asking.ask = undefined;
    if (fallBack) deps.pool.retire(entry, fallBack);
    else deps.pool.checkin(entry);
  }
  if (fallBack) yield* req.cold();
}

/**
 * The process had ended, or ended cleanly without a word, as the turn reached it: an engine that
 * was on its way out (it exits after a turn, or stdin closed), not one that crashed on the prompt.
 * The turn never reached the engine, so it runs per turn; a crash (another exit code, a signal)
 * fails the turn with its own error instead.
 */
const endedUnasked = (e: AgentEvent): e is Extract<AgentEvent, { type: 'error' }> => e.type === 'error' && (e.code === 'spawn_failed' || e.exitCode === 0);

async function startEntry(deps: WarmTurnsDeps, req: WarmTurnRequest, warm: WarmMode, fingerprint: string): Promise<Held | { error: string }> {
  await deps.ready;
  const asking: Held['asking'] = {};
  const denied = async (): Promise<ApprovalVerdict> => ({ allow: false, message: 'no turn is running to ask in' });
  let helper: (HelperEndpoint & { close(): void }) | undefined;
  let outbox: Outbox | undefined;
  try {
    helper = usesHelper(req) ? await deps.broker.open((r) => (asking.ask ? asking.ask(r) : denied())) : undefined;
    outbox = openOutbox(deps.outboxRoot);
  } catch (err) {
    helper?.close();
    return { error: (err as Error).message };
  }
  const start = withHelper(req.turn, helper && { url: helper.url, token: helper.token });
  const invocation = warm.buildInvocation(start);
  const env: NodeJS.ProcessEnv = { ...req.env, SERVICE_OUTBOX: outbox.dir };
  for (const [k, v] of Object.entries(invocation.env)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  let record: WarmRecordFile | undefined;
  const started = await startResidentProcess(
    { binary: req.binary, args: invocation.args, cwd: req.cwd, env, onProcesses: (p) => record?.update(p) },
    warm.createProtocol(start),
  );
  if (!started.ok) {
    helper?.close();
    outbox.remove();
    return { error: started.message };
  }
  const t = deps.now();
  const kept = { engine: req.engine.id, sessionKey: req.conversation, startedAt: t };
  record = recordWarmProcess(deps.stateDir, { ...kept, processes: started.process.processes() });
  deps.log.info(`warm ${req.engine.id} process ${started.process.pid} started for "${req.conversation}"`);
  const ownOutbox = outbox;
  return {
    key: req.conversation,
    engine: req.engine.id,
    binary: req.binary,
    served: 0,
    fingerprint,
    process: started.process,
    startedAt: t,
    sessionId: req.turn.sessionId,
    busy: true,
    lastUsed: t,
    turns: 0,
    retiring: undefined,
    outbox: ownOutbox,
    asking,
    release() {
      helper?.close();
      ownOutbox.remove();
      record?.remove();
    },
  };
}

const usesHelper = (req: WarmTurnRequest) => req.engine.approvals === 'helper' && !req.turn.config.skipPermissions && req.turn.approvals !== undefined;

function withHelper(turn: EngineTurn, helper: HelperEndpoint | undefined): EngineTurn {
  if (!turn.approvals) return turn;
  const { helper: _per, ...approvals } = turn.approvals;
  return { ...turn, approvals: { ...approvals, ...(helper ? { helper } : {}) } };
}

/** How the process would be started for this turn: its argv and environment, and the workspace files it reads. */
function fingerprintOf(req: WarmTurnRequest, invocation: { args: string[]; env: Record<string, string | undefined> }): string {
  const env = Object.entries(req.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const parts = { engine: req.engine.id, binary: req.binary, args: invocation.args, own: invocation.env, env, workspace: req.workspaceStamp };
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

function clearFolder(dir: string): void {
  for (const name of safeList(dir)) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
}

/** The turn's files, from the process's outbox into the turn's own (where the turn collects them). */
function moveFiles(from: string, to: string | undefined): void {
  for (const name of safeList(from)) {
    const source = path.join(from, name);
    try {
      if (to) fs.renameSync(source, path.join(to, name));
      else fs.rmSync(source, { recursive: true, force: true });
    } catch {
      fs.rmSync(source, { recursive: true, force: true });
    }
  }
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
