import { ACTIVITY_KEPT, HISTORY_PER_KEY, type ActivityRecord, type HistoryEntry, type Metrics, type SessionRecord, type Store } from './types.js';

/** Store in memory (unit tests, embedding without a directory). Same behaviour as the SQLite store. */
export function createMemoryStore(): Store {
  const sessions = new Map<string, SessionRecord>();
  const history = new Map<string, HistoryEntry[]>();
  let activity: ActivityRecord[] = [];
  const totals = { count: 0, cost: 0, duration: 0, bySource: {} as Record<string, number> };
  const values = new Map<string, string>();

  return {
    getSession: (key) => {
      const s = sessions.get(key);
      return s ? { ...s } : undefined;
    },
    saveSession: (r) => void sessions.set(r.key, { ...r, createdAt: sessions.get(r.key)?.createdAt ?? r.createdAt }),
    deleteSession: (key) => void sessions.delete(key),
    listSessions: () => [...sessions.values()].map((s) => ({ ...s })),
    pruneSessions(cutoff) {
      let n = 0;
      for (const [key, s] of sessions) {
        if (s.updatedAt < cutoff) {
          sessions.delete(key);
          history.delete(key);
          n++;
        }
      }
      return n;
    },
    appendHistory(entry) {
      const list = history.get(entry.key) ?? [];
      list.push({ ...entry });
      if (list.length > HISTORY_PER_KEY) list.splice(0, list.length - HISTORY_PER_KEY);
      history.set(entry.key, list);
    },
    readHistory: (key, limit) => {
      const list = history.get(key) ?? [];
      return (limit === undefined ? list : list.slice(-limit)).map((e) => ({ ...e }));
    },
    clearHistory: (key) => void history.delete(key),
    recordActivity(r) {
      activity.push({ ...r });
      if (activity.length > ACTIVITY_KEPT) activity = activity.slice(-ACTIVITY_KEPT);
      totals.count++;
      totals.cost += r.costUsd;
      totals.duration += r.durationMs;
      totals.bySource[r.source] = (totals.bySource[r.source] ?? 0) + 1;
    },
    recentActivity: (limit, filter) =>
      activity
        .filter((r) => (!filter?.statuses || filter.statuses.includes(r.status)) && (filter?.escalated === undefined || Boolean(r.escalated) === filter.escalated))
        .slice(-limit)
        .reverse()
        .map((r) => ({ ...r })),
    metrics: (): Metrics => ({
      totalMessages: totals.count,
      totalCostUsd: totals.cost,
      avgDurationMs: totals.count === 0 ? 0 : Math.round(totals.duration / totals.count),
      messagesBySource: { ...totals.bySource },
    }),
    getValue: <T>(key: string) => {
      const v = values.get(key);
      return v === undefined ? undefined : (JSON.parse(v) as T);
    },
    setValue: (key, value) => void values.set(key, JSON.stringify(value)),
    close: () => undefined,
  };
}
