import type { FileInput } from '../files/incoming.js';
import type { RefusalReason } from '../store/types.js';
import type { ImageInput } from './images.js';

/** What a caller passes with a turn, and what the assistant reports about itself (see assistant.ts). */
export interface ChatOptions {
  sessionKey?: string;
  /** A chat's base key (channels, the terminal): the turn runs on the chat's current named session. Wins over sessionKey. */
  chatKey?: string;
  images?: readonly ImageInput[];
  /** Documents: saved into the workspace (`inbox/<day>/`) and named in the prompt. */
  files?: readonly FileInput[];
  /** `http`, a channel key, `cron`, `terminal`... (activity and metrics). */
  source?: string;
  sender?: string;
  /** `<channel>:<userId>` of who started the turn from a chat: they (or an admin) answer its approvals. */
  caller?: string;
  /**
   * Whether the person in the chat who started the turn is an admin (`access.admins`). A turn with
   * no `caller` (HTTP API, terminal, scheduled task) is the owner's, and counts as an admin's.
   */
  admin?: boolean;
  /** Whether someone can answer approval requests (false for scheduled tasks: such tools are denied at once). */
  askApprovals?: boolean;
  /**
   * What the person wrote, for the activity feed, when the prompt is built around it (a group
   * turn's prompt carries the chat's recent messages); the prompt itself by default.
   */
  messageText?: string;
  /** Aborts this turn (waiting or running). */
  signal?: AbortSignal;
  /**
   * Wait for a free slot instead of failing with "Server busy" / "Too many pending requests".
   * For callers whose messages are already durable (the channel bridge, the scheduler).
   */
  waitForCapacity?: boolean;
}

/** Whether an admin (or the owner) started the turn: only then may it touch the assistant's own files. */
export function startedByAdmin(opts: Pick<ChatOptions, 'caller' | 'admin'>): boolean {
  return opts.caller === undefined || opts.admin === true;
}

export interface CommandOptions {
  sessionKey?: string;
  /** As in ChatOptions: the chat whose named sessions /new, /switch… act on. */
  chatKey?: string;
  /** Whether /engine, /model, /cron run… may change the configuration (not from a channel). */
  allowConfigChanges?: boolean;
  source?: string;
  sender?: string;
  /** `<channel>:<userId>` of who runs it from a chat (an approval keeps it). */
  caller?: string;
  /** The chat it came from (channel and chat id): where /remind and /task deliver. */
  chat?: { channel: string; chatId: string };
}

/** A message refused before any turn ran (access control): recorded as activity like a turn. */
export interface Refusal {
  source: string;
  sender: string;
  sessionKey: string;
  /** What the person wrote. */
  message: string;
  reason: RefusalReason;
  /** Why, for the activity feed (the pairing code sent, the limit hit...). */
  detail: string;
  /** What they were told ('' when nothing was sent). */
  reply: string;
}

export interface AssistantStatus {
  name: string;
  engine: string;
  model: string;
  version: string;
  uptime: number;
  running: number;
  waiting: number;
  /** Tool calls waiting for a person's answer (approvals), in every session. */
  approvalsWaiting: number;
}
