import { GrammyError, HttpError } from 'grammy';
import { ChannelError } from '../types.js';

/** Where the Bot API is, and the token every request URL carries (kept out of every message). */
export interface TelegramEndpoint {
  token: string;
  apiRoot: string;
}

/**
 * grammy errors → ChannelError, never showing the bot token. `connecting`: the call checked the
 * token, so a 404 (the Bot API's answer to a malformed token) means `auth`.
 */
export function toTelegramChannelError(name: string, { token, apiRoot }: TelegramEndpoint, e: unknown, what: string, connecting = false): ChannelError {
  if (e instanceof ChannelError) return e;
  if (e instanceof HttpError) {
    // The inner fetch error's message holds the request URL, and with it the bot token.
    const inner = e.error as { code?: unknown; message?: unknown } | undefined;
    const reason =
      typeof inner?.code === 'string'
        ? inner.code
        : String(inner?.message ?? e.message)
            .split(token)
            .join('***');
    return new ChannelError(name, 'network', `${what} failed: cannot reach ${apiRoot} (${reason})`, { cause: e });
  }
  if (!(e instanceof GrammyError)) return new ChannelError(name, 'other', `${what} failed: ${describeTelegramError(e)}`, { cause: e });
  const d = e.description;
  let kind: ChannelError['kind'] = 'other';
  // The Bot API answers 404 to a malformed token, 401 to a wrong one.
  if (e.error_code === 401 || (connecting && e.error_code === 404)) kind = 'auth';
  else if (e.error_code === 429) kind = 'rate_limited';
  else if (isParseError(e)) kind = 'format';
  else if (/too long/i.test(d)) kind = 'too_long';
  else if (/not found/i.test(d)) kind = 'not_found';
  const after = telegramRetryAfter(e);
  const retry = after !== undefined ? ` (retry after ${after} s)` : '';
  const hint = kind === 'auth' ? ' (check the bot token)' : '';
  return new ChannelError(name, kind, `${what} failed: ${e.error_code} ${d}${retry}${hint}`, {
    cause: e,
    ...(after !== undefined ? { retryAfterMs: after * 1000 } : {}),
  });
}

/** The seconds a 429 (Too Many Requests) asks the bot to wait before its next call, when Telegram says. */
export function telegramRetryAfter(e: unknown): number | undefined {
  return e instanceof GrammyError ? e.parameters.retry_after : undefined;
}

/** Telegram could not read the MarkdownV2 entities: the same text goes again as plain text. */
export const isParseError = (e: unknown): boolean => e instanceof GrammyError && e.error_code === 400 && /can't parse entities/i.test(e.description);

/** An edit to the text the message already shows: nothing to do. */
export const isNotModified = (e: unknown): boolean => e instanceof GrammyError && /message is not modified/i.test(e.description);

export function describeTelegramError(e: unknown): string {
  if (e instanceof GrammyError) return `${e.error_code} ${e.description}`;
  return e instanceof Error ? e.message : String(e);
}
