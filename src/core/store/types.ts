/**
 * The state an assistant keeps between turns and across restarts. Synchronous on purpose:
 * better-sqlite3 is synchronous and every call is a few microseconds. Two implementations (SQLite
 * for real use, memory for unit tests) pass one contract suite.
 */
export interface SessionRecord {
  key: string;
  /** The engine that created the session; a session of another engine is never resumed. */
  engine: string;
  /** The engine-native session id (null until the engine told us). */
  sessionId: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface HistoryEntry {
  key: string;
  role: 'user' | 'assistant';
  text: string;
  ts: number;
}

export type TurnStatus = 'completed' | 'silent' | 'failed' | 'aborted';

/** One processed message, as the activity feed and the dashboard show it. */
export interface ActivityRecord {
  ts: string;
  source: string;
  sender: string;
  messagePreview: string;
  responsePreview: string;
  durationMs: number;
  costUsd: number;
  status: TurnStatus;
  sessionKey: string;
  /** Why it failed or was aborted. */
  error?: string;
  /** The reply asked for a human (the `[ESCALATE]` marker). */
  escalated?: boolean;
}

export interface Metrics {
  totalMessages: number;
  totalCostUsd: number;
  avgDurationMs: number;
  messagesBySource: Record<string, number>;
}

export interface Store {
  getSession(key: string): SessionRecord | undefined;
  saveSession(record: SessionRecord): void;
  deleteSession(key: string): void;
  listSessions(): SessionRecord[];
  /** Remove sessions (and their history) idle since before `cutoff` (unix ms); returns how many. */
  pruneSessions(cutoff: number): number;

  appendHistory(entry: HistoryEntry): void;
  /** Oldest first; the newest `limit` entries when given. */
  readHistory(key: string, limit?: number): HistoryEntry[];
  clearHistory(key: string): void;

  /** Store the record and fold it into the metrics, atomically. */
  recordActivity(record: ActivityRecord): void;
  /** Newest first. */
  recentActivity(limit: number, filter?: { statuses?: TurnStatus[]; escalated?: boolean }): ActivityRecord[];
  metrics(): Metrics;

  getValue<T>(key: string): T | undefined;
  setValue(key: string, value: unknown): void;

  close(): void;
}

/** History kept per session key; older entries are dropped (the engine keeps its own transcript). */
export const HISTORY_PER_KEY = 200;
/** Activity records kept; metrics are aggregated separately and never lose counts. */
export const ACTIVITY_KEPT = 5000;
