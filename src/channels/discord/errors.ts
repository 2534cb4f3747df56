import { DiscordAPIError, HTTPError, RateLimitError } from 'discord.js';
import { ChannelError } from '../types.js';

/**
 * Discord failures → ChannelError kinds the bridge can act on. Discord has no "cannot parse
 * formatting" refusal (content is shown as typed), so nothing maps to `format`: an over-long
 * content is `too_long` (50035 with BASE_TYPE_MAX_LENGTH), which the bridge avoids by splitting at
 * `limit`.
 */
export function toDiscordChannelError(channel: string, what: string, err: unknown): ChannelError {
  if (err instanceof ChannelError) return err;
  const fail = (kind: ChannelError['kind'], detail: string) => new ChannelError(channel, kind, `${what}: ${detail}`, { cause: err });
  if (err instanceof DiscordAPIError) {
    const detail = `${err.message.replace(/\s*\n\s*/g, '; ')} (code ${err.code}, HTTP ${err.status})`;
    if (err.code === 50035 && JSON.stringify(err.rawError).includes('BASE_TYPE_MAX_LENGTH')) return fail('too_long', detail);
    if (NOT_FOUND.has(Number(err.code)) || err.status === 404) return fail('not_found', detail);
    if (err.status === 401 || err.status === 403) return fail('auth', detail);
    if (err.status === 429) return fail('rate_limited', detail);
    return fail('other', detail);
  }
  if (err instanceof RateLimitError) {
    return new ChannelError(channel, 'rate_limited', `${what}: rate limited, retry after ${err.retryAfter} ms`, { cause: err, retryAfterMs: err.retryAfter });
  }
  if (err instanceof HTTPError) return fail(err.status >= 500 ? 'network' : 'other', `HTTP ${err.status} ${err.message}`);
  const message = err instanceof Error ? err.message : String(err);
  if (/invalid token/i.test(message)) return fail('auth', `${message} Check channels.channel_f.botToken.`);
  if (isNetworkError(err)) return fail('network', message);
  return fail('other', message);
}

/** Why the gateway stopped for good, for `onStatus('failed')` and start's rejection. */
export function describeCloseCode(code: number): string {
  const hint = CLOSE_HINTS[code];
  return `the gateway closed the connection with ${code}${hint ? ` (${hint})` : ''}; discord.js does not reconnect after it`;
}

// --- internal ---

/** Unknown channel / message / user / guild, and "cannot send messages to this user" (DMs closed). */
const NOT_FOUND = new Set([10003, 10004, 10008, 10013, 50007]);

const CLOSE_HINTS: Record<number, string> = {
  4004: 'authentication failed: the bot token is invalid or was reset',
  4010: 'invalid shard',
  4011: 'sharding required',
  4012: 'invalid API version',
  4013: 'invalid intents',
  4014: 'disallowed intents: enable the Message Content intent under Bot → Privileged Gateway Intents in the Developer Portal',
};

function isNetworkError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'AbortError' || err.name === 'TimeoutError' || /fetch failed|socket|ECONN|ETIMEDOUT|ENOTFOUND/i.test(err.message)) return true;
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && cause !== err && isNetworkError(cause);
}
