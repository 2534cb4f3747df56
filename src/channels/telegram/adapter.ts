import { Bot, GrammyError, HttpError, type Transformer } from 'grammy';
import type { Message } from 'grammy/types';
import type { Logger } from '../../core/logger.js';
import { ChannelError, type ChannelAdapter, type ChannelContext, type ChannelDeps, type InboundImage, type ReplyTarget, type SentMessage } from '../types.js';
import { renderTelegramMarkdownV2, renderTelegramPlain } from './format.js';
import { mimeFromPath, nativeMessageId, normaliseTelegramMessage, type TelegramIdentity } from './inbound.js';
import { withTimeout } from '../../core/util/timeout.js';

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
const DOWNLOAD_TIMEOUT_MS = 30_000;

type Sendable = Parameters<Bot['api']['sendMessage']>[2];

export async function createTelegramAdapter(opts: TelegramOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  return new TelegramAdapter(opts, deps);
}

class TelegramAdapter implements ChannelAdapter {
  readonly name: string;
  // Telegram counts 4096 characters after entity parsing; rendered MarkdownV2 is never shorter.
  readonly limit = { max: 4096, unit: 'chars' as const };
  private readonly token: string;
  private readonly apiRoot: string;
  private log: Logger;
  private ctx: ChannelContext | undefined;
  private bot: Bot | undefined;
  private me: TelegramIdentity | undefined;
  private running: Promise<void> | undefined;
  private initAbort: AbortController | undefined;
  private stopping = false;
  private polling: 'starting' | 'up' | 'down' = 'starting';
  private firstPoll: (() => void) | undefined;

  constructor(opts: TelegramOptions, deps: ChannelDeps) {
    this.token = opts.botToken;
    this.apiRoot = (opts.apiRoot ?? DEFAULT_API_ROOT).replace(/\/+$/, '');
    this.name = deps.name;
    this.log = deps.log;
  }

  render(markdown: string): string {
    return renderTelegramMarkdownV2(markdown);
  }

  async start(ctx: ChannelContext): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.stopping = false;
    this.polling = 'starting';
    const bot = new Bot(this.token, { client: { apiRoot: this.apiRoot } });
    bot.api.config.use(this.watchPolling);
    // Middleware is registered before start(): grammy forbids `use` once polling runs.
    bot.on('message', (c) => this.onMessage(c.msg));
    bot.catch((err) => this.log.warn(`update handling failed: ${describe(err.error)}`));
    this.bot = bot;

    const abort = new AbortController();
    this.initAbort = abort;
    const timer = setTimeout(() => abort.abort(), INIT_TIMEOUT_MS);
    try {
      // grammy types the signal as the abort-controller polyfill's; the native one works at runtime.
      await bot.init(abort.signal as Parameters<Bot['init']>[0]);
      this.me = { id: bot.botInfo.id, username: bot.botInfo.username };
    } catch (e) {
      if (this.stopping) throw new ChannelError(this.name, 'other', 'stopped while starting', { cause: e });
      throw abort.signal.aborted
        ? new ChannelError(this.name, 'network', `no answer from ${this.apiRoot} within ${INIT_TIMEOUT_MS / 1000} s (getMe)`, { cause: e })
        : this.toError(e, 'checking the bot token (getMe)', true);
    } finally {
      clearTimeout(timer);
      this.initAbort = undefined;
    }
    if (this.stopping) throw new ChannelError(this.name, 'other', 'stopped while starting');

    // Resolves on the first answered getUpdates (see watchPolling): a real round trip, not just setup.
    await new Promise<void>((resolve, reject) => {
      let started = false;
      this.firstPoll = () => {
        started = true;
        resolve();
      };
      this.running = bot.start({ allowed_updates: ['message'] }).then(
        () => {
          if (!started) reject(new ChannelError(this.name, 'other', 'polling stopped before it started'));
        },
        (e: unknown) => {
          const err = this.toError(e, 'long polling', true);
          if (!started) return reject(err);
          if (this.stopping) return;
          // 401: the token was revoked; 409: another process polls with this token.
          const why = e instanceof GrammyError && e.error_code === 409 ? 'another process is polling with this bot token (409 Conflict)' : err.message;
          this.ctx?.onStatus({ state: 'failed', reason: why });
        },
      );
    });
    this.log.info(`connected as @${this.me.username}`);
  }

  /**
   * Observes getUpdates: a failed poll is a drop. The first poll, and the first after a drop, ask
   * with timeout 0 before the long poll, because a held poll proves the link only when it returns.
   */
  private readonly watchPolling: Transformer = async (prev, method, payload, signal) => {
    if (method !== 'getUpdates') return prev(method, payload, signal);
    try {
      if (this.polling !== 'up' && !this.stopping) {
        const quick = await prev(method, { ...payload, timeout: 0 } as typeof payload, signal);
        if (!quick.ok) return quick;
        this.setPolling('up');
        if ((quick.result as unknown[]).length > 0) return quick;
      }
      const res = await prev(method, payload, signal);
      if (res.ok) this.setPolling('up');
      else if (res.error_code >= 500) this.setPolling('down', res.description);
      return res;
    } catch (e) {
      if (!signal?.aborted) this.setPolling('down', describe(e));
      throw e;
    }
  };

  private setPolling(state: 'up' | 'down', reason?: string): void {
    if (this.stopping || this.polling === state) return;
    const was = this.polling;
    this.polling = state;
    if (was === 'starting') {
      if (state === 'up') this.firstPoll?.();
      // A failing first poll is retried by grammy; start() keeps waiting (the bridge has a deadline).
      else this.polling = 'starting';
      return;
    }
    if (state === 'down') this.ctx?.onStatus({ state: 'disconnected', reason: `getUpdates failed: ${reason ?? 'unknown error'}` });
    else this.ctx?.onStatus({ state: 'connected' });
  }

  /** grammy confirms an update (next offset) only after this returns, i.e. after the hand-over. */
  private async onMessage(msg: Message): Promise<void> {
    if (!this.me || !this.ctx) return;
    const m = normaliseTelegramMessage(this.name, msg, this.me);
    if (!m) return;
    try {
      await this.ctx.onMessage(m);
    } catch (e) {
      // Telegram cannot leave one update unconfirmed without stalling every later one.
      this.log.error(`could not hand over message ${m.messageId}: ${describe(e)}`);
    }
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.initAbort?.abort();
    const bot = this.bot;
    if (bot?.isRunning()) {
      try {
        await bot.stop();
      } catch (e) {
        this.log.debug(`final getUpdates failed: ${describe(e)}`);
      }
    }
    // The polling loop may be inside grammy's fixed 3 s back-off; wait for it to end.
    if (this.running) await withTimeout(this.running, STOP_WAIT_MS);
  }

  private api(): Bot['api'] {
    if (!this.bot) throw new ChannelError(this.name, 'other', 'not started');
    return this.bot.api;
  }

  async reply(to: ReplyTarget, markdown: string): Promise<SentMessage | undefined> {
    const id = nativeMessageId(to.messageId);
    return this.sendText(
      to.chatId,
      markdown,
      {
        ...(id ? { reply_parameters: { message_id: id, allow_sending_without_reply: true } } : {}),
        ...(to.threadId ? { message_thread_id: Number(to.threadId) } : {}),
      },
      'reply',
    );
  }

  async send(chatId: string, markdown: string): Promise<SentMessage | undefined> {
    return this.sendText(chatId, markdown, {}, 'send');
  }

  private async sendText(chatId: string, markdown: string, extra: Sendable, what: string): Promise<SentMessage | undefined> {
    const text = this.render(markdown);
    if (!text.trim()) return undefined;
    const sent = (m: Message) => ({ chatId: String(m.chat.id), messageId: String(m.message_id) });
    try {
      return sent(await this.api().sendMessage(chatId, text, { ...extra, parse_mode: 'MarkdownV2' }));
    } catch (e) {
      if (!isParseError(e)) throw this.toError(e, `${what} to ${chatId}`);
      this.log.warn(`Telegram refused the formatting (${describe(e)}); sending plain text`);
    }
    try {
      return sent(await this.api().sendMessage(chatId, renderTelegramPlain(markdown), extra));
    } catch (e) {
      throw this.toError(e, `${what} to ${chatId} (plain text)`);
    }
  }

  async edit(message: SentMessage, markdown: string): Promise<void> {
    const text = this.render(markdown);
    if (!text.trim()) return;
    const id = Number(message.messageId);
    try {
      await this.api().editMessageText(message.chatId, id, text, { parse_mode: 'MarkdownV2' });
      return;
    } catch (e) {
      if (isNotModified(e)) return;
      if (!isParseError(e)) throw this.toError(e, `edit of ${message.messageId}`);
    }
    try {
      await this.api().editMessageText(message.chatId, id, renderTelegramPlain(markdown));
    } catch (e) {
      if (!isNotModified(e)) throw this.toError(e, `edit of ${message.messageId} (plain text)`);
    }
  }

  async typing(to: ReplyTarget): Promise<void> {
    try {
      await this.api().sendChatAction(to.chatId, 'typing', to.threadId ? { message_thread_id: Number(to.threadId) } : {});
    } catch (e) {
      this.log.debug(`typing failed: ${describe(e)}`);
    }
  }

  async downloadImage(image: InboundImage): Promise<{ data: Buffer; mimeType: string }> {
    let path: string | undefined;
    try {
      path = (await this.api().getFile(image.ref)).file_path;
    } catch (e) {
      throw this.toError(e, 'getFile');
    }
    if (!path) throw new ChannelError(this.name, 'not_found', 'getFile returned no file_path (file too big for the Bot API?)');
    let res: Response;
    try {
      res = await fetch(`${this.apiRoot}/file/bot${this.token}/${path}`, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
    } catch (e) {
      // Not describe(e) of a URL: the download URL contains the bot token.
      throw new ChannelError(this.name, 'network', `downloading ${path} failed`, { cause: e });
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new ChannelError(
        this.name,
        res.status === 404 ? 'not_found' : res.status === 401 ? 'auth' : 'other',
        `downloading ${path} failed: HTTP ${res.status}`,
      );
    }
    const data = Buffer.from(await res.arrayBuffer());
    // Photos come without a type; Telegram re-encodes them as JPEG.
    return { data, mimeType: image.mimeType ?? mimeFromPath(path) ?? 'image/jpeg' };
  }

  private toError(e: unknown, what: string, connecting = false): ChannelError {
    if (e instanceof ChannelError) return e;
    if (e instanceof HttpError) {
      // The inner fetch error's message holds the request URL, and with it the bot token.
      const inner = e.error as { code?: unknown; message?: unknown } | undefined;
      const reason =
        typeof inner?.code === 'string'
          ? inner.code
          : String(inner?.message ?? e.message)
              .split(this.token)
              .join('***');
      return new ChannelError(this.name, 'network', `${what} failed: cannot reach ${this.apiRoot} (${reason})`, { cause: e });
    }
    if (!(e instanceof GrammyError)) return new ChannelError(this.name, 'other', `${what} failed: ${describe(e)}`, { cause: e });
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
    return new ChannelError(this.name, kind, `${what} failed: ${e.error_code} ${d}${retry}${hint}`, { cause: e });
  }
}

const isParseError = (e: unknown): boolean => e instanceof GrammyError && e.error_code === 400 && /can't parse entities/i.test(e.description);
const isNotModified = (e: unknown): boolean => e instanceof GrammyError && /message is not modified/i.test(e.description);

function describe(e: unknown): string {
  if (e instanceof GrammyError) return `${e.error_code} ${e.description}`;
  return e instanceof Error ? e.message : String(e);
}
