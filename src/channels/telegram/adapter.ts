import { Bot, GrammyError, HttpError, type Transformer } from 'grammy';
import type { CallbackQuery, Message } from 'grammy/types';
import type { Logger } from '../../core/logger.js';
import { withTimeout } from '../../core/util/timeout.js';
import type { ApprovalPrompt } from '../approval-prompt.js';
import { createLifecycle } from '../lifecycle.js';
import {
  ChannelError,
  type ChannelAdapter,
  type ChannelContext,
  type ChannelDeps,
  type InboundFile,
  type InboundImage,
  type OutboundFile,
  type ReplyTarget,
  type SentMessage,
} from '../types.js';
import { formatTelegramApprovalKeyboard, normaliseTelegramCallback } from './approval.js';
import { renderTelegramMarkdownV2, renderTelegramPlain } from './format.js';
import { mimeFromPath, nativeMessageId, normaliseTelegramMessage, type TelegramIdentity } from './inbound.js';
import { downloadTelegramFile, sendTelegramFile, TELEGRAM_MAX_UPLOAD_BYTES, type TelegramFileAccess } from './media.js';

/**
 * channel_e: Telegram with grammy's long polling. Traps handled here: `bot.start()` runs getMe
 * before it has an abort signal (so against an unreachable API it retries forever, even after
 * stop), hence our own `init()` with a deadline first; `start()` rejects on 401/409 after we are
 * running (reported as `failed`); `stop()` throws if its final getUpdates fails (swallowed).
 * Long polling has no connection to watch, so an API transformer watches getUpdates instead.
 */

export interface TelegramOptions {
  botToken: string;
  apiRoot?: string | undefined;
}

const DEFAULT_API_ROOT = 'https://api.telegram.org';
const INIT_TIMEOUT_MS = 30_000;
const STOP_WAIT_MS = 5000;
/** Pictures sent to a bot are small; what the Bot API lets a bot download at all. */
const IMAGE_MAX_BYTES = 20 * 1024 * 1024;

type Sendable = Parameters<Bot['api']['sendMessage']>[2];

export async function createTelegramAdapter(opts: TelegramOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  // --- state ---
  const name = deps.name;
  const lifecycle = createLifecycle(name, { connect, release });
  const token = opts.botToken;
  const apiRoot = (opts.apiRoot ?? DEFAULT_API_ROOT).replace(/\/+$/, '');
  let log: Logger = deps.log;
  let ctx: ChannelContext | undefined;
  let bot: Bot | undefined;
  let me: TelegramIdentity | undefined;
  let running: Promise<void> | undefined;
  let initAbort: AbortController | undefined;
  let polling: 'starting' | 'up' | 'down' = 'starting';
  let firstPoll: (() => void) | undefined;

  // --- connection ---

  async function connect(context: ChannelContext, signal: AbortSignal): Promise<void> {
    ctx = context;
    log = context.log;
    polling = 'starting';
    const b = new Bot(token, { client: { apiRoot } });
    b.api.config.use(watchPolling);
    // Middleware is registered before start(): grammy forbids `use` once polling runs.
    b.on('message', (x) => onMessage(x.msg));
    b.on('callback_query:data', (x) => onPress(x.callbackQuery));
    b.catch((err) => log.warn(`update handling failed: ${describe(err.error)}`));
    bot = b;

    const abort = new AbortController();
    initAbort = abort;
    const timer = setTimeout(() => abort.abort(), INIT_TIMEOUT_MS);
    let identity: TelegramIdentity;
    try {
      // grammy types the signal as the abort-controller polyfill's; the native one works at runtime.
      await b.init(abort.signal as Parameters<Bot['init']>[0]);
      identity = { id: b.botInfo.id, username: b.botInfo.username };
      me = identity;
    } catch (e) {
      if (signal.aborted) throw e; // stop() aborted getMe
      throw abort.signal.aborted
        ? new ChannelError(name, 'network', `no answer from ${apiRoot} within ${INIT_TIMEOUT_MS / 1000} s (getMe)`, { cause: e })
        : toError(e, 'checking the bot token (getMe)', true);
    } finally {
      clearTimeout(timer);
      initAbort = undefined;
    }
    signal.throwIfAborted();

    // Resolves on the first answered getUpdates (see watchPolling): a real round trip, not just setup.
    await new Promise<void>((resolve, reject) => {
      let started = false;
      firstPoll = () => {
        started = true;
        resolve();
      };
      running = b.start({ allowed_updates: ['message', 'callback_query'] }).then(
        () => {
          if (!started) reject(new ChannelError(name, 'other', 'polling stopped before it started'));
        },
        (e: unknown) => {
          const err = toError(e, 'long polling', true);
          if (!started) return reject(err);
          if (lifecycle.signal.aborted) return;
          // 401: the token was revoked; 409: another process polls with this token.
          const why = e instanceof GrammyError && e.error_code === 409 ? 'another process is polling with this bot token (409 Conflict)' : err.message;
          ctx?.onStatus({ state: 'failed', reason: why });
        },
      );
    });
    log.info(`connected as @${identity.username}`);
  }

  async function release(): Promise<void> {
    initAbort?.abort();
    if (bot?.isRunning()) {
      try {
        await bot.stop();
      } catch (e) {
        log.debug(`final getUpdates failed: ${describe(e)}`);
      }
    }
    // The polling loop may be inside grammy's fixed 3 s back-off; wait for it to end.
    if (running) await withTimeout(running, STOP_WAIT_MS);
  }

  /**
   * Observes getUpdates: a failed poll is a drop. The first poll, and the first after a drop, ask
   * with timeout 0 before the long poll, because a held poll proves the link only when it returns.
   */
  const watchPolling: Transformer = async (prev, method, payload, signal) => {
    if (method !== 'getUpdates') return prev(method, payload, signal);
    try {
      if (polling !== 'up' && !lifecycle.signal.aborted) {
        const quick = await prev(method, { ...payload, timeout: 0 } as typeof payload, signal);
        if (!quick.ok) return quick;
        setPolling('up');
        if ((quick.result as unknown[]).length > 0) return quick;
      }
      const res = await prev(method, payload, signal);
      if (res.ok) setPolling('up');
      else if (res.error_code >= 500) setPolling('down', res.description);
      return res;
    } catch (e) {
      if (!signal?.aborted) setPolling('down', describe(e));
      throw e;
    }
  };

  function setPolling(state: 'up' | 'down', reason?: string): void {
    if (lifecycle.signal.aborted || polling === state) return;
    const was = polling;
    polling = state;
    if (was === 'starting') {
      if (state === 'up') firstPoll?.();
      // A failing first poll is retried by grammy; start() keeps waiting (the hub has a deadline).
      else polling = 'starting';
      return;
    }
    if (state === 'down') ctx?.onStatus({ state: 'disconnected', reason: `getUpdates failed: ${reason ?? 'unknown error'}` });
    else ctx?.onStatus({ state: 'connected' });
  }

  // --- inbound ---

  /** grammy confirms an update (next offset) only after this returns, i.e. after the hand-over. */
  async function onMessage(msg: Message): Promise<void> {
    if (!me || !ctx) return;
    const m = normaliseTelegramMessage(name, msg, me);
    if (!m) return;
    try {
      await ctx.onMessage(m);
    } catch (e) {
      // Telegram cannot leave one update unconfirmed without stalling every later one.
      log.error(`could not hand over message ${m.messageId}: ${describe(e)}`);
    }
  }

  /**
   * An approval button was pressed: its command goes in as a message from the presser, then the
   * query is answered (the client shows a spinner on the button until then). The keyboard stays:
   * a press by someone who may not answer must leave the buttons to the person who may.
   */
  async function onPress(query: CallbackQuery): Promise<void> {
    if (!ctx) return;
    const m = normaliseTelegramCallback(name, query);
    try {
      if (m) await ctx.onMessage(m);
    } catch (e) {
      log.error(`could not hand over button press ${query.id}: ${describe(e)}`);
    }
    try {
      await bot?.api.answerCallbackQuery(query.id, m ? { text: `Sent ${m.text}` } : {});
    } catch (e) {
      log.debug(`answerCallbackQuery failed: ${describe(e)}`);
    }
  }

  // --- outbound ---

  function api(what: string): Bot['api'] {
    lifecycle.assertStarted(what);
    if (!bot) throw new ChannelError(name, 'not_connected', `${what}: not connected`);
    return bot.api;
  }

  async function sendText(what: 'reply' | 'send' | 'askApproval', chatId: string, markdown: string, extra: Sendable): Promise<SentMessage | undefined> {
    const client = api(what);
    const text = renderTelegramMarkdownV2(markdown);
    if (!text.trim()) return undefined;
    const sent = (m: Message) => ({ chatId: String(m.chat.id), messageId: String(m.message_id) });
    try {
      return sent(await client.sendMessage(chatId, text, { ...extra, parse_mode: 'MarkdownV2' }));
    } catch (e) {
      if (!isParseError(e)) throw toError(e, `${what} to ${chatId}`);
      log.warn(`Telegram refused the formatting (${describe(e)}); sending plain text`);
    }
    try {
      return sent(await client.sendMessage(chatId, renderTelegramPlain(markdown), extra));
    } catch (e) {
      throw toError(e, `${what} to ${chatId} (plain text)`);
    }
  }

  function toError(e: unknown, what: string, connecting = false): ChannelError {
    return toTelegramChannelError(name, { token, apiRoot }, e, what, connecting);
  }

  const files = (what: string): TelegramFileAccess => ({ name, token, apiRoot, api: api(what), toError: (e, w) => toError(e, w) });

  return {
    name,
    // Telegram counts 4096 characters after entity parsing; rendered MarkdownV2 is never shorter.
    limit: { max: 4096, unit: 'chars' },
    render: renderTelegramMarkdownV2,
    start: lifecycle.start,
    stop: lifecycle.stop,

    reply: (to: ReplyTarget, markdown: string) => sendText('reply', to.chatId, markdown, replyExtra(to)),

    askApproval: (to: ReplyTarget, prompt: ApprovalPrompt) =>
      sendText('askApproval', to.chatId, prompt.text, { ...replyExtra(to), reply_markup: formatTelegramApprovalKeyboard(prompt) }),

    send: (chatId: string, markdown: string) => sendText('send', chatId, markdown, {}),

    async edit(message: SentMessage, markdown: string) {
      const client = api('edit');
      const text = renderTelegramMarkdownV2(markdown);
      if (!text.trim()) return;
      const id = Number(message.messageId);
      try {
        await client.editMessageText(message.chatId, id, text, { parse_mode: 'MarkdownV2' });
        return;
      } catch (e) {
        if (isNotModified(e)) return;
        if (!isParseError(e)) throw toError(e, `edit of ${message.messageId}`);
      }
      try {
        await client.editMessageText(message.chatId, id, renderTelegramPlain(markdown));
      } catch (e) {
        if (!isNotModified(e)) throw toError(e, `edit of ${message.messageId} (plain text)`);
      }
    },

    async typing(to: ReplyTarget) {
      if (!lifecycle.isStarted() || !bot) return;
      try {
        await bot.api.sendChatAction(to.chatId, 'typing', to.threadId ? { message_thread_id: Number(to.threadId) } : {});
      } catch (e) {
        log.debug(`typing failed: ${describe(e)}`);
      }
    },

    async downloadImage(image: InboundImage) {
      const { data, path } = await downloadTelegramFile(files('downloadImage'), image.ref, IMAGE_MAX_BYTES);
      // Photos come without a type; Telegram re-encodes them as JPEG.
      return { data, mimeType: image.mimeType ?? mimeFromPath(path) ?? 'image/jpeg' };
    },

    async downloadFile(file: InboundFile, opts: { maxBytes: number }) {
      const { data } = await downloadTelegramFile(files('downloadFile'), file.ref, opts.maxBytes);
      return { data, mimeType: file.mimeType ?? 'application/octet-stream' };
    },

    maxFileBytes: TELEGRAM_MAX_UPLOAD_BYTES,

    async sendFile(to: ReplyTarget, file: OutboundFile) {
      const m = await sendTelegramFile(files('sendFile'), to, file);
      return { chatId: String(m.chat.id), messageId: String(m.message_id) };
    },
  };
}

// --- internal ---

/** Quote the message answered, in its forum topic. */
function replyExtra(to: ReplyTarget): Sendable {
  const id = nativeMessageId(to.messageId);
  return {
    ...(id ? { reply_parameters: { message_id: id, allow_sending_without_reply: true } } : {}),
    ...(to.threadId ? { message_thread_id: Number(to.threadId) } : {}),
  };
}

/** grammy errors → ChannelError, never showing the bot token. */
function toTelegramChannelError(
  name: string,
  { token, apiRoot }: { token: string; apiRoot: string },
  e: unknown,
  what: string,
  connecting: boolean,
): ChannelError {
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
  if (!(e instanceof GrammyError)) return new ChannelError(name, 'other', `${what} failed: ${describe(e)}`, { cause: e });
  const d = e.description;
  let kind: ChannelError['kind'] = 'other';
  // The Bot API answers 404 to a malformed token, 401 to a wrong one.
  if (e.error_code === 401 || (connecting && e.error_code === 404)) kind = 'auth';
  else if (e.error_code === 429) kind = 'rate_limited';
  else if (isParseError(e)) kind = 'format';
  else if (/too long/i.test(d)) kind = 'too_long';
  else if (/not found/i.test(d)) kind = 'not_found';
  const retry = e.parameters.retry_after !== undefined ? ` (retry after ${e.parameters.retry_after} s)` : '';
  const hint = kind === 'auth' ? ' (check the bot token)' : '';
  const retryAfterMs = e.parameters.retry_after !== undefined ? e.parameters.retry_after * 1000 : undefined;
  return new ChannelError(name, kind, `${what} failed: ${e.error_code} ${d}${retry}${hint}`, {
    cause: e,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
}

const isParseError = (e: unknown): boolean => e instanceof GrammyError && e.error_code === 400 && /can't parse entities/i.test(e.description);
const isNotModified = (e: unknown): boolean => e instanceof GrammyError && /message is not modified/i.test(e.description);

function describe(e: unknown): string {
  if (e instanceof GrammyError) return `${e.error_code} ${e.description}`;
  return e instanceof Error ? e.message : String(e);
}
