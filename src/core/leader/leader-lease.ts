import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { CoordinationStore } from '../store/types.js';

/**
 * Which of an assistant's gateways (one per host, sharing a server store) runs its channels and
 * its scheduler: the holder of the lease `leader`. Every gateway serves HTTP; only the leader
 * connects to the platforms (two connections of one bot would each get half of its messages, or
 * fight over one long poll) and fires scheduled tasks.
 *
 * The lease lasts two thirds of `failoverSeconds` and is renewed four times per lease; a
 * follower tries as often, and at least every second. So a leader that dies is replaced within
 * the lease plus one try, inside `failoverSeconds`, and one that stops cleanly within a second. A leader that cannot renew (its store unreachable) steps down one
 * try before its lease ends, so two hosts never both believe they lead by their own clocks.
 */
export interface LeaderLease {
  start(): void;
  /**
   * Stop trying; a leader steps down (`onFollow`) and then gives the lease up for the next one.
   * `idleSince`: local unix ms since which this gateway ran no scheduled task (the next leader catches up from then).
   */
  stop(opts?: { idleSince?: number }): Promise<void>;
  isLeader(): boolean;
}

export interface Takeover {
  /** Local unix ms from which the previous leader may have missed work (scheduled runs). */
  since?: number;
}

export interface LeaderLeaseDeps {
  store: Pick<CoordinationStore, 'claimLease' | 'releaseLease'>;
  /** This gateway, unique among the assistant's gateways (host, pid, a random part). */
  holder: string;
  failoverSeconds: number;
  /** Became leader: connect the channels, arm the scheduler, catch up from `since`. */
  onLead(takeover: Takeover): Promise<void>;
  /** Lost the lease (or stopping): disconnect, stop the scheduler. */
  onFollow(): Promise<void>;
  log: Logger;
  now?: () => number;
}

export const LEADER_LEASE = 'leader';
const FOLLOWER_TRY_MS = 1000;

export function createLeaderLease(deps: LeaderLeaseDeps): LeaderLease {
  const now = deps.now ?? Date.now;
  const ttlMs = Math.max(600, Math.round((deps.failoverSeconds * 1000 * 2) / 3));
  const everyMs = Math.max(150, Math.round(ttlMs / 4));
  let leader = false;
  /** Local time until which the lease surely runs (its last renewal was sent after this minus the ttl). */
  let validUntil = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  let ticking: Promise<void> = Promise.resolve();
  /** Transitions run one at a time, in order: a step-down never overlaps the step-up before it. */
  let transitions: Promise<void> = Promise.resolve();
  let failing = false;
  let lastHolder: string | undefined;

  const transition = (fn: () => Promise<void>) => {
    transitions = transitions.then(fn).catch((err: unknown) => deps.log.error(`leadership change: ${errorMessage(err)}`));
    return transitions;
  };
  const stepDown = (why: string) => {
    if (!leader) return;
    leader = false;
    deps.log.warn(`no longer the leader (${why}): channels and scheduled tasks stop here`);
    void transition(() => deps.onFollow());
  };

  const tick = async () => {
    const sent = now();
    try {
      const claim = await deps.store.claimLease(LEADER_LEASE, deps.holder, ttlMs);
      if (stopped) return;
      if (failing) deps.log.info('the store answers again');
      failing = false;
      if (claim.held) {
        validUntil = sent + ttlMs;
        if (!leader) {
          leader = true;
          const since = claim.previousActiveAgoMs === undefined ? undefined : sent - claim.previousActiveAgoMs;
          deps.log.info(
            `leader of the assistant now${since === undefined ? '' : ' (took over from another gateway)'}: connecting the channels, arming the scheduler`,
          );
          void transition(() => deps.onLead(since === undefined ? {} : { since }));
        }
      } else {
        if (claim.holder !== lastHolder) deps.log.info(`following: ${claim.holder} runs the channels and scheduled tasks`);
        lastHolder = claim.holder;
        stepDown(`${claim.holder} holds the lease`);
      }
    } catch (err) {
      if (stopped) return;
      if (!failing) deps.log.warn(`cannot reach the store for the leader lease: ${errorMessage(err)}`);
      failing = true;
      // Step down while the lease surely still runs, before another gateway may take it.
      if (leader && now() + everyMs >= validUntil) stepDown('the store cannot be reached');
    }
  };
  const loop = async () => {
    ticking = tick();
    await ticking;
    // A follower asks at least every second: a lease given up by a clean stop is taken at once.
    if (!stopped) timer = setTimeout(() => void loop(), leader ? everyMs : Math.min(everyMs, FOLLOWER_TRY_MS));
  };

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      void loop();
    },
    async stop(opts = {}) {
      stopped = true;
      clearTimeout(timer);
      await ticking; // a renewal on its way must not land after the release below
      const wasLeader = leader;
      leader = false;
      if (wasLeader) await transition(() => deps.onFollow());
      else await transitions;
      if (wasLeader) {
        await deps.store
          .releaseLease(LEADER_LEASE, deps.holder, opts.idleSince === undefined ? 0 : now() - opts.idleSince)
          .catch((err: unknown) => deps.log.warn(`cannot give up the leader lease (the next leader waits for it to end): ${errorMessage(err)}`));
      }
    },
    isLeader: () => leader,
  };
}
