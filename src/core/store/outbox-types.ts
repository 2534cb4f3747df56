/**
 * The store's reply outbox (see types.ts for the rest): replies a platform refused, kept until
 * they are delivered, given up (`replyRetryHours`), or found in doubt after a crash. Each entry
 * is sent by one gateway at a time (a claim with a lease), and a conversation's entries go out
 * in the order they were kept.
 */

/** Where an entry goes: a reply to a message (its reply target, as JSON) or a proactive send to a chat id. */
export type OutboxKind = 'reply' | 'send';

export interface OutboxEntry {
  id: number;
  channel: string;
  kind: OutboxKind;
  /** The reply target as JSON (`reply`), or the chat id (`send`). */
  target: string;
  /** One conversation (a chat, or a thread of it): its entries are sent in id order, one at a time. */
  targetKey: string;
  /** The session or chat it belongs to, for the activity log. */
  chatKey: string;
  /** One message's text (Markdown), already under the platform's limit. */
  text: string;
  createdAt: number;
  /** The next attempt's time; the entry is not sent before it. */
  nextAttemptAt: number;
  attempts: number;
  lastError?: string;
  /** `sending` while a gateway (its `owner`, until `claimUntil`) attempts it. */
  status: 'waiting' | 'sending';
  owner?: string;
  claimUntil?: number;
}

export type NewOutboxEntry = Pick<OutboxEntry, 'channel' | 'kind' | 'target' | 'targetKey' | 'chatKey' | 'text' | 'createdAt' | 'nextAttemptAt'>;

/** An entry taken out of the outbox without being delivered. */
export interface DroppedOutboxEntry extends OutboxEntry {
  /** `expired`: still refused after `replyRetryHours`; `in_doubt`: a gateway stopped while sending it (it may have arrived). */
  reason: 'expired' | 'in_doubt';
}

export interface OutboxStats {
  /** Entries not delivered yet (being sent included). */
  waiting: number;
  /** The oldest entry's createdAt, or null. */
  oldestAt: number | null;
  /** The earliest time anything is due: a waiting entry's next attempt, or a claim's end. */
  nextAt: number | null;
}

export interface ReplyOutboxStore {
  addOutboxEntry(entry: NewOutboxEntry): Promise<number>;
  /**
   * Claim for `owner` until `claimUntil` the due entries (`nextAttemptAt` at or before `now`) that
   * lead their conversation (no older entry of their `targetKey` is left), oldest first, at most
   * `limit`: each entry for exactly one caller, however many gateways claim at once.
   */
  claimOutboxEntries(owner: string, now: number, claimUntil: number, limit: number): Promise<OutboxEntry[]>;
  /** Delivered: the entry goes; true for the owner that held it. */
  finishOutboxEntry(id: number, owner: string): Promise<boolean>;
  /**
   * Refused again: waiting until `nextAttemptAt`, one more attempt counted, with why; `text` is
   * what is left to send when the first parts of a long entry went out.
   */
  retryOutboxEntry(id: number, owner: string, nextAttemptAt: number, error: string, text?: string): Promise<void>;
  /**
   * Take out, for the activity log, what will not be sent: waiting entries created before
   * `expiredBefore`, and entries whose claim ran out before `now` (the gateway sending them
   * stopped mid-attempt: the platform may have taken them, so they are never sent again).
   */
  dropOutboxEntries(now: number, expiredBefore: number): Promise<DroppedOutboxEntry[]>;
  /** The conversations with entries waiting (their new replies queue behind them). */
  outboxTargets(): Promise<string[]>;
  outboxStats(): Promise<OutboxStats>;
}
