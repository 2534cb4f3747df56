import type { ActivityStore } from '../store/types.js';
import { formatLocalDay, nextLocalMidnight } from '../util/local-day.js';

/**
 * The daily budget (`access.dailyBudgetUsd`, 0 = no cap): the engine-reported cost of every turn
 * recorded today (local day) is summed; once it reaches the cap, turns from the channels and the
 * HTTP API are refused until local midnight. The owner's own runs (the terminal, scheduled
 * tasks) still run, and their cost counts.
 */
export interface BudgetState {
  todayCostUsd: number;
  /** 0 when there is no cap. */
  dailyBudgetUsd: number;
  reached: boolean;
  /** Unix ms of the next local midnight, when the day's spending starts again at 0. */
  resetsAt: number;
}

/** Sources the budget never refuses: the owner at the terminal and the scheduler. */
const OWNER_SOURCES = new Set(['terminal', 'cron']);

export async function readBudget(store: Pick<ActivityStore, 'dailyCost'>, dailyBudgetUsd: number, now: number): Promise<BudgetState> {
  const todayCostUsd = await store.dailyCost(formatLocalDay(now));
  return { todayCostUsd, dailyBudgetUsd, reached: dailyBudgetUsd > 0 && todayCostUsd >= dailyBudgetUsd, resetsAt: nextLocalMidnight(now) };
}

/** Whether a turn from `source` is refused once the budget is reached (channels and HTTP are; owner runs are not). */
export function isBudgeted(source: string): boolean {
  return !OWNER_SOURCES.has(source);
}

export function formatBudgetRefusal(b: BudgetState): string {
  return `The daily budget is spent (${formatUsd(b.todayCostUsd)} of ${formatUsd(b.dailyBudgetUsd)} today). New turns are refused until midnight (local time).`;
}

/** Dollars with cents, and sub-cent digits only where they matter ($5.00, $0.0123). */
export function formatUsd(n: number): string {
  const cents = n.toFixed(2);
  return `$${Math.abs(Number(cents) - n) < 1e-9 ? cents : n.toFixed(4)}`;
}
