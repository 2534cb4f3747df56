import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ActivityStore, RunningTurn, RunningTurnStore } from '../store/types.js';
import { createProcessTree, isProcessAlive } from './process-tree.js';

/**
 * What a process killed mid-turn left behind (a SIGKILL of the gateway, a crash of `service chat`):
 * its running-turn records. For every record whose owner is gone (checked by pid and start time,
 * so a reused pid is not taken for it), the engine's processes that still run (same identity) and
 * everything they started (children, their sessions and groups) are stopped, and the turn is
 * recorded as failed, "interrupted", so it shows among the escalations. Records of live owners
 * (a `service chat` beside the gateway) are left alone. Two starts racing each report a turn once:
 * the record is removed by exactly one of them.
 */
export const INTERRUPTED = 'interrupted: the gateway stopped during this turn';

export interface ReapResult {
  turns: number;
  processes: number;
}

export async function reapInterruptedTurns(deps: {
  store: RunningTurnStore & ActivityStore;
  log: Logger;
  now?: () => number;
  graceMs?: number;
}): Promise<ReapResult> {
  const now = deps.now ?? Date.now;
  const result: ReapResult = { turns: 0, processes: 0 };
  for (const turn of await deps.store.runningTurns()) {
    if (isProcessAlive(turn.owner)) continue;
    try {
      result.processes += await stopLeftovers(turn, deps.graceMs ?? 2_000);
    } catch (err) {
      deps.log.warn(`interrupted turn on "${turn.sessionKey}": could not stop its engine: ${errorMessage(err)}`);
    }
    if (!(await deps.store.removeRunningTurn(turn.id))) continue;
    result.turns++;
    await deps.store.recordActivity({
      ts: new Date(turn.startedAt).toISOString(),
      source: turn.source,
      sender: turn.sender,
      messagePreview: turn.messagePreview,
      responsePreview: '',
      durationMs: Math.max(0, now() - turn.startedAt),
      costUsd: 0,
      status: 'failed',
      sessionKey: turn.sessionKey,
      error: INTERRUPTED,
    });
  }
  if (result.turns > 0) {
    deps.log.warn(
      `${result.turns} turn(s) were interrupted when this assistant last stopped; stopped ${result.processes} engine process(es) they left running`,
    );
  }
  return result;
}

// --- internal ---

/** Stop the recorded processes that still run, with everything they started; returns how many were running. */
async function stopLeftovers(turn: RunningTurn, graceMs: number): Promise<number> {
  const [root] = turn.processes;
  if (!root) return 0;
  const tree = createProcessTree(root.pid, { known: turn.processes });
  tree.refresh();
  const running = tree.alive().length;
  if (running > 0) await tree.terminate(graceMs);
  return running;
}
