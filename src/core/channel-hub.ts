/**
 * What the HTTP server and the scheduler need from the channel layer, as an interface in core:
 * server/ never imports channels/ (STYLE §2.1); the gateway command passes the real hub in.
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

export type SendResult =
  | { ok: true }
  | { ok: false; status: 404; error: string; availableChannels: string[] }
  | { ok: false; status: 501 | 502 | 503; error: string };

export interface ChannelHub {
  /** Every built-in channel plus custom ones, with their state. */
  statuses(): ChannelStatus[];
  /** Channels with a running adapter, and whether each can send proactively. */
  list(): Array<{ name: string; canSend: boolean }>;
  /** Proactive send (POST /api/send, task targets). */
  send(channel: string, chatId: string, text: string): Promise<SendResult>;
}

/** A hub with nothing configured: every built-in channel `not_configured`. */
export function createEmptyHub(builtin: readonly string[]): ChannelHub {
  return {
    statuses: () => builtin.map((type) => ({ type, status: 'not_configured' as const })),
    list: () => [],
    send: async () => ({ ok: false, status: 503, error: 'no channel adapters are available' }),
  };
}
