import { LogLevel, SocketModeReceiver, webApi } from '@slack/bolt';
import type { Logger } from '../../core/logger.js';
import { withTimeout } from '../../core/util/timeout.js';
import { createLifecycle } from '../lifecycle.js';
import {
  ChannelError,
  type ChannelAdapter,
  type ChannelContext,
  type ChannelDeps,
  type InboundFile,
  type InboundImage,
  type InboundMessage,
  type OutboundFile,
  type ReplyTarget,
  type SentMessage,
} from '../types.js';
import { downloadSlackFile, uploadSlackFile } from './files.js';
import { describe, sdkLogger, slackErrorCode, toSlackChannelError } from './errors.js';
import { renderSlackMrkdwn } from './format.js';
import { normaliseSlackMessage, slackMessageId, type SlackIdentity, type SlackMessageEvent } from './inbound.js';

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
/** Pictures for the model; documents get the limit the bridge passes. */
const IMAGE_MAX_BYTES = 20 * 1024 * 1024;
/** Slack takes files up to 1 GB; what we send is capped lower by the chat core (100 MB). */
const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;

type Envelope = { ack: (response?: Record<string, unknown>) => Promise<void>; type: string; body?: { event?: SlackMessageEvent; event_id?: string } };

export async function createSlackAdapter(opts: SlackOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  // --- state ---
  const name = deps.name;
  const lifecycle = createLifecycle(name, { connect, release });
  let log: Logger = deps.log;
  let ctx: ChannelContext | undefined;
  let web: webApi.WebClient | undefined;
  let receiver: SocketModeReceiver | undefined;
  let me: SlackIdentity | undefined;
  let state: 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'failed' | 'stopped' = 'idle';
  let attempt: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let typingOff = false;
  /** `${channel}:${ts}` → event_id of the envelope that was handed over (see onEvent). */
  const seen = new Map<string, string>();
  const names = new Map<string, string | undefined>();

  // --- connection ---

  async function connect(context: ChannelContext, signal: AbortSignal): Promise<void> {
    ctx = context;
    log = context.log;
    state = 'connecting';
    const client = new webApi.WebClient(opts.botToken, clientOptions());
    web = client;
    let identity: SlackIdentity;
    try {
      const auth = await client.auth.test();
      if (!auth.user_id) throw new Error('auth.test returned no user_id');
      identity = { botUserId: auth.user_id, ...(auth.bot_id ? { botId: auth.bot_id } : {}) };
      me = identity;
    } catch (e) {
      state = 'failed';
      throw toSlackChannelError(name, e, 'checking the bot token (auth.test)');
    }
    signal.throwIfAborted();
    const r = new SocketModeReceiver({
      appToken: opts.appToken,
      logger: sdkLogger(log.child('socket'), LogLevel.INFO),
      autoReconnectEnabled: false,
      clientPingTimeout: 5000,
      installerOptions: { clientOptions: clientOptions() },
    });
    // Listeners return nothing to the emitter: every async path catches its own errors.
    r.client.on('slack_event', (args: Envelope) => void onEnvelope(args));
    r.client.on('disconnected', () => onDisconnected());
    receiver = r;
    try {
      await connectOnce();
    } catch (e) {
      state = 'failed';
      await disconnect();
      throw toSlackChannelError(name, e, 'opening the Socket Mode connection');
    }
    signal.throwIfAborted();
    state = 'connected';
    log.info(`connected as ${identity.botUserId}`);
  }

  async function release(): Promise<void> {
    wake?.();
    if (attempt) await withTimeout(attempt, STOP_WAIT_MS);
    await disconnect();
    state = 'stopped';
  }

  function clientOptions(): webApi.WebClientOptions {
    // One quick retry for a blip; anything longer is the bridge's (or the reconnect loop's) call.
    // No `headers` here: socket-mode reuses these options and headers would replace its xapp- token.
    return {
      retryConfig: { retries: 1, minTimeout: 300, maxTimeout: 1000 },
      timeout: HTTP_TIMEOUT_MS,
      logger: sdkLogger(log.child('sdk'), LogLevel.INFO),
      ...(opts.apiUrl ? { slackApiUrl: opts.apiUrl } : {}),
    };
  }

  /** One connection attempt; resolves on Slack's `hello`. */
  async function connectOnce(): Promise<void> {
    const client = receiver?.client;
    if (!client) throw new Error('not started');
    const pending = client.start();
    attempt = pending.then(
      () => undefined,
      () => undefined,
    );
    try {
      await pending;
    } catch (e) {
      // socket-mode rejects with `undefined` when the socket closes before hello.
      throw e ?? new Error(describe(e));
    } finally {
      attempt = undefined;
    }
    // stop() gave up waiting for this attempt and already ran: do not leave a live socket behind.
    if (state === 'stopped') await disconnect();
  }

  /** socket-mode's disconnect resolves on 'disconnected', i.e. after the close handshake. */
  async function disconnect(): Promise<void> {
    const client = receiver?.client;
    if (!client) return;
    await withTimeout(
      client.disconnect().catch(() => undefined),
      STOP_WAIT_MS,
    );
  }

  function onDisconnected(): void {
    // Failed attempts emit 'disconnected' too; only a drop of a live connection starts the loop.
    if (lifecycle.signal.aborted || state !== 'connected') return;
    state = 'reconnecting';
    ctx?.onStatus({ state: 'disconnected', reason: 'Socket Mode connection closed' });
    void reconnectLoop();
  }

  async function reconnectLoop(): Promise<void> {
    const stopped = lifecycle.signal;
    for (let failures = 0; !stopped.aborted; failures++) {
      await pause(BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)] as number);
      if (stopped.aborted) return;
      try {
        await connectOnce();
        if (stopped.aborted) return;
        state = 'connected';
        ctx?.onStatus({ state: 'connected' });
        return;
      } catch (e) {
        const err = toSlackChannelError(name, e, 'reconnecting');
        if (err.kind === 'auth') {
          state = 'failed';
          ctx?.onStatus({ state: 'failed', reason: err.message });
          return;
        }
        log.warn(`${err.message}; retrying`);
      }
    }
  }

  /** A delay that release() cuts short. */
  function pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
    });
  }

  // --- inbound ---

  async function onEnvelope(args: Envelope): Promise<void> {
    try {
      if (args.type === 'events_api') await onEvent(args.body ?? {});
    } catch (e) {
      // Not acknowledged: Slack redelivers the envelope, and the bridge dedups by message id.
      log.warn(`could not hand over a Slack event: ${describe(e)}`);
      return;
    }
    try {
      await args.ack();
    } catch (e) {
      log.debug(`ack failed (Slack will redeliver): ${describe(e)}`);
    }
  }

  async function onEvent(body: { event?: SlackMessageEvent; event_id?: string }): Promise<void> {
    const ev = body.event;
    if (!ev || (ev.type !== 'message' && ev.type !== 'app_mention') || !ev.channel || !ev.ts || !me || !ctx) return;
    // A mention arrives twice (message + app_mention, different event ids); a redelivery repeats
    // one event id. Hand over the first event of a message and its redeliveries, not its twin.
    const key = slackMessageId(ev.channel, ev.ts);
    const eventId = body.event_id ?? key;
    const first = seen.get(key);
    if (first !== undefined && first !== eventId) return;
    if (first === undefined) {
      seen.set(key, eventId);
      if (seen.size > SEEN_MAX) seen.delete(seen.keys().next().value as string);
    }
    const human = ev.user && !ev.bot_id && ev.user !== me.botUserId;
    const senderName = human ? await userName(ev.user as string) : undefined;
    const msg = normaliseSlackMessage(name, ev, {
      channel: ev.channel,
      me,
      appMention: ev.type === 'app_mention',
      ...(senderName ? { senderName } : {}),
    });
    if (msg) await ctx.onMessage(msg);
  }

  /** Display name for group context; best effort, cached, never delays an ack for long. */
  async function userName(user: string): Promise<string | undefined> {
    if (names.has(user)) return names.get(user);
    const lookup = web?.users
      .info({ user })
      .then((r) => r.user?.profile?.display_name || r.user?.real_name || r.user?.name || undefined)
      .catch(() => undefined);
    const found = lookup ? await withTimeout(lookup, NAME_LOOKUP_MS) : undefined;
    if (names.size >= SEEN_MAX) names.clear();
    names.set(user, found);
    return found;
  }

  // --- outbound ---

  function api(what: string): webApi.WebClient {
    lifecycle.assertStarted(what);
    if (!web) throw new ChannelError(name, 'not_connected', `${what}: not connected`);
    return web;
  }

  async function post(what: 'reply' | 'send', channel: string, markdown: string, thread: string | undefined): Promise<SentMessage | undefined> {
    const client = api(what);
    const text = renderSlackMrkdwn(markdown);
    if (!text.trim()) return undefined;
    try {
      // mrkdwn text is never refused for its formatting, so there is no plain-text retry here.
      const res = await client.chat.postMessage({ channel, text, ...(thread ? { thread_ts: thread } : {}) });
      return { chatId: res.channel ?? channel, messageId: res.ts ?? '', ...(thread ? { extra: { threadTs: thread } } : {}) };
    } catch (e) {
      throw toSlackChannelError(name, e, `${what} to ${channel}`);
    }
  }

  return {
    name,
    // Slack truncates at 40 000 characters but asks for at most 4 000 per message for readability.
    limit: { max: TEXT_LIMIT, unit: 'chars' },
    render: renderSlackMrkdwn,
    start: lifecycle.start,
    stop: lifecycle.stop,

    reply: (to: ReplyTarget, markdown: string) => post('reply', to.chatId, markdown, to.threadId),

    send: (chatId: string, markdown: string) => post('send', chatId, markdown, undefined),

    async edit(message: SentMessage, markdown: string) {
      const client = api('edit');
      const text = renderSlackMrkdwn(markdown);
      if (!text.trim()) return;
      try {
        await client.chat.update({ channel: message.chatId, ts: message.messageId, text });
      } catch (e) {
        throw toSlackChannelError(name, e, `edit of ${message.messageId}`);
      }
    },

    /**
     * Bots have no typing indicator on Slack except the assistant-thread status, which exists
     * only where the app is an AI app; elsewhere the first refusal turns typing off.
     */
    async typing(to: ReplyTarget) {
      const thread = to.threadId;
      if (!lifecycle.isStarted() || !web || typingOff || !thread) return;
      try {
        await web.assistant.threads.setStatus({ channel_id: to.chatId, thread_ts: thread, status: 'is typing…' });
      } catch (e) {
        const code = slackErrorCode(e);
        if (code && code !== 'ratelimited') typingOff = true;
        log.debug(`typing status unavailable: ${code ?? describe(e)}`);
      }
    },

    async readHistory(chatId: string, { since, limit }: { since: Date; limit: number }) {
      const client = api('readHistory');
      if (!me || limit <= 0) return [];
      const newestFirst: InboundMessage[] = [];
      let cursor: string | undefined;
      try {
        do {
          const page = await client.conversations.history({
            channel: chatId,
            oldest: (since.getTime() / 1000).toFixed(6),
            inclusive: true,
            limit: Math.min(200, limit),
            ...(cursor ? { cursor } : {}),
          });
          for (const m of (page.messages ?? []) as SlackMessageEvent[]) {
            const senderName = m.user && !m.bot_id ? await userName(m.user) : undefined;
            const msg = normaliseSlackMessage(name, m, { channel: chatId, me, includeOwn: true, ...(senderName ? { senderName } : {}) });
            if (msg) newestFirst.push(msg);
            if (newestFirst.length >= limit) break;
          }
          cursor = page.response_metadata?.next_cursor || undefined;
        } while (cursor && newestFirst.length < limit);
      } catch (e) {
        throw toSlackChannelError(name, e, `history of ${chatId}`);
      }
      return newestFirst.reverse();
    },

    async downloadImage(image: InboundImage) {
      lifecycle.assertStarted('downloadImage');
      return downloadSlackFile(name, image, opts, IMAGE_MAX_BYTES);
    },

    async downloadFile(file: InboundFile, { maxBytes }: { maxBytes: number }) {
      lifecycle.assertStarted('downloadFile');
      return downloadSlackFile(name, file, opts, maxBytes);
    },

    maxFileBytes: MAX_UPLOAD_BYTES,

    /**
     * files.uploadV2: files.getUploadURLExternal, the bytes to the upload URL, then
     * files.completeUploadExternal shares the file into the channel (the reply's thread). Slack
     * shows pictures inline by itself. The share is asynchronous: there is no message ts to return.
     */
    async sendFile(to: ReplyTarget, file: OutboundFile) {
      await uploadSlackFile(name, api('sendFile'), to, file);
      return undefined;
    },
  };
}
