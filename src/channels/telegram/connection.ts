import { Bot, GrammyError, type Transformer } from 'grammy';
import type { CallbackQuery, Message } from 'grammy/types';
import type { Logger } from '../../core/logger.js';
import { withTimeout } from '../../core/util/timeout.js';
import type { LifecycleSteps } from '../lifecycle.js';
import { type ChannelContext, ChannelError } from '../types.js';
import { normaliseTelegramCallback } from './approval.js';
import { describeTelegramError as describe, type TelegramEndpoint, toTelegramChannelError } from './errors.js';
import { normaliseTelegramMessage, type TelegramIdentity } from './inbound.js';

const INIT_TIMEOUT_MS = 30_000;
const STOP_WAIT_MS = 5000;

/**
 * The connection side of channel_e: the token check, grammy's long polling, and the updates it
 * brings in. Traps handled here: `bot.start()` runs getMe before it has an abort signal (so
 * against an unreachable API it retries forever, even after stop), hence our own `init()` with a
 * deadline first; `start()` rejects on 401/409 after we are running (reported as `failed`);
 * `stop()` throws if its final getUpdates fails (swallowed). Long polling has no connection to
 * watch, so an API transformer watches getUpdates instead.
 */
export class TelegramConnection implements LifecycleSteps {
  /** The adapter's logger until connect(), the context's from then on. */
  log: Logger;
  private readonly name: string;
  private readonly endpoint: TelegramEndpoint;
  private ctx: ChannelContext | undefined;
  /** The lifecycle's stop signal, from connect(). */
  private stopped: AbortSignal | undefined;
  private bot: Bot | undefined;
  private me: TelegramIdentity | undefined;
  private running: Promise<void> | undefined;
  private initAbort: AbortController | undefined;
  private polling: 'starting' | 'up' | 'down' = 'starting';
  private firstPoll: (() => void) | undefined;

  constructor(name: string, endpoint: TelegramEndpoint, log: Logger) {
    this.name = name;
    this.endpoint = endpoint;
    this.log = log;
  }

  /** The Bot API client, once connect() built it. */
  get api(): Bot['api'] | undefined {
    return this.bot?.api;
  }

  async connect(ctx: ChannelContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.stopped = signal;
    this.polling = 'starting';
    const bot = this.createBot();
    this.bot = bot;
    const identity = await this.checkToken(bot, signal);
    signal.throwIfAborted();
    await this.startPolling(bot);
    this.log.info(`connected as @${identity.username}`);
  }

  async release(): Promise<void> {
    this.initAbort?.abort();
    if (this.bot?.isRunning()) {
      try {
        await this.bot.stop();
      } catch (e) {
        this.log.debug(`final getUpdates failed: ${describe(e)}`);
      }
    }
    // The polling loop may be inside grammy's fixed 3 s back-off; wait for it to end.
    if (this.running) await withTimeout(this.running, STOP_WAIT_MS);
  }

  // --- connecting ---

  private createBot(): Bot {
    const bot = new Bot(this.endpoint.token, { client: { apiRoot: this.endpoint.apiRoot } });
    bot.api.config.use(this.watchPolling);
    // Middleware is registered before start(): grammy forbids `use` once polling runs.
    bot.on('message', (x) => this.onMessage(x.msg));
    bot.on('callback_query:data', (x) => this.onPress(x.callbackQuery));
    bot.catch((err) => this.log.warn(`update handling failed: ${describe(err.error)}`));
    return bot;
  }

  /** getMe with a deadline (grammy's own has none), cut short by stop(). */
  private async checkToken(bot: Bot, signal: AbortSignal): Promise<TelegramIdentity> {
    const abort = new AbortController();
    this.initAbort = abort;
    const timer = setTimeout(() => abort.abort(), INIT_TIMEOUT_MS);
    try {
      // grammy types the signal as the abort-controller polyfill's; the native one works at runtime.
      await bot.init(abort.signal as Parameters<Bot['init']>[0]);
      this.me = { id: bot.botInfo.id, username: bot.botInfo.username };
      return this.me;
    } catch (e) {
      if (signal.aborted) throw e; // stop() aborted getMe
      throw abort.signal.aborted
        ? new ChannelError(this.name, 'network', `no answer from ${this.endpoint.apiRoot} within ${INIT_TIMEOUT_MS / 1000} s (getMe)`, { cause: e })
        : this.toError(e, 'checking the bot token (getMe)');
    } finally {
      clearTimeout(timer);
      this.initAbort = undefined;
    }
  }

  /** Resolves on the first answered getUpdates (see watchPolling): a real round trip, not just setup. */
  private startPolling(bot: Bot): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let started = false;
      this.firstPoll = () => {
        started = true;
        resolve();
      };
      this.running = bot.start({ allowed_updates: ['message', 'callback_query'] }).then(
        () => {
          if (!started) reject(new ChannelError(this.name, 'other', 'polling stopped before it started'));
        },
        (e: unknown) => {
          const err = this.toError(e, 'long polling');
          if (!started) return reject(err);
          if (this.stopped?.aborted) return;
          // 401: the token was revoked; 409: another process polls with this token.
          const why = e instanceof GrammyError && e.error_code === 409 ? 'another process is polling with this bot token (409 Conflict)' : err.message;
          this.ctx?.onStatus({ state: 'failed', reason: why });
        },
      );
    });
  }

  private toError(e: unknown, what: string): ChannelError {
    return toTelegramChannelError(this.name, this.endpoint, e, what, true);
  }

  // --- watching the link ---

  /**
   * Observes getUpdates: a failed poll is a drop. The first poll, and the first after a drop, ask
   * with timeout 0 before the long poll, because a held poll proves the link only when it returns.
   */
  private readonly watchPolling: Transformer = async (prev, method, payload, signal) => {
    if (method !== 'getUpdates') return prev(method, payload, signal);
    try {
      if (this.polling !== 'up' && !this.stopped?.aborted) {
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
    if (this.stopped?.aborted || this.polling === state) return;
    const was = this.polling;
    this.polling = state;
    if (was === 'starting') {
      if (state === 'up') this.firstPoll?.();
      // A failing first poll is retried by grammy; start() keeps waiting (the hub has a deadline).
      else this.polling = 'starting';
      return;
    }
    if (state === 'down') this.ctx?.onStatus({ state: 'disconnected', reason: `getUpdates failed: ${reason ?? 'unknown error'}` });
    else this.ctx?.onStatus({ state: 'connected' });
  }

  // --- inbound ---

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

  /**
   * An approval button was pressed: its command goes in as a message from the presser, then the
   * query is answered (the client shows a spinner on the button until then). The keyboard stays:
   * a press by someone who may not answer must leave the buttons to the person who may.
   */
  private async onPress(query: CallbackQuery): Promise<void> {
    if (!this.ctx) return;
    const m = normaliseTelegramCallback(this.name, query);
    try {
      if (m) await this.ctx.onMessage(m);
    } catch (e) {
      this.log.error(`could not hand over button press ${query.id}: ${describe(e)}`);
    }
    try {
      await this.bot?.api.answerCallbackQuery(query.id, m ? { text: `Sent ${m.text}` } : {});
    } catch (e) {
      this.log.debug(`answerCallbackQuery failed: ${describe(e)}`);
    }
  }
}
