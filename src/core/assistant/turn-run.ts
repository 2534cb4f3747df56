import type { ApprovalAsk, ApprovalVerdict } from '../approvals/approvals.js';
import type { ServiceConfig } from '../config/schema.js';
import type { EngineRunner } from '../engines/engine-runner.js';
import type { AgentEvent } from '../events.js';
import type { ProcessIdentity, SessionRecord, SessionStore } from '../store/types.js';

/**
 * Step "run" of a turn (turn-pipeline.ts): the engine runs on the prepared workspace and hands
 * back its events. The engine runner (core/engines/engine-runner.ts) is the seam: how a process
 * is found for the turn (spawned now, or a warm one kept for the conversation) is its business;
 * the pipeline only reads events. The engine session of the key is resumed here, and kept as the
 * engine names it (unless a reset overtook the turn: a session saved after the reset would bring
 * back what the user just cleared).
 */
export interface RunDeps {
  config: ServiceConfig;
  store: SessionStore;
  engine: EngineRunner;
  now: () => number;
}

export interface RunRequest {
  key: string;
  prompt: string;
  images: readonly string[];
  outboxDir: string;
  command?: { name: string; arguments?: string };
  signal: AbortSignal;
  onProcesses?: (processes: ProcessIdentity[]) => void;
  /** Chat approvals of this turn. */
  askApproval?: (request: ApprovalAsk) => Promise<ApprovalVerdict>;
  /** The assistant's own files, out of the engine's reach where it has deny rules (a non-admin started the turn). */
  protectedPaths?: readonly string[];
  /** True once the key was reset while this turn ran. */
  overtaken: () => boolean;
}

/** The engine session a turn runs in: the id the engine gave last, saved as it goes. */
export interface EngineSession {
  id(): string | undefined;
  /** The engine named its session (a `session` event). */
  named(id: string): Promise<void>;
  /** The turn is over: the session is saved with its turn counted. */
  keep(): Promise<void>;
}

export async function runEngine(deps: RunDeps, req: RunRequest): Promise<{ events: AsyncIterable<AgentEvent>; session: EngineSession }> {
  const saved = await deps.store.getSession(req.key);
  // A session created by another engine means nothing to this one.
  const resumeId = saved && saved.engine === deps.config.engine ? (saved.sessionId ?? undefined) : undefined;
  const session = createEngineSession(deps, req, saved, resumeId);
  // Started on the first read, so that whatever the runner throws reaches the stream step, which ends the turn with it.
  const start = () =>
    deps.engine.run({
      config: deps.config,
      prompt: req.prompt,
      ...(resumeId ? { sessionId: resumeId } : {}),
      images: req.images,
      outboxDir: req.outboxDir,
      ...(req.command ? { command: req.command } : {}),
      signal: req.signal,
      ...(req.onProcesses ? { onProcesses: req.onProcesses } : {}),
      ...(req.askApproval ? { askApproval: req.askApproval } : {}),
      ...(req.protectedPaths ? { protectedPaths: req.protectedPaths } : {}),
    });
  const events = (async function* () {
    yield* start();
  })();
  return { events, session };
}

function createEngineSession(deps: RunDeps, req: RunRequest, saved: SessionRecord | undefined, resumeId: string | undefined): EngineSession {
  const engine = deps.config.engine;
  let sessionId = resumeId;
  return {
    id: () => sessionId,
    async named(id) {
      if (id === sessionId && saved?.engine === engine) return;
      sessionId = id;
      if (req.overtaken()) return;
      const t = deps.now();
      await deps.store.saveSession({ key: req.key, engine, sessionId: id, createdAt: saved?.createdAt ?? t, updatedAt: t });
    },
    async keep() {
      if (!sessionId || req.overtaken()) return;
      const t = deps.now();
      // A saved session keeps its createdAt (saveSession's contract), so `t` only counts when there
      // is none any more (reset meanwhile): no need to read it again.
      await deps.store.saveSession({ key: req.key, engine, sessionId, createdAt: t, updatedAt: t });
      await deps.store.countSessionTurn(req.key);
    },
  };
}
