import { type BudgetState, isBudgeted, readBudget } from '../access/budget.js';
import { createBudgetGuard } from '../access/budget-holds.js';
import type { ConfigSource } from '../config/source.js';
import type { ActivityStore, BudgetStore } from '../store/types.js';

/**
 * The daily budget (`access.dailyBudgetUsd`) as a turn meets it, twice: when it is admitted (a day
 * already spent refuses it at once) and when it starts (it then holds its share of the day while
 * it runs: access/budget-holds.ts). Turns the budget never refuses (the owner's: terminal, cron)
 * and every turn while there is no cap (0) neither read today's spending nor hold anything.
 */
export interface TurnBudget {
  /** Today's spending against the cap. */
  today(): Promise<BudgetState>;
  /** Step admit: the day's state when it is spent for a turn from `source`, else undefined. */
  spentFor(source: string): Promise<BudgetState | undefined>;
  /** Step queue: hold the share of a turn from `source` that may start now (no hold: not budgeted, or aborted meanwhile). */
  hold(source: string, signal: AbortSignal): Promise<{ ok: true; hold?: BudgetShare } | { ok: false; budget: BudgetState }>;
}

/** A turn's share of the day. Disposing it without `settle` (the turn never ran to its end) lets it go uncounted. */
export interface BudgetShare extends AsyncDisposable {
  /** The turn's cost is recorded: the hold goes, and the cost sizes later holds. */
  settle(costUsd: number): Promise<void>;
}

export interface TurnBudgetDeps {
  store: BudgetStore & Pick<ActivityStore, 'dailyCost' | 'recentActivity'>;
  config: ConfigSource;
  now: () => number;
}

export function createTurnBudget(deps: TurnBudgetDeps): TurnBudget {
  const guard = createBudgetGuard(deps);
  const cap = () => deps.config.current().config.access.dailyBudgetUsd;
  const today = () => readBudget(deps.store, cap(), deps.now());
  const applies = (source: string) => isBudgeted(source) && cap() > 0;
  return {
    today,
    async spentFor(source) {
      if (!applies(source)) return undefined;
      const budget = await today();
      return budget.reached ? budget : undefined;
    },
    async hold(source, signal) {
      if (!applies(source) || signal.aborted) return { ok: true };
      const held = await guard.hold(signal);
      if (held.status === 'spent') return { ok: false, budget: held.budget };
      if (held.status === 'aborted') return { ok: true };
      let released = false;
      const release = async (costUsd?: number) => {
        if (released) return;
        released = true;
        await held.release(costUsd);
      };
      return { ok: true, hold: { settle: (costUsd) => release(costUsd), [Symbol.asyncDispose]: () => release() } };
    },
  };
}
