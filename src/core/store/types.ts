/**
 * The state an assistant keeps between turns and across restarts. Asynchronous, so that a store
 * on a server (PostgreSQL, for assistants on several hosts) fits behind the same interfaces as the
 * embedded SQLite file; three implementations (SQLite by default, PostgreSQL with `store.url`,
 * memory for unit tests) pass one contract suite. The embedded ones do their work synchronously
 * inside the call (see `toAsyncStore`), so for them nothing interleaves within one method; every
 * guarantee that spans several statements is one transaction or one conditional statement in
 * each implementation, never a read then a write by the caller.
 */

import type { AccessStore, BudgetStore } from './access-types.js';
import type { CoordinationStore } from './coordination.js';
import type { HistoryStore } from './history-types.js';
import type { ReplyOutboxStore } from './outbox-types.js';

export type { CoordinationStore, LeaseClaim } from './coordination.js';
export type { HistoryEntry, HistoryStore, UnfinishedStatus } from './history-types.js';
export type { AccessGrant, AccessKind, AccessStore, BudgetHold, BudgetStore, HoldResult, OpenPairingResult, PairingRequest } from './access-types.js';
export type { DroppedOutboxEntry, NewOutboxEntry, OutboxEntry, OutboxKind, OutboxStats, ReplyOutboxStore } from './outbox-types.js';

export interface SessionRecord {
  key: string;
  /** The engine that created the session; a session of another engine is never resumed. */
  engine: string;
  /** The engine-native session id (null until the engine told us). */
  sessionId: string | null;
  createdAt: number;
  updatedAt: number;
  /** Turns run on it so far (reads only: counted by `countSessionTurn`; `saveSession` keeps the count). */
  turns?: number;
}

/**
 * A named session of one chat (`/new`, `/switch`…): the chat's base key (a channel's
 * `sessionKeyOf`, the terminal's `--session`) and the session key its turns run on.
 */
export interface ChatSession {
  chatKey: string;
  /** As the user wrote it; names are compared ignoring case. */
  name: string;
  sessionKey: string;
  createdAt: number;
  /** The one the chat's next message runs on. */
  current: boolean;
}

export type TurnStatus = 'completed' | 'silent' | 'failed' | 'aborted';
/** What happened to a message: a turn's ending, or `refused` before any turn ran (see `refused`). */
export type ActivityStatus = TurnStatus | 'refused';
/** Why a message was refused (access control, src/channels/access/ and the daily budget). */
export type RefusalReason = 'not_paired' | 'not_allowed' | 'rate_limited' | 'over_budget' | 'admin_only';

/** One processed message, as the activity feed and the dashboard show it. */
export interface ActivityRecord {
  ts: string;
  source: string;
  sender: string;
  messagePreview: string;
  responsePreview: string;
  durationMs: number;
  costUsd: number;
  status: ActivityStatus;
  sessionKey: string;
  /** Why it failed, was aborted or refused. */
  error?: string;
  /** The reply asked for a human (the `[ESCALATE]` marker). */
  escalated?: boolean;
  /** Status `refused`: the reason (never reached the engine). */
  refused?: RefusalReason;
}

/** Messages and cost in one time bucket of the activity timeline (the dashboard's chart). */
export interface TimelineBucket {
  /** Unix ms where the bucket starts. */
  start: number;
  count: number;
  costUsd: number;
}

export interface Metrics {
  totalMessages: number;
  totalCostUsd: number;
  avgDurationMs: number;
  messagesBySource: Record<string, number>;
}

/** A platform message the bridge has taken in: the ledger that makes redeliveries a no-op, and the inbox. */
export interface InboxEntry {
  channel: string;
  messageId: string;
  /** The session / chat key it belongs to (processing is ordered per key). */
  chatKey: string;
  receivedAt: number;
  status: 'pending' | 'done';
  /** The message itself (JSON), kept while pending when the inbox is on, so a restart can process it. */
  payload?: string;
  /** The run (one gateway process) that took it for processing; a later run takes over what an earlier one left. */
  owner?: string;
}

/** One message of a group chat, answered or not: the context given to group turns. */
export interface GroupMessage {
  chatKey: string;
  /** The platform message id (absent for the bot's own replies). */
  messageId?: string;
  ts: number;
  sender: string;
  text: string;
  fromBot: boolean;
}

export type TaskRunStatus = 'completed' | 'silent' | 'failed' | 'aborted' | 'skipped';

/** One scheduled run of a task (kept per task, the newest TASK_RUNS_KEPT). */
export interface TaskRun {
  taskId: string;
  startedAt: number;
  endedAt: number;
  status: TaskRunStatus;
  durationMs: number;
  costUsd: number;
  /** Start of the reply. */
  preview: string;
  error?: string;
  /** Whether the reply reached the task's target (absent without a target or when nothing was to send). */
  delivered?: boolean;
}

/** A chat a channel has seen, and how far its history was caught up (history fetch). */
export interface KnownChat {
  channel: string;
  chatId: string;
  chatType: 'direct' | 'group';
  /** Unix ms of the newest message seen from it. */
  lastSeen: number;
  /** Unix ms up to which its history was fetched. */
  fetchedUntil?: number;
}

/**
 * The store is split by concern: each consumer asks for the small interface it uses, and one
 * SQLite database (or the memory twin) implements them all.
 */
export interface SessionStore {
  getSession(key: string): Promise<SessionRecord | undefined>;
  /** Insert or update; a key that has a session keeps its `createdAt` (and `turns`): the record's counts only for a new one. */
  saveSession(record: SessionRecord): Promise<void>;
  deleteSession(key: string): Promise<void>;
  listSessions(): Promise<SessionRecord[]>;
  /** One more turn ran on this key's engine session (no-op without a saved session). */
  countSessionTurn(key: string): Promise<void>;
  /**
   * Remove sessions (and their history) idle since before `cutoff` (unix ms), and the named chat
   * sessions left without an engine session that were created before it; returns how many sessions.
   */
  pruneSessions(cutoff: number): Promise<number>;
}

/** The named sessions of each chat (one transaction per change; names compared ignoring case). */
export interface ChatSessionStore {
  /** The chat's named sessions, oldest first. */
  chatSessions(chatKey: string): Promise<ChatSession[]>;
  /** Every chat's named sessions (GET /api/sessions). */
  allChatSessions(): Promise<ChatSession[]>;
  /**
   * Add a named session (made current when `current`, the others then are not); false when the
   * chat has the name already or the session key is in use.
   */
  addChatSession(session: ChatSession): Promise<boolean>;
  /** Make the named session current; false when the chat has no such name. */
  switchChatSession(chatKey: string, name: string): Promise<boolean>;
  /** Rename; false when `from` does not exist or `to` is taken by another session of the chat. */
  renameChatSession(chatKey: string, from: string, to: string): Promise<boolean>;
  /** Remove one; what was removed, or undefined when the chat has no such name. */
  removeChatSession(chatKey: string, name: string): Promise<ChatSession | undefined>;
}

export interface ActivityStore {
  /** Store the record and fold it into the metrics, atomically. */
  recordActivity(record: ActivityRecord): Promise<void>;
  /** Newest first. */
  recentActivity(limit: number, filter?: { statuses?: ActivityStatus[]; escalated?: boolean }): Promise<ActivityRecord[]>;
  metrics(): Promise<Metrics>;
  /**
   * Cost recorded on one local day (`YYYY-MM-DD` in this process's time zone, see
   * `formatLocalDay`): kept per day apart from the bounded activity list, so a flood of refused
   * messages cannot push the day's spending out of sight (the daily budget reads it).
   */
  dailyCost(day: string): Promise<number>;
  /**
   * Kept activity at or after `since` (unix ms) counted in buckets of `bucketMs` starting at
   * `since`; only non-empty buckets, oldest first. Covers what ACTIVITY_KEPT retains.
   */
  activityTimeline(since: number, bucketMs: number): Promise<TimelineBucket[]>;
}

/** The ledger of platform messages taken in (each id once) and, with the inbox on, their payloads until processed. */
export interface InboxLedger {
  /** Take a platform message in once: false when this (channel, messageId) was seen before. */
  claimMessage(entry: Omit<InboxEntry, 'status'>): Promise<boolean>;
  /**
   * Take over a pending message that an earlier run claimed (the recovery pass after a restart):
   * true for exactly one caller, and never for a message this `owner` already holds. The live
   * path and recovery both claim through the store, so no interleaving processes a message twice.
   */
  takeOverMessage(channel: string, messageId: string, owner: string): Promise<boolean>;
  markMessageDone(channel: string, messageId: string): Promise<void>;
  /** Entries still pending (a crash or kill before they were processed), oldest first. */
  pendingMessages(): Promise<InboxEntry[]>;
  /** Forget processed entries (and ledger-only ones, without a payload) received before `cutoff` (unix ms); returns how many. */
  purgeMessages(cutoff: number): Promise<number>;
}

/** What group chats remember: recent messages (context for the next turn) and the bot's consecutive replies. */
export interface GroupStateStore {
  appendGroupMessage(message: GroupMessage): Promise<void>;
  /** Oldest first; the newest `limit`. */
  recentGroupMessages(chatKey: string, limit: number): Promise<GroupMessage[]>;
  /** Consecutive bot replies in a group since a person last wrote (groupChat.maxTurns). */
  groupBotTurns(chatKey: string): Promise<number>;
  setGroupBotTurns(chatKey: string, turns: number): Promise<void>;
  /** One more bot reply, counted in one statement (two turns of one group may end together); returns the new count. */
  addGroupBotTurn(chatKey: string): Promise<number>;
}

export interface TaskRunStore {
  recordTaskRun(run: TaskRun): Promise<void>;
  /**
   * Take the scheduled run of `taskId` at `at` (its cron time, unix ms) once: true for exactly one
   * caller, so a slot is never run twice, however many schedulers (two hosts across a takeover)
   * reach it. Slots older than a week are forgotten on the way.
   */
  claimTaskSlot(taskId: string, at: number): Promise<boolean>;
  /** Newest first. */
  taskRuns(taskId: string, limit: number): Promise<TaskRun[]>;
}

/** Chats each channel has seen, and how far their history was caught up. */
export interface KnownChatStore {
  noteChat(chat: Omit<KnownChat, 'fetchedUntil'>): Promise<void>;
  knownChats(channel: string): Promise<KnownChat[]>;
  setChatFetched(channel: string, chatId: string, until: number): Promise<void>;
}

/** A process by identity: its pid and its start time, so a reused pid is never taken for it. */
export interface ProcessIdentity {
  pid: number;
  /** Start time as the OS reports it (clock ticks since boot on Linux). */
  start: string;
}

/** A turn while it runs, recorded so a process that dies mid-turn leaves a trace the next start can act on. */
export interface RunningTurn {
  id: number;
  /** The process that runs the turn (the gateway, `service chat`...). */
  owner: ProcessIdentity;
  sessionKey: string;
  source: string;
  sender: string;
  messagePreview: string;
  startedAt: number;
  /** The engine's processes (its group and the tool shells it started), as last seen. */
  processes: ProcessIdentity[];
}

export interface RunningTurnStore {
  addRunningTurn(turn: Omit<RunningTurn, 'id' | 'processes'>): Promise<number>;
  setRunningTurnProcesses(id: number, processes: ProcessIdentity[]): Promise<void>;
  /** True for the one caller that removed it (a turn that ended, or a reaper that took it). */
  removeRunningTurn(id: number): Promise<boolean>;
  runningTurns(): Promise<RunningTurn[]>;
}

/** Provider failover state, shared by every process of the assistant and kept across restarts. */
export interface FailoverStore {
  readFailover(): Promise<FailoverState>;
  writeFailover(state: FailoverState): Promise<void>;
}

export interface FailoverState {
  consecutiveFailures: number;
  /** Unix ms since which the fallback is in use; absent while on the primary. */
  fallbackSince?: number;
}

/** Everything one assistant keeps: one database behind every small interface. */
export interface Store
  extends SessionStore,
    ChatSessionStore,
    HistoryStore,
    ActivityStore,
    InboxLedger,
    GroupStateStore,
    TaskRunStore,
    KnownChatStore,
    FailoverStore,
    RunningTurnStore,
    AccessStore,
    BudgetStore,
    ReplyOutboxStore {
  /** Resolves once the store is usable (a server store connected and migrated); rejects with why not. */
  ready(): Promise<void>;
  /** Present on a store that several gateways of the assistant may share (PostgreSQL). */
  readonly coordination?: CoordinationStore;
  close(): Promise<void>;
}

/**
 * The synchronous shape of an async interface: what the embedded stores (better-sqlite3, memory)
 * implement, made async by `toAsyncStore`.
 */
export type SyncOf<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : T[K];
};

/** History kept per session key; older entries are dropped (the engine keeps its own transcript). */
export const HISTORY_PER_KEY = 200;
/** How long a claimed task slot is remembered (longer than any takeover could take). */
export const TASK_SLOTS_KEPT_MS = 7 * 86_400_000;
/** Runs kept per task. */
export const TASK_RUNS_KEPT = 100;
/** Group messages kept per chat (more than any sensible groupChat.historyLimit). */
export const GROUP_MESSAGES_PER_CHAT = 200;
/** Activity records kept; metrics are aggregated separately and never lose counts. */
export const ACTIVITY_KEPT = 5000;
/**
 * Records of strangers' messages (refused as `not_paired` or `not_allowed`) kept, apart from the
 * ACTIVITY_KEPT others: a flood of strangers never pushes out escalations or approved people's turns.
 */
export const STRANGER_ACTIVITY_KEPT = 500;

/** Whether an activity record is a stranger's message (kept apart, see STRANGER_ACTIVITY_KEPT). */
export function isStrangerRecord(r: Pick<ActivityRecord, 'refused'>): boolean {
  return r.refused === 'not_paired' || r.refused === 'not_allowed';
}
