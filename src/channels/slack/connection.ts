import { LogLevel, SocketModeReceiver, webApi } from '@slack/bolt';
import type { Logger } from '../../core/logger.js';
import { withTimeout } from '../../core/util/timeout.js';
import { BoundedMap } from '../bounded-map.js';
import type { LifecycleSteps } from '../lifecycle.js';
import type { ChannelContext } from '../types.js';
import { normaliseSlackBlockAction, type SlackBlockActions } from './approval.js';
import { describe, sdkLogger, toSlackChannelError } from './errors.js';
import { normaliseSlackMessage, slackMessageId, type SlackIdentity, type SlackMessageEvent } from './inbound.js';

/** Options of channel_d as validated by index.ts. */
export interface SlackOptions {
  botToken: string;
  appToken: string;
  apiUrl?: string | undefined;
}

/** Delays between reconnect attempts; the last one repeats. */
const BACKOFF_MS = [300, 1000, 2000, 5000, 10_000, 30_000];
const HTTP_TIMEOUT_MS = 30_000;
const STOP_WAIT_MS = 5000;
const NAME_LOOKUP_MS = 1500;
const SEEN_MAX = 1000;

type Envelope = {
  ack: (response?: Record<string, unknown>) => Promise<void>;
  type: string;
  body?: { event?: SlackMessageEvent; event_id?: string } & SlackBlockActions;
};

/**
 * The connection side of channel_d: the bot token check, the Socket Mode socket and its reconnects,
 * and the envelopes it brings in. Bolt's `App` is deliberately not used: it acknowledges every
 * Events API envelope before any listener runs, while the channel contract is to acknowledge only
 * after the bridge took the message. So this drives Bolt's SocketModeReceiver (its socket client)
 * and a WebClient itself: auth.test up front (no constructor-time call), its own reconnect loop
 * instead of socket-mode's (whose auto-reconnect turns a revoked token into an unhandled
 * rejection), and an ack per envelope once `onMessage` resolved.
 */
export class SlackConnection implements LifecycleSteps {
  /** The adapter's logger until connect(), the context's from then on. */
  log: Logger;
  /** The Web API client (outbound calls share it), once connect() built it. */
  web: webApi.WebClient | undefined;
  /** Who the bot is, once auth.test answered. */
  me: SlackIdentity | undefined;
  private readonly name: string;
  private readonly opts: SlackOptions;
  private ctx: ChannelContext | undefined;
  /** The lifecycle's stop signal, from connect(). */
  private stopped: AbortSignal | undefined;
  private receiver: SocketModeReceiver | undefined;
  private state: 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'failed' | 'stopped' = 'idle';
  private attempt: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** `${channel}:${ts}` → event_id of the envelope that was handed over (see onEvent). */
  private readonly seen = new BoundedMap<string, string>(SEEN_MAX);
  private readonly names = new Map<string, string | undefined>();

  constructor(name: string, opts: SlackOptions, log: Logger) {
    this.name = name;
    this.opts = opts;
    this.log = log;
  }

  async connect(ctx: ChannelContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.stopped = signal;
    this.state = 'connecting';
    const identity = await this.checkToken();
    signal.throwIfAborted();
    const r = new SocketModeReceiver({
      appToken: this.opts.appToken,
      logger: sdkLogger(this.log.child('socket'), LogLevel.INFO),
      autoReconnectEnabled: false,
      clientPingTimeout: 5000,
      installerOptions: { clientOptions: this.clientOptions() },
    });
    // Listeners return nothing to the emitter: every async path catches its own errors.
    r.client.on('slack_event', (args: Envelope) => void this.onEnvelope(args));
    r.client.on('disconnected', () => this.onDisconnected());
    this.receiver = r;
    try {
      await this.connectOnce();
    } catch (e) {
      this.state = 'failed';
      await this.disconnect();
      throw toSlackChannelError(this.name, e, 'opening the Socket Mode connection');
    }
    signal.throwIfAborted();
    this.state = 'connected';
    this.log.info(`connected as ${identity.botUserId}`);
  }

  async release(): Promise<void> {
    this.wake?.();
    if (this.attempt) await withTimeout(this.attempt, STOP_WAIT_MS);
    await this.disconnect();
    this.state = 'stopped';
  }

  /** Display name for group context; best effort, cached, never delays an ack for long. */
  async userName(user: string): Promise<string | undefined> {
    if (this.names.has(user)) return this.names.get(user);
    const lookup = this.web?.users
      .info({ user })
      .then((r) => r.user?.profile?.display_name || r.user?.real_name || r.user?.name || undefined)
      .catch(() => undefined);
    const found = lookup ? await withTimeout(lookup, NAME_LOOKUP_MS) : undefined;
    if (this.names.size >= SEEN_MAX) this.names.clear();
    this.names.set(user, found);
    return found;
  }

  // --- connecting ---

  private async checkToken(): Promise<SlackIdentity> {
    const client = new webApi.WebClient(this.opts.botToken, this.clientOptions());
    this.web = client;
    try {
      const auth = await client.auth.test();
      if (!auth.user_id) throw new Error('auth.test returned no user_id');
      this.me = { botUserId: auth.user_id, ...(auth.bot_id ? { botId: auth.bot_id } : {}) };
      return this.me;
    } catch (e) {
      this.state = 'failed';
      throw toSlackChannelError(this.name, e, 'checking the bot token (auth.test)');
    }
  }

  private clientOptions(): webApi.WebClientOptions {
    // One quick retry for a blip; anything longer is the bridge's (or the reconnect loop's) call.
    // No `headers` here: socket-mode reuses these options and headers would replace its xapp- token.
    return {
      retryConfig: { retries: 1, minTimeout: 300, maxTimeout: 1000 },
      timeout: HTTP_TIMEOUT_MS,
      logger: sdkLogger(this.log.child('sdk'), LogLevel.INFO),
      ...(this.opts.apiUrl ? { slackApiUrl: this.opts.apiUrl } : {}),
    };
  }

  /** One connection attempt; resolves on Slack's `hello`. */
  private async connectOnce(): Promise<void> {
    const client = this.receiver?.client;
    if (!client) throw new Error('not started');
    const pending = client.start();
    this.attempt = pending.then(
      () => undefined,
      () => undefined,
    );
    try {
      await pending;
    } catch (e) {
      // socket-mode rejects with `undefined` when the socket closes before hello.
      throw e ?? new Error(describe(e));
    } finally {
      this.attempt = undefined;
    }
    // stop() gave up waiting for this attempt and already ran: do not leave a live socket behind.
    if (this.state === 'stopped') await this.disconnect();
  }

  /** socket-mode's disconnect resolves on 'disconnected', i.e. after the close handshake. */
  private async disconnect(): Promise<void> {
    const client = this.receiver?.client;
    if (!client) return;
    await withTimeout(
      client.disconnect().catch(() => undefined),
      STOP_WAIT_MS,
    );
  }

  // --- reconnecting ---

  private onDisconnected(): void {
    // Failed attempts emit 'disconnected' too; only a drop of a live connection starts the loop.
    if (this.stopped?.aborted || this.state !== 'connected') return;
    this.state = 'reconnecting';
    this.ctx?.onStatus({ state: 'disconnected', reason: 'Socket Mode connection closed' });
    void this.reconnectLoop();
  }

  private async reconnectLoop(): Promise<void> {
    const stopped = this.stopped;
    for (let failures = 0; !stopped?.aborted; failures++) {
      await this.pause(BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)] as number);
      if (stopped?.aborted) return;
      try {
        await this.connectOnce();
        if (stopped?.aborted) return;
        this.state = 'connected';
        this.ctx?.onStatus({ state: 'connected' });
        return;
      } catch (e) {
        const err = toSlackChannelError(this.name, e, 'reconnecting');
        if (err.kind === 'auth') {
          this.state = 'failed';
          this.ctx?.onStatus({ state: 'failed', reason: err.message });
          return;
        }
        this.log.warn(`${err.message}; retrying`);
      }
    }
  }

  /** A delay that release() cuts short. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  // --- inbound ---

  private async onEnvelope(args: Envelope): Promise<void> {
    try {
      if (args.type === 'events_api') await this.onEvent(args.body ?? {});
      // A button press (approval buttons): its command goes in as a message from the presser.
      const press = args.type === 'interactive' && args.body ? normaliseSlackBlockAction(this.name, args.body) : undefined;
      if (press && this.ctx) await this.ctx.onMessage(press);
    } catch (e) {
      // Not acknowledged: Slack redelivers the envelope, and the bridge dedups by message id.
      this.log.warn(`could not hand over a Slack event: ${describe(e)}`);
      return;
    }
    try {
      await args.ack();
    } catch (e) {
      this.log.debug(`ack failed (Slack will redeliver): ${describe(e)}`);
    }
  }

  private async onEvent(body: { event?: SlackMessageEvent; event_id?: string }): Promise<void> {
    const ev = body.event;
    const me = this.me;
    const ctx = this.ctx;
    if (!ev || (ev.type !== 'message' && ev.type !== 'app_mention') || !ev.channel || !ev.ts || !me || !ctx) return;
    // A mention arrives twice (message + app_mention, different event ids); a redelivery repeats
    // one event id. Hand over the first event of a message and its redeliveries, not its twin.
    const key = slackMessageId(ev.channel, ev.ts);
    const eventId = body.event_id ?? key;
    const first = this.seen.get(key);
    if (first !== undefined && first !== eventId) return;
    if (first === undefined) this.seen.set(key, eventId);
    const human = ev.user && !ev.bot_id && ev.user !== me.botUserId;
    const senderName = human ? await this.userName(ev.user as string) : undefined;
    const msg = normaliseSlackMessage(this.name, ev, {
      channel: ev.channel,
      me,
      appMention: ev.type === 'app_mention',
      ...(senderName ? { senderName } : {}),
    });
    if (msg) await ctx.onMessage(msg);
  }
}
