import type {
  AccessGrant,
  AccessKind,
  ActivityRecord,
  ChatSession,
  FailoverState,
  GroupMessage,
  HistoryEntry,
  InboxEntry,
  KnownChat,
  PairingRequest,
  RunningTurn,
  SessionRecord,
  TaskRun,
} from './types.js';
import type { OutboxEntry } from './outbox-types.js';

/**
 * Rows as both databases return them (the same snake_case columns in SQLite and PostgreSQL) read
 * into the store's records, once for both (pure).
 */
export type Row = Record<string, unknown>;

const isAbsent = (v: unknown) => v === null || v === undefined;

export function parseSessionRow(r: Row): SessionRecord {
  return {
    key: String(r.key),
    engine: String(r.engine),
    sessionId: r.session_id === null ? null : String(r.session_id),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    turns: Number(r.turns ?? 0),
  };
}

export function parseActivityRow(r: Row): ActivityRecord {
  return {
    ts: String(r.ts),
    source: String(r.source),
    sender: String(r.sender),
    messagePreview: String(r.message_preview),
    responsePreview: String(r.response_preview),
    durationMs: Number(r.duration_ms),
    costUsd: Number(r.cost_usd),
    status: String(r.status) as ActivityRecord['status'],
    sessionKey: String(r.session_key),
    ...(r.error === null ? {} : { error: String(r.error) }),
    ...(r.escalated ? { escalated: true } : {}),
    ...(isAbsent(r.refused) ? {} : { refused: String(r.refused) as ActivityRecord['refused'] }),
  };
}

export function parseHistoryRow(r: Row): HistoryEntry {
  return {
    key: String(r.key),
    role: r.role as HistoryEntry['role'],
    text: String(r.text),
    ts: Number(r.ts),
    ...(isAbsent(r.status) ? {} : { status: String(r.status) as HistoryEntry['status'] }),
    ...(isAbsent(r.message) ? {} : { message: String(r.message) }),
  };
}

export function parseInboxRow(r: Row): InboxEntry {
  return {
    channel: String(r.channel),
    messageId: String(r.message_id),
    chatKey: String(r.chat_key),
    receivedAt: Number(r.received_at),
    status: String(r.status) as InboxEntry['status'],
    ...(isAbsent(r.payload) ? {} : { payload: String(r.payload) }),
    ...(isAbsent(r.owner) ? {} : { owner: String(r.owner) }),
  };
}

export function parseTaskRunRow(r: Row): TaskRun {
  return {
    taskId: String(r.task_id),
    startedAt: Number(r.started_at),
    endedAt: Number(r.ended_at),
    status: String(r.status) as TaskRun['status'],
    durationMs: Number(r.duration_ms),
    costUsd: Number(r.cost_usd),
    preview: String(r.preview),
    ...(r.error === null ? {} : { error: String(r.error) }),
    ...(r.delivered === null ? {} : { delivered: Boolean(r.delivered) }),
  };
}

export function parseGroupMessageRow(r: Row): GroupMessage {
  return {
    chatKey: String(r.chat_key),
    ...(r.message_id === null ? {} : { messageId: String(r.message_id) }),
    ts: Number(r.ts),
    sender: String(r.sender),
    text: String(r.text),
    fromBot: Boolean(r.from_bot),
  };
}

export function parseKnownChatRow(r: Row): KnownChat {
  return {
    channel: String(r.channel),
    chatId: String(r.chat_id),
    chatType: String(r.chat_type) as KnownChat['chatType'],
    lastSeen: Number(r.last_seen),
    ...(r.fetched_until === null ? {} : { fetchedUntil: Number(r.fetched_until) }),
  };
}

export function parseChatSessionRow(r: Row): ChatSession {
  return {
    chatKey: String(r.chat_key),
    name: String(r.name),
    sessionKey: String(r.session_key),
    createdAt: Number(r.created_at),
    current: Boolean(r.current),
  };
}

export function parsePairingRequestRow(r: Row): PairingRequest {
  return {
    code: String(r.code),
    channel: String(r.channel),
    kind: String(r.kind) as AccessKind,
    id: String(r.subject_id),
    ...(isAbsent(r.requester) ? {} : { requester: String(r.requester) }),
    ...(isAbsent(r.label) ? {} : { label: String(r.label) }),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
  };
}

export function parseGrantRow(r: Row): AccessGrant {
  return {
    channel: String(r.channel),
    kind: String(r.kind) as AccessKind,
    id: String(r.subject_id),
    ...(isAbsent(r.label) ? {} : { label: String(r.label) }),
    approvedAt: Number(r.approved_at),
    approvedBy: String(r.approved_by),
  };
}

export function parseRunningTurnRow(r: Row): RunningTurn {
  return {
    id: Number(r.id),
    owner: { pid: Number(r.owner_pid), start: String(r.owner_start) },
    sessionKey: String(r.session_key),
    source: String(r.source),
    sender: String(r.sender),
    messagePreview: String(r.message_preview),
    startedAt: Number(r.started_at),
    processes: parseProcesses(String(r.processes)),
  };
}

/** The failover row; no row is the primary with no failures. */
export function parseFailoverRow(r: Row | undefined): FailoverState {
  if (!r) return { consecutiveFailures: 0 };
  return { consecutiveFailures: Number(r.consecutive_failures), ...(r.fallback_since === null ? {} : { fallbackSince: Number(r.fallback_since) }) };
}

/** The recorded processes of a running turn; a damaged value reads as none (the turn is still reported). */
function parseProcesses(text: string): Array<{ pid: number; start: string }> {
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) ? v.filter((p): p is { pid: number; start: string } => Number.isInteger(p?.pid) && typeof p?.start === 'string') : [];
  } catch {
    return [];
  }
}

export function parseOutboxRow(r: Row): OutboxEntry {
  return {
    id: Number(r.id),
    channel: String(r.channel),
    kind: r.kind === 'send' ? 'send' : 'reply',
    target: String(r.target),
    targetKey: String(r.target_key),
    chatKey: String(r.chat_key),
    text: String(r.text),
    createdAt: Number(r.created_at),
    nextAttemptAt: Number(r.next_attempt_at),
    attempts: Number(r.attempts ?? 0),
    ...(isAbsent(r.last_error) ? {} : { lastError: String(r.last_error) }),
    status: r.status === 'sending' ? 'sending' : 'waiting',
    ...(isAbsent(r.owner) ? {} : { owner: String(r.owner) }),
    ...(isAbsent(r.claim_until) ? {} : { claimUntil: Number(r.claim_until) }),
  };
}
