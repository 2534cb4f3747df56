/**
 * Brings something shown up to date with the newest text, one call at a time: a request made
 * while `sync` runs is taken by one more run after it (never in parallel), and the requests made
 * meanwhile fold into that one run, so every `sync` shows the latest. What a reply growing in
 * place needs (an edited message, a draft, a card). `stopped` ends the loop early (a reply that
 * has finished by other means).
 */
export interface LatestSync {
  /** Ask for a run; resolves when the runs up to the one taking this request are done. */
  request(): Promise<void>;
  /** Resolves when no run is going on (whatever the last one ended with). */
  settled(): Promise<void>;
}

export function createLatestSync(sync: () => Promise<void>, stopped: () => boolean = () => false): LatestSync {
  let dirty = false;
  let running: Promise<void> | undefined;
  const pump = (): Promise<void> => {
    running ??= (async () => {
      try {
        while (dirty && !stopped()) {
          dirty = false;
          await sync();
        }
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  return {
    request() {
      dirty = true;
      return pump();
    },
    async settled() {
      await running?.catch(() => undefined);
    },
  };
}
