import { identifyProcess } from '../engines/process-tree.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ProcessIdentity, RunningTurn, RunningTurnStore } from '../store/types.js';

/**
 * Every running turn is on record in the store, with the engine processes it started, for as long
 * as it runs. A process killed mid-turn (SIGKILL, a crash) cannot clean up; the record lets the
 * next gateway start find the engine it left behind, stop it, and report the turn as interrupted
 * (see core/engines/orphan-reaper.ts). Recording is best effort: a store error costs the record,
 * never the turn. The record is a resource of its turn: disposing it removes it.
 */
export interface TurnRecord extends AsyncDisposable {
  /** Called by the engine runner as it sees the processes (synchronously): the writes are chained, in order. */
  processes(processes: ProcessIdentity[]): void;
  /** Removes the record; resolves once it is gone (awaited before the store may close). */
  [Symbol.asyncDispose](): Promise<void>;
}

export interface TurnRecorder {
  begin(turn: Omit<RunningTurn, 'id' | 'owner' | 'processes'>): TurnRecord;
}

export function createTurnRecorder(store: RunningTurnStore, log: Logger): TurnRecorder {
  // Without process identities (not Linux) there is nothing a later start could safely act on.
  const owner = identifyProcess(process.pid);
  const warn = (what: string) => (err: unknown) => log.warn(`running-turn record: ${what}: ${errorMessage(err)}`);
  return {
    begin(turn) {
      if (!owner) return { processes: () => undefined, [Symbol.asyncDispose]: async () => undefined };
      const added = store.addRunningTurn({ ...turn, owner }).catch((err: unknown) => {
        warn('add')(err);
        return undefined;
      });
      // One chain per turn: an update never overtakes the add, the removal never overtakes an update.
      let chain: Promise<unknown> = added;
      const then = (what: string, fn: (id: number) => Promise<unknown>) => {
        chain = chain.then(() => added.then((id) => (id === undefined ? undefined : fn(id)))).catch(warn(what));
        return chain;
      };
      return {
        processes: (processes) => void then('update', (id) => store.setRunningTurnProcesses(id, processes)),
        [Symbol.asyncDispose]: async () => void (await then('remove', (id) => store.removeRunningTurn(id))),
      };
    },
  };
}
