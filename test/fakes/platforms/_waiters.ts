/** Waiting in the DingTalk and WeCom fakes: for a state change, not by polling. */
import type { FakePlatform } from './types.js';
import { HANG_MS } from '../../helpers/wait.js';

type RecordWaits = Pick<FakePlatform, 'waitForOutbound' | 'waitForAck' | 'waitForConnection'>;

/** Change-driven waiting: every state change calls notify(), which re-runs the pending probes. */
export function createWaiters(label: string) {
  const probes = new Set<{ check: () => void; fail: (e: Error) => void }>();
  function waitFor<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry = {
        check: () => {
          const v = probe();
          if (v !== undefined) {
            done();
            resolve(v);
          }
        },
        fail: (e: Error) => {
          done();
          reject(e);
        },
      };
      const timer = setTimeout(() => entry.fail(new Error(`${label}: timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
      const done = () => {
        clearTimeout(timer);
        probes.delete(entry);
      };
      probes.add(entry);
      entry.check();
    });
  }
  return {
    notify(): void {
      for (const p of [...probes]) p.check();
    },
    failWaiters(): void {
      for (const p of [...probes]) p.fail(new Error(`${label}: closed`));
    },
    waitFor,
    /** The FakePlatform waiters, answered from the fake's records. */
    recordWaits(records: Pick<FakePlatform, 'outbound' | 'acks' | 'connected'>): RecordWaits {
      return {
        waitForOutbound: (pred, timeoutMs = HANG_MS) => waitFor(() => records.outbound.find(pred), timeoutMs, 'outbound'),
        waitForAck: (messageId, timeoutMs = HANG_MS) => waitFor(() => records.acks.find((a) => a.messageId === messageId), timeoutMs, `ack of ${messageId}`),
        waitForConnection: async (timeoutMs = HANG_MS) => {
          await waitFor(() => records.connected() || undefined, timeoutMs, 'connection');
        },
      };
    },
  };
}
