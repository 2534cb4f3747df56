import type { Logger } from '../logger.js';
import type { SessionStore } from '../store/types.js';

/**
 * Idle sessions are pruned at start-up, never in the middle of serving. Resolves once done (or
 * failed, logged): turns wait for it, so none resumes a session that is about to go.
 */
export function pruneIdleSessions(store: Pick<SessionStore, 'pruneSessions'>, ttlDays: number, now: number, log: Logger): Promise<void> {
  return store.pruneSessions(now - ttlDays * 86_400_000).then(
    (n) => {
      if (n > 0) log.info(`pruned ${n} session(s) idle for more than ${ttlDays} days`);
    },
    (err: unknown) => log.error(`cannot prune idle sessions: ${(err as Error).message}`),
  );
}
