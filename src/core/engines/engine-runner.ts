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
import { runProcess } from './runner.js';
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
}

export interface EngineRunner {
  run(req: EngineTurnRequest): AsyncIterable<AgentEvent>;
  listModels(config: ServiceConfig): Promise<ModelListing>;
  /** Write the context file and engine files without running a turn (start-up, config changes). */
  prepare(config: ServiceConfig): Skill[];
  /** Where a turn would find the engine's program (this runner's PATH), or why it cannot, with the fix. */
  locate(config: ServiceConfig): EngineLocation;
}

export function createEngineRunner(deps: EngineRunnerDeps): EngineRunner {
  const env = deps.env ?? process.env;
  const now = deps.now ?? Date.now;
  const warnedPermissions = new Set<string>();
  const broker = deps.approvalBroker ?? createApprovalBroker();
  const scanSkills = createSkillScanner(now);

  const prepare = (config: ServiceConfig): Skill[] => {
    const engine = getEngine(config.engine);
    const skills = scanSkills(deps.skillsDir).skills;
    const context = renderAssistantContext({ config, skills, skillPath: (s) => `skills/${s.name}`, peers: deps.peers?.() ?? [] });
    engine.prepareWorkspace({ dir: deps.dir, stateDir: deps.stateDir, config, skills, context, log: deps.log });
    if (config.permissions && !engine.honoursPermissions && !warnedPermissions.has(engine.id)) {
      warnedPermissions.add(engine.id);
      deps.log.warn(`permissions are enforced for ${enginesWith('honoursPermissions')} only; ${engine.id} ignores them`);
    }
    return skills;
  };

  async function* run(req: EngineTurnRequest): AsyncIterable<AgentEvent> {
    const engine = getEngine(req.config.engine);
    const located = locateEngine(engine, env.PATH, { config: req.config, dir: deps.dir });
    if (!located.found) {
      yield { type: 'error', code: 'spawn_failed', message: describeMissingEngine(located), kind: 'engine' };
      return;
    }
    const binary = located.binary;
    try {
      prepare(req.config);
    } catch (err) {
      yield { type: 'error', code: 'spawn_failed', message: `could not prepare the workspace: ${(err as Error).message}`, kind: 'engine' };
      return;
    }
    const chosen = await chooseEndpoint(req.config.provider, deps.failover, now());
    // Chat approvals: a helper process asks over a loopback endpoint opened for this run only.
    const asks = !req.config.skipPermissions && req.askApproval && engine.approvals ? req.askApproval : undefined;
    let helper: (HelperEndpoint & { close(): void }) | undefined;
    try {
      if (asks && engine.approvals === 'helper') helper = await broker.open(asks);
    } catch (err) {
      yield { type: 'error', code: 'spawn_failed', message: `could not open the approval endpoint: ${(err as Error).message}`, kind: 'engine' };
      return;
    }
    const approvals = asks ? { ask: asks, ...(helper ? { helper: { url: helper.url, token: helper.token } } : {}) } : undefined;
    const attempt = (sessionId: string | undefined) => runOnce(engine, binary, req, sessionId, chosen?.endpoint, approvals);
    try {
      yield* runAttempts(engine, req, attempt, chosen, { log: deps.log, failover: deps.failover, now });
    } finally {
      helper?.close();
    }
  }

  function runOnce(
    engine: EngineDefinition,
    binary: string,
    req: EngineTurnRequest,
    sessionId: string | undefined,
    endpoint: ProviderEndpoint | undefined,
    approvals: EngineTurn['approvals'],
  ): AsyncIterable<AgentEvent> {
    const model = req.config.provider?.models?.[engine.id] ?? endpoint?.model ?? req.config.model;
    const turn: EngineTurn = {
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
      ...(approvals ? { approvals } : {}),
      ...(req.protectedPaths ? { protectedPaths: req.protectedPaths } : {}),
    };
    const invocation = engine.buildInvocation(turn);
    const childEnv: NodeJS.ProcessEnv = { ...buildEngineEnv(env, req.config, deps.engineApi), ...(req.outboxDir ? { SERVICE_OUTBOX: req.outboxDir } : {}) };
    for (const [k, v] of Object.entries(invocation.env)) {
      if (v === undefined) delete childEnv[k];
      else childEnv[k] = v;
    }
    return runProcess(
      {
        binary,
        args: invocation.args,
        cwd: deps.dir,
        env: childEnv,
        ...(invocation.stdin !== undefined ? { stdin: invocation.stdin } : {}),
        timeoutMs: req.config.timeout * 1000,
        ...(req.signal ? { signal: req.signal } : {}),
        ...(req.onProcesses ? { onProcesses: req.onProcesses } : {}),
      },
      engine.createParser(turn),
    );
  }

  return {
    run,
    prepare,
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
