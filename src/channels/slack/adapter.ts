import { LogLevel, SocketModeReceiver, webApi } from '@slack/bolt';
import type { Logger } from '../../core/logger.js';
import {
  ChannelError,
  type ChannelAdapter,
  type ChannelContext,
  type ChannelDeps,
  type InboundImage,
  type InboundMessage,
  type ReplyTarget,
  type SentMessage,
} from '../types.js';
import { describe, sdkLogger, slackErrorCode, toSlackChannelError } from './errors.js';
import { renderSlackMrkdwn } from './format.js';
import { normaliseSlackMessage, slackMessageId, type SlackIdentity, type SlackMessageEvent } from './inbound.js';
import { withTimeout } from '../../core/util/timeout.js';

/**
 * channel_d: Slack over Socket Mode. Bolt's `App` is deliberately not used: it acknowledges every
 * Events API envelope before any listener runs, while the channel contract is to acknowledge only
 * after the bridge took the message. So the adapter drives Bolt's SocketModeReceiver (its socket
 * client) and a WebClient itself: auth.test up front (no constructor-time call), its own reconnect
 * loop instead of socket-mode's (whose auto-reconnect turns a revoked token into an unhandled
 * rejection), and an ack per envelope once `onMessage` resolved.
 */

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
const TEXT_LIMIT = 4000;

type Envelope = { ack: (response?: Record<string, unknown>) => Promise<void>; type: string; body?: { event?: SlackMessageEvent; event_id?: string } };

export async function createSlackAdapter(opts: SlackOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  return new SlackAdapter(opts, deps);
}

class SlackAdapter implements ChannelAdapter {
  readonly name: string;
  // Slack truncates at 40 000 characters but asks for at most 4 000 per message for readability.
  readonly limit = { max: TEXT_LIMIT, unit: 'chars' as const };
  private readonly opts: SlackOptions;
  private log: Logger;
  private ctx: ChannelContext | undefined;
  private web: webApi.WebClient | undefined;
  private receiver: SocketModeReceiver | undefined;
  private me: SlackIdentity | undefined;
  private state: 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'failed' | 'stopped' = 'idle';
  private stopping = false;
  private attempt: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private typingOff = false;
  /** `${channel}:${ts}` → event_id of the envelope that was handed over (see onEvent). */
  private readonly seen = new Map<string, string>();
  private readonly names = new Map<string, string | undefined>();

  constructor(opts: SlackOptions, deps: ChannelDeps) {
    this.opts = opts;
    this.name = deps.name;
    this.log = deps.log;
  }

  render(markdown: string): string {
    return renderSlackMrkdwn(markdown);
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

  async start(ctx: ChannelContext): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.stopping = false;
    this.state = 'connecting';
    this.web = new webApi.WebClient(this.opts.botToken, this.clientOptions());
    try {
      const auth = await this.web.auth.test();
      if (!auth.user_id) throw new Error('auth.test returned no user_id');
      this.me = { botUserId: auth.user_id, ...(auth.bot_id ? { botId: auth.bot_id } : {}) };
    } catch (e) {
      this.state = 'failed';
      throw toSlackChannelError(this.name, e, 'checking the bot token (auth.test)');
    }
    if (this.stopping) throw new ChannelError(this.name, 'other', 'stopped while starting');
    const receiver = new SocketModeReceiver({
      appToken: this.opts.appToken,
      logger: sdkLogger(this.log.child('socket'), LogLevel.INFO),
      autoReconnectEnabled: false,
      clientPingTimeout: 5000,
      installerOptions: { clientOptions: this.clientOptions() },
    });
    // Listeners return nothing to the emitter: every async path catches its own errors.
    receiver.client.on('slack_event', (args: Envelope) => void this.onEnvelope(args));
    receiver.client.on('disconnected', () => this.onDisconnected());
    this.receiver = receiver;
    try {
      await this.connect();
    } catch (e) {
      this.state = 'failed';
      await this.disconnect();
      throw toSlackChannelError(this.name, e, 'opening the Socket Mode connection');
    }
    if (this.stopping) throw new ChannelError(this.name, 'other', 'stopped while starting');
    this.state = 'connected';
    this.log.info(`connected as ${this.me.botUserId}`);
  }

  /** One connection attempt; resolves on Slack's `hello`. */
  private async connect(): Promise<void> {
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

  private onDisconnected(): void {
    // Failed attempts emit 'disconnected' too; only a drop of a live connection starts the loop.
    if (this.stopping || this.state !== 'connected') return;
    this.state = 'reconnecting';
    this.ctx?.onStatus({ state: 'disconnected', reason: 'Socket Mode connection closed' });
    void this.reconnectLoop();
  }

  private async reconnectLoop(): Promise<void> {
    for (let failures = 0; !this.stopping; failures++) {
      await this.sleep(BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)] as number);
      if (this.stopping) return;
      try {
        await this.connect();
        if (this.stopping) return;
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

  private sleep(ms: number): Promise<void> {
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

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.wake?.();
    if (this.attempt) await withTimeout(this.attempt, STOP_WAIT_MS);
    await this.disconnect();
    this.state = 'stopped';
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

  private async onEnvelope(args: Envelope): Promise<void> {
    try {
      if (args.type === 'events_api') await this.onEvent(args.body ?? {});
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
    if (!ev || (ev.type !== 'message' && ev.type !== 'app_mention') || !ev.channel || !ev.ts || !this.me || !this.ctx) return;
    // A mention arrives twice (message + app_mention, different event ids); a redelivery repeats
    // one event id. Hand over the first event of a message and its redeliveries, not its twin.
    const key = slackMessageId(ev.channel, ev.ts);
    const eventId = body.event_id ?? key;
    const first = this.seen.get(key);
    if (first !== undefined && first !== eventId) return;
    if (first === undefined) {
      this.seen.set(key, eventId);
      if (this.seen.size > SEEN_MAX) this.seen.delete(this.seen.keys().next().value as string);
    }
    const human = ev.user && !ev.bot_id && ev.user !== this.me.botUserId;
    const senderName = human ? await this.userName(ev.user as string) : undefined;
    const msg = normaliseSlackMessage(this.name, ev, {
      channel: ev.channel,
      me: this.me,
      appMention: ev.type === 'app_mention',
      ...(senderName ? { senderName } : {}),
    });
    if (msg) await this.ctx.onMessage(msg);
  }

  /** Display name for group context; best effort, cached, never delays an ack for long. */
  private async userName(user: string): Promise<string | undefined> {
    if (this.names.has(user)) return this.names.get(user);
    const lookup = this.web?.users
      .info({ user })
      .then((r) => r.user?.profile?.display_name || r.user?.real_name || r.user?.name || undefined)
      .catch(() => undefined);
    const name = lookup ? await withTimeout(lookup, NAME_LOOKUP_MS) : undefined;
    if (this.names.size >= SEEN_MAX) this.names.clear();
    this.names.set(user, name);
    return name;
  }

  private client(): webApi.WebClient {
    if (!this.web) throw new ChannelError(this.name, 'other', 'not started');
    return this.web;
  }

  async reply(to: ReplyTarget, markdown: string): Promise<SentMessage | undefined> {
    return this.post(to.chatId, markdown, to.threadId, 'reply');
  }

  async send(chatId: string, markdown: string): Promise<SentMessage | undefined> {
    return this.post(chatId, markdown, undefined, 'send');
  }

  private async post(channel: string, markdown: string, thread: string | undefined, what: string): Promise<SentMessage | undefined> {
    const text = this.render(markdown);
    if (!text.trim()) return undefined;
    try {
      // mrkdwn text is never refused for its formatting, so there is no plain-text retry here.
      const res = await this.client().chat.postMessage({ channel, text, ...(thread ? { thread_ts: thread } : {}) });
      return { chatId: res.channel ?? channel, messageId: res.ts ?? '', ...(thread ? { extra: { threadTs: thread } } : {}) };
    } catch (e) {
      throw toSlackChannelError(this.name, e, `${what} to ${channel}`);
    }
  }

  async edit(message: SentMessage, markdown: string): Promise<void> {
    const text = this.render(markdown);
    if (!text.trim()) return;
    try {
      await this.client().chat.update({ channel: message.chatId, ts: message.messageId, text });
    } catch (e) {
      throw toSlackChannelError(this.name, e, `edit of ${message.messageId}`);
    }
  }

  /**
   * Bots have no typing indicator on Slack except the assistant-thread status, which exists
   * only where the app is an AI app; elsewhere the first refusal turns typing off.
   */
  async typing(to: ReplyTarget): Promise<void> {
    const thread = to.threadId;
    if (this.typingOff || !thread) return;
    try {
      await this.client().assistant.threads.setStatus({ channel_id: to.chatId, thread_ts: thread, status: 'is typing…' });
    } catch (e) {
      const code = slackErrorCode(e);
      if (code && code !== 'ratelimited') this.typingOff = true;
      this.log.debug(`typing status unavailable: ${code ?? describe(e)}`);
    }
  }

  async readHistory(chatId: string, opts: { since: Date; limit: number }): Promise<InboundMessage[]> {
    const me = this.me;
    if (!me || opts.limit <= 0) return [];
    const newestFirst: InboundMessage[] = [];
    let cursor: string | undefined;
    try {
      do {
        const page = await this.client().conversations.history({
          channel: chatId,
          oldest: (opts.since.getTime() / 1000).toFixed(6),
          inclusive: true,
          limit: Math.min(200, opts.limit),
          ...(cursor ? { cursor } : {}),
        });
        for (const m of (page.messages ?? []) as SlackMessageEvent[]) {
          const senderName = m.user && !m.bot_id ? await this.userName(m.user) : undefined;
          const msg = normaliseSlackMessage(this.name, m, { channel: chatId, me, includeOwn: true, ...(senderName ? { senderName } : {}) });
          if (msg) newestFirst.push(msg);
          if (newestFirst.length >= opts.limit) break;
        }
        cursor = page.response_metadata?.next_cursor || undefined;
      } while (cursor && newestFirst.length < opts.limit);
    } catch (e) {
      throw toSlackChannelError(this.name, e, `history of ${chatId}`);
    }
    return newestFirst.reverse();
  }

  async downloadImage(image: InboundImage): Promise<{ data: Buffer; mimeType: string }> {
    let url: URL;
    try {
      url = new URL(image.ref);
    } catch {
      throw new ChannelError(this.name, 'not_found', `not a Slack file URL: ${image.ref}`);
    }
    // The bot token goes only to Slack's own hosts (or the configured API host).
    const apiHost = this.opts.apiUrl ? new URL(this.opts.apiUrl).host : undefined;
    if (url.host !== apiHost && !/(^|\.)slack\.com$/.test(url.hostname) && !/(^|\.)slack-edge\.com$/.test(url.hostname)) {
      throw new ChannelError(this.name, 'other', `refusing to send the bot token to ${url.host}`);
    }
    let res: Response;
    try {
      res = await fetch(url, { headers: { Authorization: `Bearer ${this.opts.botToken}` }, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
    } catch (e) {
      throw new ChannelError(this.name, 'network', `downloading ${image.fileName ?? 'a file'} failed: ${describe(e)}`, { cause: e });
    }
    const type = res.headers.get('content-type')?.split(';')[0]?.trim() ?? '';
    if (!res.ok || type === 'text/html') {
      await res.body?.cancel();
      // Slack answers a request without a usable token with its sign-in page, not an error status.
      const kind = res.status === 404 ? 'not_found' : 'auth';
      throw new ChannelError(
        this.name,
        kind,
        `downloading ${image.fileName ?? 'a file'} failed: ${res.ok ? 'got a sign-in page (does the bot have files:read?)' : `HTTP ${res.status}`}`,
      );
    }
    const data = Buffer.from(await res.arrayBuffer());
    return { data, mimeType: image.mimeType ?? (type || 'application/octet-stream') };
  }
}
