/** Waiting in the DingTalk and WeCom fakes: for a state change, not by polling. */

/** Change-driven waiting: every state change calls notify(), which re-runs the pending probes. */
export function createWaiters(label: string) {
  const probes = new Set<{ check: () => void; fail: (e: Error) => void }>();
  return {
    notify(): void { for (const p of [...probes]) p.check(); },
    failWaiters(): void { for (const p of [...probes]) p.fail(new Error(`${label}: closed`)); },
    waitFor<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const entry = { check: () => { const v = probe(); if (v !== undefined) { done(); resolve(v); } },
          fail: (e: Error) => { done(); reject(e); } };
        const timer = setTimeout(() => entry.fail(new Error(`${label}: timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
        const done = () => { clearTimeout(timer); probes.delete(entry); };
        probes.add(entry);
        entry.check();
      });
    },
  };
}
