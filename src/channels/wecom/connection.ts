import { format } from 'node:util';
import { type Logger as SdkLogger, type TemplateCard, WSClient, type WsFrame } from '@wecom/aibot-node-sdk';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { LifecycleSteps } from '../lifecycle.js';
import { type ChannelContext, ChannelError } from '../types.js';
import { formatAnsweredCard } from './approval.js';
import { toWecomChannelError } from './errors.js';
import { type CallbackFrame, type CardEventFrame, normalizeCallback, normalizeCardEvent } from './inbound.js';

/** channel_c options, as validated by the definition in index.ts. */
export interface WecomOptions {
  botId: string;
  secret: string;
  /** The long-connection endpoint (the SDK's `wsUrl`); wss://openws.work.weixin.qq.com by default. */
  websocketUrl?: string | undefined;
}

/** Timing knobs; production uses the defaults, tests shorten them. */
export interface WecomTuning {
  /** Base reconnect delay; the SDK doubles it per attempt up to 30 s. */
  reconnectMs?: number;
  heartbeatMs?: number;
  /** Refused subscribes before the SDK gives up (reported as `failed`). */
  maxAuthFailureAttempts?: number;
}

/** stop() waits this long for the socket to report closed. */
const CLOSE_GRACE_MS = 2_000;

type Status = 'connected' | 'disconnected' | 'failed';

/**
 * The connection side of channel_c: the AI bot's websocket (the SDK's WSClient subscribes, beats
 * and reconnects by itself; we turn its events into statuses), and the callbacks and card presses
 * it brings in. WeCom has no acknowledgement frame: the first reply frame is what stops re-pushes.
 */
export class WecomConnection implements LifecycleSteps {
  /** The adapter's logger until connect(), the context's from then on. */
  log: Logger;
  /** The SDK client (replies and files go over the same socket); undefined once stopped. */
  client: WSClient | undefined;
  private readonly name: string;
  private readonly opts: WecomOptions;
  private readonly tuning: WecomTuning;
  /** Approval cards sent, by task_id (a press updates its card for the presser). */
  private readonly cards: ReadonlyMap<string, TemplateCard>;
  private ctx: ChannelContext | undefined;
  private pendingStart: { resolve: () => void; reject: (err: Error) => void } | undefined;
  private last: { state: string; reason?: string } = { state: 'idle' };
  /** Why the last subscribe was refused, until one succeeds. */
  private lastAuthError: string | undefined;
  /** WeCom said another connection took this bot over. */
  private kicked = false;

  constructor(name: string, opts: WecomOptions, tuning: WecomTuning, log: Logger, cards: ReadonlyMap<string, TemplateCard>) {
    this.name = name;
    this.opts = opts;
    this.tuning = tuning;
    this.log = log;
    this.cards = cards;
  }

  async connect(ctx: ChannelContext): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.last = { state: 'starting' };
    const { opts, tuning } = this;
    // A fresh WSClient per adapter: after the SDK gives up it ignores connect() until disconnect().
    const wc = new WSClient({
      botId: opts.botId,
      secret: opts.secret,
      wsUrl: opts.websocketUrl ?? '',
      logger: sdkLogger(this.log),
      reconnectInterval: tuning.reconnectMs ?? 1_000,
      maxReconnectAttempts: -1, // drops are retried forever (backoff capped at 30 s by the SDK)
      maxAuthFailureAttempts: tuning.maxAuthFailureAttempts ?? 5,
      heartbeatInterval: tuning.heartbeatMs ?? 30_000,
    });
    this.client = wc;
    this.wireEvents(wc);
    await new Promise<void>((resolve, reject) => {
      this.pendingStart = { resolve, reject };
      wc.connect(); // synchronous; the outcome arrives as 'authenticated' or 'error'
    });
  }

  async release(): Promise<void> {
    const wc = this.client;
    this.client = undefined;
    this.settleStart(new ChannelError(this.name, 'network', 'stopped before connecting'));
    this.last = { state: 'idle' };
    if (!wc) return;
    const closed = wc.isConnected
      ? new Promise<void>((resolve) => {
          const t = setTimeout(resolve, CLOSE_GRACE_MS);
          wc.once('disconnected', () => {
            clearTimeout(t);
            resolve();
          });
        })
      : undefined;
    wc.disconnect(); // terminates the socket; clears heartbeat, receipt timers and the reconnect timer
    await closed;
    wc.removeAllListeners();
  }

  // --- connection events ---

  private wireEvents(c: WSClient): void {
    this.lastAuthError = undefined;
    this.kicked = false;
    c.on('authenticated', () => this.onAuthenticated());
    // Always listened to: eventemitter3 drops an unheard 'error' silently, and we want the reason.
    c.on('error', (err: Error & { code?: string }) => this.onError(err));
    c.on('event.disconnected_event', () => {
      this.kicked = true;
    });
    c.on('disconnected', (reason: string) => this.onDisconnected(reason));
    c.on('reconnecting', (attempt: number) => this.log.debug(`reconnecting (attempt ${attempt})`));
    c.on('message', (frame) => {
      void this.onCallback(frame);
    });
    c.on('event.template_card_event', (frame) => {
      void this.onCardEvent(frame as CardEventFrame);
    });
  }

  private onAuthenticated(): void {
    this.lastAuthError = undefined;
    this.kicked = false;
    if (this.pendingStart) {
      this.last = { state: 'connected' };
      this.settleStart();
    } else {
      this.report('connected');
    }
  }

  private onError(err: Error & { code?: string }): void {
    if (err.code === 'WS_AUTH_FAILURE_EXHAUSTED' || err.code === 'WS_RECONNECT_EXHAUSTED') {
      const reason = `${this.lastAuthError ?? 'connection failed'}; gave up (${err.message})`;
      this.settleStart(new ChannelError(this.name, this.lastAuthError ? 'auth' : 'network', reason));
      this.report('failed', reason); // permanent: the SDK stopped retrying
      return;
    }
    if (err.message.startsWith('Authentication failed')) {
      this.lastAuthError = err.message;
      // start() fails fast with the reason; the SDK retries a few times and a later success is
      // reported as 'connected', exhaustion as 'failed'.
      if (this.pendingStart) {
        this.last = { state: 'failed', reason: err.message };
        this.settleStart(new ChannelError(this.name, 'auth', err.message));
      } else if (this.last.state !== 'failed') {
        this.report('disconnected', err.message);
      }
      return;
    }
    if (this.pendingStart) {
      this.last = { state: 'failed', reason: err.message };
      this.settleStart(new ChannelError(this.name, 'network', `cannot connect to ${this.opts.websocketUrl ?? 'WeCom'}: ${err.message}`));
    } else {
      this.log.debug(`websocket error: ${err.message}`);
    }
  }

  private onDisconnected(reason: string): void {
    if (!this.client) return; // stop() in progress
    // Another connection subscribed with this bot: WeCom allows one, and the SDK stays down by
    // design (reconnecting would only kick the other one out). Permanent until restarted.
    if (this.kicked) this.report('failed', `another connection took over this bot: ${reason}`);
    else if (this.last.state !== 'failed') this.report('disconnected', reason);
  }

  private settleStart(err?: Error): void {
    const p = this.pendingStart;
    this.pendingStart = undefined;
    if (err) p?.reject(err);
    else p?.resolve();
  }

  private report(state: Status, reason?: string): void {
    if (this.last.state === state && this.last.reason === reason) return;
    this.last = reason === undefined ? { state } : { state, reason };
    this.ctx?.onStatus(reason === undefined ? { state } : { state, reason });
  }

  // --- inbound ---

  private async onCallback(frame: WsFrame): Promise<void> {
    const msg = normalizeCallback(this.name, frame as CallbackFrame);
    if (!msg) {
      this.log.info(
        `ignoring a ${String((frame.body as { msgtype?: string } | undefined)?.msgtype)} message: text, voice, pictures, mixed and files are supported`,
      );
      return;
    }
    try {
      // WeCom has no acknowledgement frame: the first reply frame is what stops re-pushes.
      await this.ctx?.onMessage(msg);
    } catch (err) {
      this.log.warn(`message ${msg.messageId} not accepted (WeCom will push it again): ${errorMessage(err)}`);
    }
  }

  /**
   * A press on an approval card: the card is updated for the presser at once (WeCom allows it only
   * within 5 s of the event, on the event's req_id), then the press goes to the bridge as a message.
   */
  private async onCardEvent(frame: CardEventFrame): Promise<void> {
    const press = normalizeCardEvent(this.name, frame);
    if (!press) {
      this.log.debug('ignoring a template_card_event that is not an approval answer');
      return;
    }
    const card = this.cards.get(press.taskId);
    const presser = press.message.senderId;
    if (card && this.client && frame.headers?.req_id) {
      this.client
        .updateTemplateCard({ headers: { req_id: frame.headers.req_id } }, formatAnsweredCard(card), [presser])
        .catch((err: unknown) => this.log.debug(`card update for ${press.taskId}: ${toWecomChannelError(this.name, err, 'aibot_respond_update_msg').message}`));
    }
    try {
      await this.ctx?.onMessage(press.message);
    } catch (err) {
      this.log.warn(`card press ${press.message.messageId} not accepted: ${errorMessage(err)}`);
    }
  }
}

/**
 * The SDK logs every connection step at info and every drop at warn; those reach the operator as
 * statuses already, so they go to debug. SDK errors (a frame it could not parse, …) stay visible.
 */
function sdkLogger(log: Logger): SdkLogger {
  const line = (message: string, args: unknown[]) => `sdk: ${format(message, ...args)}`;
  return {
    debug: (m, ...a) => log.debug(line(m, a)),
    info: (m, ...a) => log.debug(line(m, a)),
    warn: (m, ...a) => log.debug(line(m, a)),
    error: (m, ...a) => log.warn(line(m, a)),
  };
}
