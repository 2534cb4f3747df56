import { randomUUID } from 'node:crypto';
import type { Completion, StreamEvent } from '../events.js';
import type { Logger } from '../logger.js';
import type { LiveMetrics, MetricOutcome } from '../metrics/live-metrics.js';
import type { ProcessIdentity } from '../store/types.js';

/**
 * What every turn reports when it ends: one log line (with the turn's id, session, source,
 * engine and outcome as fields in the JSON format) and its observation in the live metrics
 * (count, cost, duration, time to first text). A turn refused before its engine started (busy,
 * queue full, over budget, bad input) counts as `refused`.
 */
export interface TurnReport {
  readonly id: string;
  /** `emit` with the first text of the turn timed on its way. */
  timing(emit: (event: StreamEvent) => void): (event: StreamEvent) => void;
  /** The engine is about to start. */
  started(): void;
  /** `onProcesses` with the engine's processes counted on their way (engine processes alive). */
  counting(onProcesses: (list: ProcessIdentity[]) => void): (list: ProcessIdentity[]) => void;
  ended(end: { key: string; source: string; completion: Completion; costUsd: number }): void;
}

export interface TurnReportDeps {
  log: Logger;
  metrics?: LiveMetrics;
  /** The configured engine, read when a turn starts (or ends, for one that never started). */
  engine: () => string;
  now: () => number;
}

export interface TurnReports {
  begin(): TurnReport;
}

export function createTurnReports(deps: TurnReportDeps): TurnReports {
  const log = deps.log.child('turns');
  return {
    begin() {
      const id = randomUUID().slice(0, 8);
      let startedAt: number | undefined;
      let firstTextAt: number | undefined;
      let engine: string | undefined;
      return {
        id,
        timing: (emit) => (event) => {
          if (event.type === 'text' && firstTextAt === undefined) firstTextAt = deps.now();
          emit(event);
        },
        started() {
          startedAt = deps.now();
          engine = deps.engine();
        },
        counting: (onProcesses) => (list) => {
          onProcesses(list);
          deps.metrics?.turnProcesses(id, list);
        },
        ended({ key, source, completion, costUsd }) {
          deps.metrics?.turnProcesses(id, undefined);
          const ran = startedAt !== undefined;
          const outcome: MetricOutcome = ran || completion.status === 'aborted' ? completion.status : 'refused';
          const durationMs = ran ? (completion.durationMs ?? deps.now() - (startedAt ?? 0)) : undefined;
          const firstTextMs = ran && firstTextAt !== undefined ? firstTextAt - (startedAt ?? 0) : undefined;
          const turnEngine = engine ?? deps.engine();
          deps.metrics?.turnEnded({
            engine: turnEngine,
            source,
            outcome,
            costUsd,
            ...(durationMs !== undefined ? { durationMs } : {}),
            ...(firstTextMs !== undefined ? { firstTextMs } : {}),
          });
          const took = durationMs !== undefined ? ` in ${(durationMs / 1000).toFixed(1)} s` : '';
          log.info(`turn ${id} on ${key} (${source}, ${turnEngine}): ${outcome}${took}`, {
            turn: id,
            session: key,
            source,
            engine: turnEngine,
            outcome,
            durationMs,
            costUsd: costUsd || undefined,
          });
        },
      };
    },
  };
}
