import { createHash } from 'node:crypto';
import os from 'node:os';
import { type ApprovalBroker, createApprovalBroker, type HelperEndpoint } from '../approvals/approval-broker.js';
import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { ServiceConfig } from '../config/schema.js';
import type { AgentEvent } from '../events.js';
import type { Logger } from '../logger.js';
import { createSkillScanner, type Skill } from '../skills/skills.js';
import { renderAssistantContext, type PeerAssistant } from './context.js';
import { describeMissingEngine, type EngineLocation, locateEngine } from './detect.js';
import { buildEngineEnv, type EngineApiAccess } from './engine-env.js';
import type { FailoverStore, ProcessIdentity } from '../store/types.js';
import { chooseEndpoint, recordOutcome } from './failover.js';
import { enginesWith, getEngine } from './registry.js';
import type { Clock } from '../util/clock.js';
import { runProcess } from './runner.js';
import { createWarmEngines, type WarmControl } from './warm/warm-engines.js';
import type { EngineDefinition, EngineTurn, ModelListing, ProviderEndpoint } from './types.js';

/**
 * One engine turn, as the chat core asks for it: prepare the workspace (context file, skill
 * links, engine config), pick the provider endpoint, run the engine, and when a resume fails
 * because the engine does not know the session, run once more without it.
 */
export interface EngineRunnerDeps {
  dir: string;
  stateDir: string;
  skillsDir: string;
  log: Logger;
  failover: FailoverStore;
  env?: NodeJS.ProcessEnv;
  apiKey?: string;
  peers?: () => PeerAssistant[];
  now?: () => number;
  /** Where helper processes ask for approvals (one per assistant; made here when not given). */
  approvalBroker?: ApprovalBroker;
  /** Under a gateway: SERVICE_URL and the engine's own token (engine-env.ts); the gateway's credentials are never passed. */
  engineApi?: EngineApiAccess;
  /** The warm processes' idle timers (tests move it by hand). */
  clock?: Clock;
}

export interface EngineTurnRequest {
  config: ServiceConfig;
  prompt: string;
  sessionId?: string;
  images?: readonly string[];
  /** This turn's outbox folder: the engine finds it in SERVICE_OUTBOX (see the file-transfer skill). */
  outboxDir?: string;
  command?: { name: string; arguments?: string };
  signal?: AbortSignal;
  /** Every process of the run, as they appear (recorded so a restart can reap them after a kill). */
  onProcesses?: (processes: ProcessIdentity[]) => void;
  /** Ask the person before a tool runs (skipPermissions false); without it such tools are refused. */
  askApproval?: (request: ApprovalAsk) => Promise<ApprovalVerdict>;
  /** The assistant's own files, out of this turn's reach (a non-admin started it): see EngineTurn. */
  protectedPaths?: readonly string[];
  /** The conversation (session key) the turn belongs to: its warm engine process, if any, takes it. */
  conversation?: string;
}

export interface EngineRunner {
  run(req: EngineTurnRequest): AsyncIterable<AgentEvent>;
  listModels(config: ServiceConfig): Promise<ModelListing>;
  /** Write the context file and engine files without running a turn (start-up, config changes). */
  prepare(config: ServiceConfig): Skill[];
  /** Where a turn would find the engine's program (this runner's PATH), or why it cannot, with the fix. */
  locate(config: ServiceConfig): EngineLocation;
  /** The engine processes kept between turns (warm/). */
  readonly warm: WarmControl;
}

export function createEngineRunner(deps: EngineRunnerDeps): EngineRunner {
  const env = deps.env ?? process.env;
  const now = deps.now ?? Date.now;
  const warnedPermissions = new Set<string>();
  const broker = deps.approvalBroker ?? createApprovalBroker();
  const scanSkills = createSkillScanner(now);
  const warm = createWarmEngines({ stateDir: deps.stateDir, log: deps.log, broker, now, ...(deps.clock ? { clock: deps.clock } : {}) });

  /** The workspace files written for this config; the stamp changes when what they say does. */
  const prepareFiles = (config: ServiceConfig): { skills: Skill[]; stamp: string } => {
    const engine = getEngine(config.engine);
    const skills = scanSkills(deps.skillsDir).skills;
    const context = renderAssistantContext({ config, skills, skillPath: (s) => `skills/${s.name}`, peers: deps.peers?.() ?? [] });
    engine.prepareWorkspace({ dir: deps.dir, stateDir: deps.stateDir, config, skills, context, log: deps.log });
    if (config.permissions && !engine.honoursPermissions && !warnedPermissions.has(engine.id)) {
      warnedPermissions.add(engine.id);
      deps.log.warn(`permissions are enforced for ${enginesWith('honoursPermissions')} only; ${engine.id} ignores them`);
    }
    return { skills, stamp: stampOf([context, skills.map((s) => [s.name, s.description, s.dir])]) };
  };

  async function* run(req: EngineTurnRequest): AsyncIterable<AgentEvent> {
    const engine = getEngine(req.config.engine);
    const located = locateEngine(engine, env.PATH, { config: req.config, dir: deps.dir });
    if (!located.found) {
      yield { type: 'error', code: 'spawn_failed', message: describeMissingEngine(located), kind: 'engine' };
      return;
    }
    let stamp: string;
    try {
      stamp = prepareFiles(req.config).stamp;
    } catch (err) {
      yield { type: 'error', code: 'spawn_failed', message: `could not prepare the workspace: ${(err as Error).message}`, kind: 'engine' };
      return;
    }
    warm.configure(req.config);
    const chosen = await chooseEndpoint(req.config.provider, deps.failover, now());
    // Chat approvals: a helper process asks over a loopback endpoint, opened when a per-turn run needs it.
    const asks = !req.config.skipPermissions && req.askApproval && engine.approvals ? req.askApproval : undefined;
    const helper = openHelperLazily(broker, asks);
    const start: TurnStart = { engine, binary: located.binary, req, endpoint: chosen?.endpoint, asks, helper, stamp };
    try {
      yield* runAttempts(engine, req, (sessionId) => runOnce(start, sessionId), chosen, { log: deps.log, failover: deps.failover, now });
    } finally {
      helper.close();
    }
  }

  /** One attempt: on the conversation's warm process where it can, else per turn. */
  async function* runOnce(start: TurnStart, sessionId: string | undefined): AsyncIterable<AgentEvent> {
    const { engine, req } = start;
    const turn = buildTurn(start, sessionId, deps);
    const baseEnv = buildEngineEnv(env, req.config, deps.engineApi);
    const cold = () => runPerTurn(start, turn, baseEnv);
    if (!req.conversation) return yield* cold();
    yield* warm.turns.run({
      engine,
      binary: start.binary,
      cwd: deps.dir,
      turn,
      env: baseEnv,
      workspaceStamp: start.stamp,
      conversation: req.conversation,
      ...(req.outboxDir ? { outboxDir: req.outboxDir } : {}),
      timeoutMs: req.config.timeout * 1000,
      ...(req.signal ? { signal: req.signal } : {}),
      ...(req.onProcesses ? { onProcesses: req.onProcesses } : {}),
      cold,
    });
  }

  return {
    run,
    prepare: (config) => prepareFiles(config).skills,
    warm: warm.control,
    async listModels(config) {
      const engine = getEngine(config.engine);
      const located = locateEngine(engine, env.PATH, { config, dir: deps.dir });
      if (!located.found) throw new Error(describeMissingEngine(located));
      return engine.listModels({ binary: located.binary, dir: deps.dir, env: { ...env, HOME: env.HOME ?? os.homedir() } });
    },
    locate: (config) => locateEngine(getEngine(config.engine), env.PATH, { config, dir: deps.dir }),
  };
}

// --- internal ---

/** What every attempt of one turn shares. */
interface TurnStart {
  engine: EngineDefinition;
  binary: string;
  req: EngineTurnRequest;
  endpoint: ProviderEndpoint | undefined;
  asks: ((request: ApprovalAsk) => Promise<ApprovalVerdict>) | undefined;
  helper: LazyHelper;
  /** What the workspace files say (context, skills). */
  stamp: string;
}

interface LazyHelper {
  get(): Promise<{ ok: true; endpoint: HelperEndpoint } | { ok: false; message: string }>;
  close(): void;
}

/** The per-turn approval endpoint, opened by the first per-turn run that needs it (a warm process has its own). */
function openHelperLazily(broker: ApprovalBroker, asks: TurnStart['asks']): LazyHelper {
  let opened: Promise<HelperEndpoint & { close(): void }> | undefined;
  let closed = false;
  return {
    async get() {
      if (!asks) return { ok: false, message: 'nobody to ask' };
      try {
        opened ??= broker.open(asks);
        const endpoint = await opened;
        if (closed) endpoint.close();
        return { ok: true, endpoint: { url: endpoint.url, token: endpoint.token } };
      } catch (err) {
        return { ok: false, message: (err as Error).message };
      }
    },
    close() {
      closed = true;
      void opened?.then((e) => e.close()).catch(() => undefined);
    },
  };
}

/** The engine started for this turn alone (the way every turn ran before warm engines). */
async function* runPerTurn(start: TurnStart, turn: EngineTurn, baseEnv: NodeJS.ProcessEnv): AsyncIterable<AgentEvent> {
  const { engine, req } = start;
  let perTurn = turn;
  if (start.asks && engine.approvals === 'helper') {
    const opened = await start.helper.get();
    if (!opened.ok) {
      yield { type: 'error', code: 'spawn_failed', message: `could not open the approval endpoint: ${opened.message}`, kind: 'engine' };
      return;
    }
    perTurn = { ...turn, approvals: { ask: start.asks, helper: opened.endpoint } };
  }
  const invocation = engine.buildInvocation(perTurn);
  const childEnv: NodeJS.ProcessEnv = { ...baseEnv, ...(req.outboxDir ? { SERVICE_OUTBOX: req.outboxDir } : {}) };
  for (const [k, v] of Object.entries(invocation.env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = v;
  }
  yield* runProcess(
    {
      binary: start.binary,
      args: invocation.args,
      cwd: turn.dir,
      env: childEnv,
      ...(invocation.stdin !== undefined ? { stdin: invocation.stdin } : {}),
      timeoutMs: req.config.timeout * 1000,
      ...(req.signal ? { signal: req.signal } : {}),
      ...(req.onProcesses ? { onProcesses: req.onProcesses } : {}),
    },
    engine.createParser(perTurn),
  );
}

/** The turn as the engine definitions see it (without the per-turn approval endpoint: runPerTurn adds it). */
function buildTurn(start: TurnStart, sessionId: string | undefined, deps: EngineRunnerDeps): EngineTurn {
  const { engine, req, endpoint } = start;
  const model = req.config.provider?.models?.[engine.id] ?? endpoint?.model ?? req.config.model;
  return {
    prompt: req.prompt,
    dir: deps.dir,
    stateDir: deps.stateDir,
    ...(sessionId ? { sessionId } : {}),
    images: req.images ?? [],
    ...(req.command ? { command: req.command } : {}),
    config: req.config,
    ...(endpoint ? { endpoint } : {}),
    ...(model ? { model } : {}),
    ...(deps.apiKey ? { apiKey: deps.apiKey } : {}),
    isRoot: typeof process.getuid === 'function' && process.getuid() === 0,
    ...(start.asks ? { approvals: { ask: start.asks } } : {}),
    ...(req.protectedPaths ? { protectedPaths: req.protectedPaths } : {}),
  };
}

function stampOf(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

/** The resumed attempt (a fresh one when the engine does not know the session), then the provider outcome recorded for failover. */
async function* runAttempts(
  engine: EngineDefinition,
  req: EngineTurnRequest,
  attempt: (sessionId: string | undefined) => AsyncIterable<AgentEvent>,
  chosen: Awaited<ReturnType<typeof chooseEndpoint>>,
  deps: { log: Logger; failover: FailoverStore; now: () => number },
): AsyncIterable<AgentEvent> {
  let terminal: AgentEvent | undefined;
  if (req.sessionId) {
    const first = await withheldUntilContent(attempt(req.sessionId));
    if (first.sessionNotFound) {
      deps.log.info(`${engine.id} does not know session ${req.sessionId}; starting a new one`);
      yield { type: 'warning', message: 'the previous engine session was not found; a new session was started' };
    } else {
      for await (const e of first.events) {
        if (e.type === 'done' || e.type === 'error') terminal = e;
        yield e;
      }
    }
  }
  if (!req.sessionId || terminal === undefined) {
    for await (const e of attempt(undefined)) {
      if (e.type === 'done' || e.type === 'error') terminal = e;
      yield e;
    }
  }
  const outcome = terminal?.type === 'done' ? 'ok' : terminal?.type === 'error' && terminal.kind === 'provider' ? 'provider_error' : 'other';
  if (await recordOutcome(req.config.provider, chosen, outcome, deps.failover, deps.now())) {
    deps.log.warn(`provider ${chosen?.endpoint.baseUrl ?? ''} failed ${req.config.provider?.failoverThreshold} times in a row; using provider.fallback`);
  }
}

/**
 * Hold a resumed run's events back until it produces content. If it ends first with
 * session_not_found, nothing of it reaches the caller and the turn is retried fresh.
 */
async function withheldUntilContent(
  events: AsyncIterable<AgentEvent>,
): Promise<{ sessionNotFound: true } | { sessionNotFound: false; events: AsyncIterable<AgentEvent> }> {
  const it = events[Symbol.asyncIterator]();
  const held: AgentEvent[] = [];
  for (;;) {
    const next = await it.next();
    if (next.done) break;
    const e = next.value;
    if (e.type === 'error' && e.kind === 'session_not_found') {
      await it.return?.();
      return { sessionNotFound: true };
    }
    held.push(e);
    if (e.type === 'text' || e.type === 'tool_call' || e.type === 'tool_result' || e.type === 'done' || e.type === 'error') break;
  }
  return {
    sessionNotFound: false,
    events: (async function* () {
      yield* held;
      for (;;) {
        const next = await it.next();
        if (next.done) return;
        yield next.value;
      }
    })(),
  };
}
