import { identifyProcess } from '../engines/process-tree.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ProcessIdentity, RunningTurn, RunningTurnStore } from '../store/types.js';

/**
 * Every running turn is on record in the store, with the engine processes it started, for as long
 * as it runs. A process killed mid-turn (SIGKILL, a crash) cannot clean up; the record lets the
 * next gateway start find the engine it left behind, stop it, and report the turn as interrupted
 * (see core/engines/orphan-reaper.ts). Recording is best effort: a store error costs the record,
 * never the turn.
 */
export interface TurnRecord {
  processes(processes: ProcessIdentity[]): void;
  end(): void;
}

export interface TurnRecorder {
  begin(turn: Omit<RunningTurn, 'id' | 'owner' | 'processes'>): TurnRecord;
}

export function createTurnRecorder(store: RunningTurnStore, log: Logger): TurnRecorder {
  // Without process identities (not Linux) there is nothing a later start could safely act on.
  const owner = identifyProcess(process.pid);
  const safely = (what: string, fn: () => void) => {
    try {
      fn();
    } catch (err) {
      log.warn(`running-turn record: ${what}: ${errorMessage(err)}`);
    }
  };
  return {
    begin(turn) {
      if (!owner) return { processes: () => undefined, end: () => undefined };
      let id: number | undefined;
      safely('add', () => {
        id = store.addRunningTurn({ ...turn, owner });
      });
      return {
        processes: (processes) => safely('update', () => id !== undefined && store.setRunningTurnProcesses(id, processes)),
        end: () => safely('remove', () => id !== undefined && store.removeRunningTurn(id)),
      };
    },
  };
}
