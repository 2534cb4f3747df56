import { ChannelError } from '../types.js';

/**
 * The SDK rejects on a non-zero errcode with the raw receipt frame `{headers, errcode, errmsg}`
 * (not an Error), and with plain Errors for timeouts and closed sockets. One ChannelError for all.
 * Codes: 846605 invalid req_id (replying on another connection, or unknown), 846608 stream update
 * expired, 846609 not subscribed, 40058 content too long (the fake's guess), 45009/45033 rate limits.
 */
export function toWecomChannelError(channel: string, err: unknown, what: string): ChannelError {
  if (err instanceof ChannelError) return err;
  if (err && typeof err === 'object' && 'errcode' in err) {
    const { errcode, errmsg } = err as { errcode?: unknown; errmsg?: unknown };
    const code = Number(errcode);
    const text = `${what}: errcode ${String(errcode)} ${String(errmsg ?? '')}`.trim();
    const kind: ChannelError['kind'] =
      code === 846605 || code === 846608
        ? 'not_found'
        : code === 40058 || /too long|exceed|超过/i.test(String(errmsg))
          ? 'too_long'
          : code === 45009 || code === 45033
            ? 'rate_limited'
            : code === 846609
              ? 'network'
              : 'other';
    return new ChannelError(channel, kind, text, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  const kind: ChannelError['kind'] = /ack timeout|not connected|connection closed|manually closed|disconnected/i.test(message)
    ? 'network'
    : /queue .*exceeds/i.test(message)
      ? 'rate_limited'
      : 'other';
  return new ChannelError(channel, kind, `${what}: ${message}`, { cause: err });
}
