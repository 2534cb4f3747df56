import {
  ACTIVITY_KEPT,
  GROUP_MESSAGES_PER_CHAT,
  HISTORY_PER_KEY,
  isStrangerRecord,
  STRANGER_ACTIVITY_KEPT,
  type ActivityRecord,
  type FailoverState,
  type GroupMessage,
  type HistoryEntry,
  type InboxEntry,
  type KnownChat,
  type RunningTurn,
  TASK_RUNS_KEPT,
  TASK_SLOTS_KEPT_MS,
  type TaskRun,
  type Metrics,
  type SessionRecord,
  type Store,
  type SyncOf,
  type TimelineBucket,
} from './types.js';
import { formatLocalDay } from '../util/local-day.js';
import { createMemoryAccessStore } from './memory-access.js';
import { toAsyncStore } from './async-store.js';
import { createMemoryChatSessionStore } from './memory-chat-sessions.js';
import { createMemoryOutboxStore } from './memory-outbox.js';

/** Store in memory (unit tests, embedding without a directory). Same behaviour as the SQLite store. */
export function createMemoryStore(): Store {
  const sessions = new Map<string, SessionRecord>();
  const history = new Map<string, HistoryEntry[]>();
  let activity: ActivityRecord[] = [];
  const totals = { count: 0, cost: 0, duration: 0, bySource: {} as Record<string, number> };
  const botTurns = new Map<string, number>();
  const runningTurns = new Map<number, RunningTurn>();
  let nextTurnId = 1;
  let failover: FailoverState = { consecutiveFailures: 0 };
  const inbox = new Map<string, InboxEntry>();
  const groups = new Map<string, GroupMessage[]>();
  const runs = new Map<string, TaskRun[]>();
  const slots = new Map<string, Set<number>>();
  const chats = new Map<string, KnownChat>();
  const inboxKey = (channel: string, id: string) => `${channel}\u0000${id}`;
  const costByDay = new Map<string, number>();
  const { prune: pruneChatSessions, ...chatSessions } = createMemoryChatSessionStore();

  const sync: SyncOf<Store> = {
    ...createMemoryAccessStore((day) => costByDay.get(day) ?? 0),
    ...createMemoryOutboxStore(),
    ...chatSessions,
    getSession: (key) => {
      const s = sessions.get(key);
      return s ? { ...s } : undefined;
    },
    saveSession: (r) => {
      const prev = sessions.get(r.key);
      sessions.set(r.key, { ...r, createdAt: prev?.createdAt ?? r.createdAt, turns: prev?.turns ?? 0 });
    },
    deleteSession: (key) => void sessions.delete(key),
    listSessions: () => [...sessions.values()].sort((a, b) => b.updatedAt - a.updatedAt).map((s) => ({ ...s })),
    countSessionTurn(key) {
      const s = sessions.get(key);
      if (s) s.turns = (s.turns ?? 0) + 1;
    },
    pruneSessions(cutoff) {
      let n = 0;
      for (const [key, s] of sessions) {
        if (s.updatedAt < cutoff) {
          sessions.delete(key);
          history.delete(key);
          n++;
        }
      }
      pruneChatSessions(cutoff, (key) => sessions.has(key));
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
    metrics: (): Metrics => ({
      totalMessages: totals.count,
      totalCostUsd: totals.cost,
      avgDurationMs: totals.count === 0 ? 0 : Math.round(totals.duration / totals.count),
      messagesBySource: { ...totals.bySource },
    }),
    claimMessage(entry) {
      const k = inboxKey(entry.channel, entry.messageId);
      if (inbox.has(k)) return false;
      inbox.set(k, { ...entry, status: 'pending' });
      return true;
    },
    takeOverMessage(channel, messageId, owner) {
      const e = inbox.get(inboxKey(channel, messageId));
      if (e?.status !== 'pending' || e.owner === owner) return false;
      e.owner = owner;
      return true;
    },
    markMessageDone(channel, messageId) {
      const e = inbox.get(inboxKey(channel, messageId));
      if (e)
        inbox.set(inboxKey(channel, messageId), { channel: e.channel, messageId: e.messageId, chatKey: e.chatKey, receivedAt: e.receivedAt, status: 'done' });
    },
    pendingMessages: () =>
      [...inbox.values()]
        .filter((e) => e.status === 'pending')
        .sort((a, b) => a.receivedAt - b.receivedAt)
        .map((e) => ({ ...e })),
    purgeMessages(cutoff) {
      let n = 0;
      for (const [k, e] of inbox) {
        if ((e.status === 'done' || e.payload === undefined) && e.receivedAt < cutoff) {
          inbox.delete(k);
          n++;
        }
      }
      return n;
    },
    appendGroupMessage(m) {
      const list = groups.get(m.chatKey) ?? [];
      list.push({ ...m });
      if (list.length > GROUP_MESSAGES_PER_CHAT) list.splice(0, list.length - GROUP_MESSAGES_PER_CHAT);
      groups.set(m.chatKey, list);
    },
    recentGroupMessages: (chatKey, limit) => (limit <= 0 ? [] : (groups.get(chatKey) ?? []).slice(-limit).map((m) => ({ ...m }))),
    recordTaskRun(run) {
      const list = runs.get(run.taskId) ?? [];
      list.push({ ...run });
      if (list.length > TASK_RUNS_KEPT) list.splice(0, list.length - TASK_RUNS_KEPT);
      runs.set(run.taskId, list);
    },
    claimTaskSlot(taskId, at) {
      const taken = slots.get(taskId) ?? new Set<number>();
      for (const t of taken) if (t < at - TASK_SLOTS_KEPT_MS) taken.delete(t);
      slots.set(taskId, taken);
      if (taken.has(at)) return false;
      taken.add(at);
      return true;
    },
    taskRuns: (taskId, limit) =>
      (runs.get(taskId) ?? [])
        .slice(-limit)
        .reverse()
        .map((r) => ({ ...r })),
    noteChat(c) {
      const k = inboxKey(c.channel, c.chatId);
      const prev = chats.get(k);
      chats.set(k, { ...prev, ...c, lastSeen: Math.max(c.lastSeen, prev?.lastSeen ?? 0) });
    },
    knownChats: (channel) => [...chats.values()].filter((c) => c.channel === channel).map((c) => ({ ...c })),
    setChatFetched(channel, chatId, until) {
      const c = chats.get(inboxKey(channel, chatId));
      if (c) c.fetchedUntil = until;
    },
    addRunningTurn(t) {
      const id = nextTurnId++;
      runningTurns.set(id, { ...t, id, processes: [] });
      return id;
    },
    setRunningTurnProcesses(id, processes) {
      const t = runningTurns.get(id);
      if (t) t.processes = processes.map((p) => ({ ...p }));
    },
    removeRunningTurn: (id) => runningTurns.delete(id),
    runningTurns: () => [...runningTurns.values()].map((t) => ({ ...t, owner: { ...t.owner }, processes: t.processes.map((p) => ({ ...p })) })),
    groupBotTurns: (chatKey) => botTurns.get(chatKey) ?? 0,
    setGroupBotTurns: (chatKey, turns) => void botTurns.set(chatKey, turns),
    addGroupBotTurn(chatKey) {
      const turns = (botTurns.get(chatKey) ?? 0) + 1;
      botTurns.set(chatKey, turns);
      return turns;
    },
    readFailover: () => ({ ...failover }),
    writeFailover: (state) => {
      failover = { ...state };
    },
    ready: () => undefined,
    close: () => undefined,
  };
  return toAsyncStore<Store>(sync);
}
