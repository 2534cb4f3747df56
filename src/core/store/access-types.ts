/**
 * The store's access-control concerns (see types.ts for the rest): pairings and approvals, and
 * the holds running turns keep on the daily budget.
 */

/** Who pairs: a direct-message sender, or a group chat as a whole. */
export type AccessKind = 'sender' | 'chat';

/** A pairing code handed to an unknown sender or group, waiting for the owner's approval. */
export interface PairingRequest {
  code: string;
  channel: string;
  kind: AccessKind;
  /** The sender's or the chat's platform id. */
  id: string;
  /**
   * The platform id of the person who asked (the sender of a direct message; in a group, who
   * mentioned the bot): live requests are counted per requester too. Absent on requests made
   * before it was kept.
   */
  requester?: string;
  /** A display name, for the owner (the sender's name). */
  label?: string;
  createdAt: number;
  expiresAt: number;
}

/** An approved pairing: this sender (everywhere on the channel) or this chat (everyone in it) may use the assistant. */
export interface AccessGrant {
  channel: string;
  kind: AccessKind;
  id: string;
  label?: string;
  approvedAt: number;
  /** Who approved it: `cli`, `http`, `chat:<channel>:<id>`… */
  approvedBy: string;
}

export type OpenPairingResult =
  | { status: 'existing' | 'created'; request: PairingRequest }
  /** The channel already has `maxPending` live requests. */
  | { status: 'full' }
  /** The requester already has `maxPerRequester` live requests on the channel (for other senders or chats). */
  | { status: 'requester_full' }
  /** The new code is taken by a live request (pick another). */
  | { status: 'collision' };

/**
 * Pairings and approvals, shared by the gateway and `service access` in another process: the
 * gateway reads grants per message, so an approval made anywhere applies to the next message.
 */
export interface AccessStore {
  /**
   * The live request of this sender or chat, else a new one under `code` while the channel has
   * fewer than `maxPending` live ones and the requester fewer than `maxPerRequester`; expired
   * requests are dropped first. One transaction.
   */
  openPairing(
    request: Omit<PairingRequest, 'code' | 'expiresAt'>,
    opts: { code: string; ttlMs: number; maxPending: number; maxPerRequester?: number },
  ): Promise<OpenPairingResult>;
  /** Live requests (not expired at `now`), oldest first. */
  pairingRequests(now: number): Promise<PairingRequest[]>;
  /** Turn a live request into a grant, atomically; undefined when no live request has this code. */
  approvePairing(code: string, now: number, approvedBy: string): Promise<AccessGrant | undefined>;
  /** Drop a live request; undefined when none has this code. */
  denyPairing(code: string, now: number): Promise<PairingRequest | undefined>;
  isGranted(channel: string, kind: AccessKind, id: string): Promise<boolean>;
  /** Oldest first. */
  accessGrants(): Promise<AccessGrant[]>;
  /** Remove the grants of this channel and id (of either kind); returns what was removed. */
  revokeGrant(channel: string, id: string): Promise<AccessGrant[]>;
}

/** A running turn's hold on one day's budget (core/access/budget-holds.ts). */
export interface BudgetHold {
  /** Chosen by the caller (unique). */
  id: string;
  /** The local day (`YYYY-MM-DD`, as `dailyCost` takes it) whose budget it holds. */
  day: string;
  amountUsd: number;
  /** Unix ms after which it no longer counts: the turn's process died before letting it go. */
  expiresAt: number;
}

export type HoldResult =
  | { held: true }
  /** Nothing held: what the day spent and what running turns hold reach the cap. */
  | { held: false; spentUsd: number; heldUsd: number };

/**
 * The daily budget as turns start (issue 29): a turn may start while the day's recorded cost plus
 * what running turns hold is below the cap, and then holds its own estimate until it ended. With
 * a store several gateways share, they share the holds: the check and the hold are one
 * transaction (on PostgreSQL under an advisory lock), so turns starting together on two hosts
 * see each other.
 */
export interface BudgetStore {
  /** Hold `hold.amountUsd` when spent + held (holds not expired at `now`) < `capUsd`; expired holds are dropped first. */
  holdBudget(hold: BudgetHold, capUsd: number, now: number): Promise<HoldResult>;
  /** Let a hold go (its turn ended and its cost is recorded); a hold already gone is no error. */
  releaseBudget(id: string): Promise<void>;
}
