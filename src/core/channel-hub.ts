/**
 * What the HTTP server and the scheduler need from the channel layer, as an interface in core:
 * server/ never imports channels/ (STYLE §2.1); the composition root passes the real hub in.
 * Outcomes are plain words, not HTTP statuses: the HTTP route maps them, the scheduler records them.
 */
export type ChannelState = 'connected' | 'failed' | 'not_configured';

export interface ChannelStatus {
  type: string;
  status: ChannelState;
  /** The platform's name ('Slack'), filled by the channel layer so the dashboard need not know the keys. */
  title?: string;
  /** Why it failed (for logs and the dashboard; never a secret). */
  reason?: string;
}

export type SendFailure =
  /** No channel of that name is configured. */
  | 'not_found'
  /** The channel's adapter cannot send proactively. */
  | 'unsupported'
  /** The channel is configured but not connected now. */
  | 'not_connected'
  /** No channel is configured at all. */
  | 'no_channels'
  /** The platform refused or the send failed. */
  | 'failed';

export type SendOutcome =
  /** `queued`: not delivered yet, kept in the reply outbox and retried (why it waits). */
  | { ok: true; queued?: string }
  | { ok: false; reason: 'not_found'; error: string; availableChannels: string[] }
  | { ok: false; reason: Exclude<SendFailure, 'not_found'>; error: string };

export interface ChannelHub {
  /** Every built-in channel plus custom ones, with their state. */
  statuses(): ChannelStatus[];
  /** Channels with a running adapter, and whether each can send proactively. */
  list(): Array<{ name: string; canSend: boolean }>;
  /** Proactive send (POST /api/send, task targets). */
  send(channel: string, chatId: string, text: string): Promise<SendOutcome>;
}

/** A hub with nothing configured: every built-in channel `not_configured`. */
export function createEmptyHub(builtin: readonly string[]): ChannelHub {
  return {
    statuses: () => builtin.map((type) => ({ type, status: 'not_configured' as const })),
    list: () => [],
    send: async () => ({ ok: false, reason: 'no_channels', error: 'no channel adapters are available' }),
  };
}
