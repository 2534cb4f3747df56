import { ChannelError } from '../types.js';

/**
 * Lark failures → ChannelError. The SDK throws axios errors whose body is `{code, msg}` (HTTP 400
 * for business errors); a 200 with a non-zero `code` is possible too, so callers check `code`
 * (see `unwrap`). Codes are from the Open Platform error list; the ones only seen in third-party
 * reports are marked in the fake (test/fakes/platforms/channel-a-lark-state.ts).
 */
export function toLarkChannelError(channel: string, what: string, err: unknown): ChannelError {
  if (err instanceof ChannelError) return err;
  const { code, msg, status } = describe(err);
  const detail = code !== undefined ? `${msg} (code ${code})` : msg;
  const kind: ChannelError['kind'] =
    code !== undefined && FORMAT_CODES.has(code)
      ? code === 230025
        ? 'too_long'
        : 'format'
      : code !== undefined && AUTH_CODES.has(code)
        ? 'auth'
        : code !== undefined && NOT_FOUND_CODES.has(code)
          ? 'not_found'
          : (code !== undefined && RATE_CODES.has(code)) || status === 429
            ? 'rate_limited'
            : code === undefined && status === undefined
              ? 'network'
              : 'other';
  return new ChannelError(channel, kind, `${what}: ${detail}`, { cause: err });
}

/** Refusals a plain `text` message may get past: bad post/card content, content over the post/card size. */
export function isFormatRefusal(err: unknown): boolean {
  const { code } = describe(err);
  return code !== undefined && FORMAT_CODES.has(code);
}

/** The Lark `code` of a failed call, if it got that far. */
export function larkCode(err: unknown): number | undefined {
  return describe(err).code;
}

/** Throws unless a REST answer is `{code: 0}`; returns its `data`. */
export function unwrap<T>(res: { code?: number; msg?: string; data?: T }): T | undefined {
  if (res.code !== undefined && res.code !== 0) throw new LarkApiError(res.code, res.msg ?? 'error');
  return res.data;
}

export class LarkApiError extends Error {
  constructor(
    readonly code: number,
    msg: string,
  ) {
    super(msg);
    this.name = 'LarkApiError';
  }
}

// --- internal ---

/** 230001 invalid parameter (the SDK itself classifies it as a format error), 230025 too long, 230099 bad card, 9499 / 99992402 body validation. */
const FORMAT_CODES = new Set([230001, 230025, 230099, 9499, 99992402]);
/** Token missing / invalid / expired, app secret invalid, no permission, bot not in the chat. */
const AUTH_CODES = new Set([99991661, 99991663, 99991664, 99991668, 99991672, 10014, 230027, 230002]);
/** Message recalled or deleted, resource not in the message, chat not found. */
const NOT_FOUND_CODES = new Set([230011, 231003, 234003, 230006, 232010]);
const RATE_CODES = new Set([99991400, 230020]);

function describe(err: unknown): { code?: number; msg: string; status?: number } {
  if (err instanceof LarkApiError) return { code: err.code, msg: err.message };
  const e = err as { message?: unknown; response?: { status?: number; data?: { code?: unknown; msg?: unknown } } };
  const data = e?.response?.data;
  const status = e?.response?.status;
  const msg = typeof data?.msg === 'string' ? data.msg : typeof e?.message === 'string' ? e.message : String(err);
  return {
    ...(typeof data?.code === 'number' ? { code: data.code } : {}),
    msg,
    ...(typeof status === 'number' ? { status } : {}),
  };
}
