import { formatLocalDay } from '../util/local-day.js';
import { ACTIVITY_KEPT, type ActivityRecord, type ActivityStore, isStrangerRecord, STRANGER_ACTIVITY_KEPT, type SyncOf, type TimelineBucket } from './types.js';

/** The activity slice of the memory store (records, metrics, each day's cost); the same contract as the SQLite one. */
export function createMemoryActivityStore(): SyncOf<ActivityStore> {
  let activity: ActivityRecord[] = [];
  const totals = { count: 0, cost: 0, duration: 0, bySource: {} as Record<string, number> };
  const costByDay = new Map<string, number>();

  return {
    recordActivity(r) {
      activity.push({ ...r });
      // Each kind of record is kept apart (strangers' own bound, see STRANGER_ACTIVITY_KEPT).
      const stranger = isStrangerRecord(r);
      const kept = stranger ? STRANGER_ACTIVITY_KEPT : ACTIVITY_KEPT;
      let over = activity.length > kept ? activity.filter((a) => isStrangerRecord(a) === stranger).length - kept : 0;
      if (over > 0) activity = activity.filter((a) => isStrangerRecord(a) !== stranger || over-- <= 0);
      totals.count++;
      totals.cost += r.costUsd;
      totals.duration += r.durationMs;
      totals.bySource[r.source] = (totals.bySource[r.source] ?? 0) + 1;
      if (r.costUsd !== 0) {
        const day = formatLocalDay(Date.parse(r.ts));
        costByDay.set(day, (costByDay.get(day) ?? 0) + r.costUsd);
      }
    },
    dailyCost: (day) => costByDay.get(day) ?? 0,
    recentActivity: (limit, filter) =>
      activity
        .filter(
          (r) => (!filter?.statuses || filter.statuses.includes(r.status)) && (filter?.escalated === undefined || Boolean(r.escalated) === filter.escalated),
        )
        .slice(-limit)
        .reverse()
        .map((r) => ({ ...r })),
    activityTimeline(since, bucketMs) {
      const buckets = new Map<number, TimelineBucket>();
      for (const r of activity) {
        const t = Date.parse(r.ts);
        if (!(t >= since)) continue;
        const start = since + Math.floor((t - since) / bucketMs) * bucketMs;
        const b = buckets.get(start) ?? { start, count: 0, costUsd: 0 };
        b.count++;
        b.costUsd += r.costUsd;
        buckets.set(start, b);
      }
      return [...buckets.values()].sort((a, b) => a.start - b.start);
    },
    metrics: () => ({
      totalMessages: totals.count,
      totalCostUsd: totals.cost,
      avgDurationMs: totals.count === 0 ? 0 : Math.round(totals.duration / totals.count),
      messagesBySource: { ...totals.bySource },
    }),
  };
}
