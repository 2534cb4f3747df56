import { toAsyncStore } from './async-store.js';
import { createMemoryAccessStore } from './memory-access.js';
import { createMemoryActivityStore } from './memory-activity.js';
import { createMemoryChannelStateStore } from './memory-channel-state.js';
import { createMemoryChatSessionStore } from './memory-chat-sessions.js';
import { createMemoryOutboxStore } from './memory-outbox.js';
import {
  type FailoverState,
  HISTORY_PER_KEY,
  type HistoryEntry,
  type RunningTurn,
  type SessionRecord,
  type Store,
  type SyncOf,
  TASK_RUNS_KEPT,
  TASK_SLOTS_KEPT_MS,
  type TaskRun,
} from './types.js';

/** Store in memory (unit tests, embedding without a directory). Same behaviour as the SQLite store. */
export function createMemoryStore(): Store {
  const sessions = new Map<string, SessionRecord>();
  const history = new Map<string, HistoryEntry[]>();
  const runningTurns = new Map<number, RunningTurn>();
  let nextTurnId = 1;
  let failover: FailoverState = { consecutiveFailures: 0 };
  const runs = new Map<string, TaskRun[]>();
  const slots = new Map<string, Set<number>>();
  const { prune: pruneChatSessions, ...chatSessions } = createMemoryChatSessionStore();
  const activity = createMemoryActivityStore();

  const sync: SyncOf<Store> = {
    ...createMemoryAccessStore(activity.dailyCost),
    ...createMemoryOutboxStore(),
    ...chatSessions,
    ...activity,
    ...createMemoryChannelStateStore(),
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
    readFailover: () => ({ ...failover }),
    writeFailover: (state) => {
      failover = { ...state };
    },
    ready: () => undefined,
    close: () => undefined,
  };
  return toAsyncStore<Store>(sync);
}
