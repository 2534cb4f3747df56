import { randomUUID } from 'node:crypto';
import type { ConfigSource } from '../config/source.js';
import type { ActivityStore, BudgetStore } from '../store/types.js';
import { formatLocalDay, nextLocalMidnight } from '../util/local-day.js';
import type { BudgetState } from './budget.js';

/**
 * The daily budget when turns start (issue 29): checking it only when a turn is queued let 25
 * turns queued together all run. So a turn that may be refused by the budget (channels, HTTP)
 * asks again when it starts, and holds an estimate of its cost while it runs: it may start while
 * the day's recorded cost plus what running turns hold is below the cap. However many turns
 * start together, on however many hosts sharing the store, the day then ends at most one turn's
 * cost over the cap (as long as no turn costs more than its hold).
 *
 * What a turn holds (`access.reservePerTurnUsd`, 0 = automatic):
 * - configured: that amount;
 * - automatic: the most any of the last RECENT_TURNS turns that ran cost (read from the activity
 *   once, then followed as turns end here); with an engine that reports no cost, 0;
 * - automatic with no turn known yet: the whole cap, so the first turns run one at a time until
 *   one has told what a turn costs.
 * A turn that finds the budget held, not spent, waits for a hold to be let go (here at once, on
 * another host within HOLD_POLL_MS), then asks again; one that finds it spent is refused.
 */
export interface BudgetGuard {
  /** Resolves when the turn may run (holding its share), the day is spent (refuse it), or `signal` aborted. */
  hold(signal: AbortSignal): Promise<HoldOutcome>;
}

/** `release(costUsd)`: the turn ended (its cost recorded first, or undefined when it never ran): the hold goes. */
export type HoldOutcome = { status: 'held'; release(costUsd?: number): Promise<void> } | { status: 'spent'; budget: BudgetState } | { status: 'aborted' };

export interface BudgetGuardDeps {
  store: BudgetStore & Pick<ActivityStore, 'recentActivity'>;
  /** Read at every start: the cap, the configured hold, the turn timeout (a hold outlives its turn by no more). */
  config: Pick<ConfigSource, 'current'>;
  now: () => number;
}

/** Turns whose cost sizes the automatic hold. */
export const RECENT_TURNS = 20;
/** How often a waiting turn asks again for holds let go on another host. */
export const HOLD_POLL_MS = 1_000;
/** A hold outlives its turn's timeout by this much before it expires (its process died mid-turn). */
const HOLD_MARGIN_MS = 60_000;

export function createBudgetGuard(deps: BudgetGuardDeps): BudgetGuard {
  let recent: Promise<number[]> | undefined;
  const recentCosts = () => {
    // Turns that ran (a refusal before the engine started took no time and cost nothing: it says
    // nothing about what a turn costs).
    recent ??= deps.store
      .recentActivity(RECENT_TURNS * 3, { statuses: ['completed', 'silent', 'failed', 'aborted'] })
      .then((records) =>
        records
          .filter((r) => r.durationMs > 0)
          .slice(0, RECENT_TURNS)
          .map((r) => r.costUsd)
          .reverse(),
      )
      .catch(() => []);
    return recent;
  };
  const noteCost = async (costUsd: number) => {
    const costs = await recentCosts();
    costs.push(costUsd);
    if (costs.length > RECENT_TURNS) costs.shift();
  };
  const estimate = async (cap: number, configured: number) => {
    if (configured > 0) return configured;
    const costs = await recentCosts();
    return costs.length > 0 ? Math.max(...costs) : cap;
  };

  /** Wakes the turns waiting here when a hold is let go. */
  let letGo = new Set<() => void>();
  const wake = () => {
    const waiting = letGo;
    letGo = new Set();
    for (const w of waiting) w();
  };
  const nextChance = (signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        letGo.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, HOLD_POLL_MS);
      letGo.add(done);
      signal.addEventListener('abort', done, { once: true });
    });

  return {
    async hold(signal) {
      for (;;) {
        if (signal.aborted) return { status: 'aborted' };
        const c = deps.config.current().config;
        const cap = c.access.dailyBudgetUsd;
        const now = deps.now();
        const id = randomUUID();
        const amountUsd = await estimate(cap, c.access.reservePerTurnUsd);
        const expiresAt = now + c.timeout * 1000 + HOLD_MARGIN_MS;
        const result = await deps.store.holdBudget({ id, day: formatLocalDay(now), amountUsd, expiresAt }, cap, now);
        if (result.held) {
          return {
            status: 'held',
            // Never rejects: it runs in the turn's cleanup. A hold the store could not drop expires.
            release: async (costUsd) => {
              if (costUsd !== undefined) await noteCost(costUsd);
              await deps.store.releaseBudget(id).catch(() => undefined);
              wake();
            },
          };
        }
        if (result.spentUsd >= cap)
          return { status: 'spent', budget: { todayCostUsd: result.spentUsd, dailyBudgetUsd: cap, reached: true, resetsAt: nextLocalMidnight(now) } };
        await nextChance(signal);
      }
    },
  };
}
