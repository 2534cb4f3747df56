import type { LogLevel, Logger as SlackLogger } from '@slack/bolt';
import type { Logger } from '../../core/logger.js';
import { ChannelError } from '../types.js';

/**
 * @slack/web-api errors → ChannelError. Duck-typed on `code` / `data.error` so this module needs
 * no runtime SDK import.
 */

const AUTH = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'no_permission',
  'missing_scope',
  'not_allowed_token_type',
  'user_removed_from_team',
  'team_disabled',
  'ekm_access_denied',
]);
const NOT_FOUND = new Set([
  'channel_not_found',
  'message_not_found',
  'thread_not_found',
  'user_not_found',
  'not_in_channel',
  'is_archived',
  'file_not_found',
  'cant_update_message',
]);

export function slackErrorCode(err: unknown): string | undefined {
  const data = (err as { data?: { error?: unknown } } | undefined)?.data;
  return typeof data?.error === 'string' ? data.error : undefined;
}

export function toSlackChannelError(channel: string, err: unknown, what: string): ChannelError {
  if (err instanceof ChannelError) return err;
  const code = slackErrorCode(err);
  const sdkCode = (err as { code?: unknown } | undefined)?.code;
  let kind: ChannelError['kind'] = 'other';
  if (code && AUTH.has(code)) kind = 'auth';
  else if (code && NOT_FOUND.has(code)) kind = 'not_found';
  else if (code === 'msg_too_long' || code === 'msg_blocks_too_long') kind = 'too_long';
  else if (code === 'ratelimited' || sdkCode === 'slack_webapi_rate_limited_error' || slackRetryAfter(err) !== undefined) kind = 'rate_limited';
  else if (sdkCode === 'slack_webapi_request_error' || sdkCode === 'slack_webapi_http_error') kind = 'network';
  const detail = code ?? describe(err);
  const hint = kind === 'auth' ? " (check the token and the app's scopes)" : '';
  const after = slackRetryAfter(err);
  return new ChannelError(channel, kind, `${what} failed: ${detail}${hint}`, { cause: err, ...(after !== undefined ? { retryAfterMs: after * 1000 } : {}) });
}

/**
 * Seconds Slack asked to wait (its 429's Retry-After), where the SDK gave up on a rate-limited call:
 * WebAPIRateLimitedError carries them; when the WebClient already waited and retried, the last
 * refusal arrives as a request error whose message names them.
 */
export function slackRetryAfter(err: unknown): number | undefined {
  const own = (err as { retryAfter?: unknown } | undefined)?.retryAfter;
  if (typeof own === 'number') return own;
  const m = /rate limit was exceeded.*retry-after: (\d+)/i.exec(describe(err));
  return m ? Number(m[1]) : undefined;
}

/** A readable reason from anything the SDK throws (socket-mode rejects with `undefined` on a closed socket). */
export function describe(err: unknown): string {
  if (err === undefined || err === null) return 'the connection closed before Slack said hello';
  const original = (err as { original?: unknown }).original;
  if (original instanceof Error) return original.message;
  return err instanceof Error ? err.message : String(err);
}

/** The `@slack/logger` shape over our logger. SDK errors become warnings: the adapter reports outcomes. */
export function sdkLogger(log: Logger, level: LogLevel): SlackLogger {
  const line = (m: unknown[]) => m.map((x) => (x instanceof Error ? x.message : typeof x === 'string' ? x : safeJson(x))).join(' ');
  return {
    debug: (...m: unknown[]) => log.debug(line(m)),
    info: (...m: unknown[]) => log.debug(line(m)),
    warn: (...m: unknown[]) => log.warn(line(m)),
    error: (...m: unknown[]) => log.warn(line(m)),
    setLevel: () => {},
    // A fixed INFO keeps the SDK from building debug-only payload dumps on every ack.
    getLevel: () => level,
    setName: () => {},
  };
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
