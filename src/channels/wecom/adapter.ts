import { randomUUID } from 'node:crypto';
import { format } from 'node:util';
import { WSClient, type Logger as SdkLogger, type TemplateCard, type WsFrame } from '@wecom/aibot-node-sdk';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { createLifecycle } from '../lifecycle.js';
import type { ChannelAdapter, ChannelContext, ChannelDeps, ReplyStream, ReplyTarget, SentMessage } from '../types.js';
import { ChannelError } from '../types.js';
import { renderWecomMarkdown } from './format.js';
import { createApprovalCard, formatAnsweredCard } from './approval.js';
import { normalizeCallback, normalizeCardEvent, readReplyExtra, toChannelError, type CallbackFrame, type CardEventFrame } from './inbound.js';
import { downloadWecomMedia, sendWecomFile, WECOM_MAX_FILE_BYTES } from './media.js';

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

/**
 * Bytes of rendered Markdown per message. Stream content is capped at 20 480 bytes of UTF-8 (SDK
 * types, api.d.ts); a CJK character is 3 bytes. 480 bytes are kept in hand for server-side
 * counting differences; the fake's proactive-markdown cap is the same.
 */
export const WECOM_MAX_BYTES = 20_000;

/** How many recent inbound messages remember their reply stream (the bridge replies soon after). */
const REMEMBERED_REPLIES = 2_000;
/** How many approval cards are remembered for the update a press needs. */
const REMEMBERED_CARDS = 500;
/** stop() waits this long for the socket to report closed. */
const CLOSE_GRACE_MS = 2_000;

/** Per inbound message: the stream bubble opened for it ('open') or already finished ('used'). */
interface ReplyState {
  streamId: string;
  state: 'open' | 'used';
}

export async function createWecomAdapter(opts: WecomOptions, deps: ChannelDeps, tuning: WecomTuning = {}): Promise<ChannelAdapter> {
  // --- state ---
  const name = deps.name;
  const lifecycle = createLifecycle(name, { connect, release });
  let log: Logger = deps.log;
  let client: WSClient | undefined;
  let ctx: ChannelContext | undefined;
  let pendingStart: { resolve: () => void; reject: (err: Error) => void } | undefined;
  let last: { state: string; reason?: string } = { state: 'idle' };
  const replies = new Map<string, ReplyState>();
  const cards = new Map<string, TemplateCard>(); // approval cards by task_id

  // --- connection ---

  async function connect(context: ChannelContext): Promise<void> {
    ctx = context;
    log = context.log;
    last = { state: 'starting' };
    // A fresh WSClient per adapter: after the SDK gives up it ignores connect() until disconnect().
    const wc = new WSClient({
      botId: opts.botId,
      secret: opts.secret,
      wsUrl: opts.websocketUrl ?? '',
      logger: sdkLogger(log),
      reconnectInterval: tuning.reconnectMs ?? 1_000,
      maxReconnectAttempts: -1, // drops are retried forever (backoff capped at 30 s by the SDK)
      maxAuthFailureAttempts: tuning.maxAuthFailureAttempts ?? 5,
      heartbeatInterval: tuning.heartbeatMs ?? 30_000,
    });
    client = wc;
    wireEvents(wc);
    await new Promise<void>((resolve, reject) => {
      pendingStart = { resolve, reject };
      wc.connect(); // synchronous; the outcome arrives as 'authenticated' or 'error'
    });
  }

  async function release(): Promise<void> {
    const wc = client;
    client = undefined;
    settleStart(new ChannelError(name, 'network', 'stopped before connecting'));
    last = { state: 'idle' };
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
    replies.clear();
    cards.clear();
  }

  function wireEvents(c: WSClient): void {
    let lastAuthError: string | undefined;
    let kicked = false;
    c.on('authenticated', () => {
      lastAuthError = undefined;
      kicked = false;
      if (pendingStart) {
        last = { state: 'connected' };
        settleStart();
      } else {
        report('connected');
      }
    });
    // Always listened to: eventemitter3 drops an unheard 'error' silently, and we want the reason.
    c.on('error', (err: Error & { code?: string }) => {
      if (err.code === 'WS_AUTH_FAILURE_EXHAUSTED' || err.code === 'WS_RECONNECT_EXHAUSTED') {
        const reason = `${lastAuthError ?? 'connection failed'}; gave up (${err.message})`;
        settleStart(new ChannelError(name, lastAuthError ? 'auth' : 'network', reason));
        report('failed', reason); // permanent: the SDK stopped retrying
        return;
      }
      if (err.message.startsWith('Authentication failed')) {
        lastAuthError = err.message;
        // start() fails fast with the reason; the SDK retries a few times and a later success is
        // reported as 'connected', exhaustion as 'failed'.
        if (pendingStart) {
          last = { state: 'failed', reason: err.message };
          settleStart(new ChannelError(name, 'auth', err.message));
        } else if (last.state !== 'failed') {
          report('disconnected', err.message);
        }
        return;
      }
      if (pendingStart) {
        last = { state: 'failed', reason: err.message };
        settleStart(new ChannelError(name, 'network', `cannot connect to ${opts.websocketUrl ?? 'WeCom'}: ${err.message}`));
      } else {
        log.debug(`websocket error: ${err.message}`);
      }
    });
    c.on('event.disconnected_event', () => {
      kicked = true;
    });
    c.on('disconnected', (reason: string) => {
      if (!client) return; // stop() in progress
      // Another connection subscribed with this bot: WeCom allows one, and the SDK stays down by
      // design (reconnecting would only kick the other one out). Permanent until restarted.
      if (kicked) report('failed', `another connection took over this bot: ${reason}`);
      else if (last.state !== 'failed') report('disconnected', reason);
    });
    c.on('reconnecting', (attempt: number) => log.debug(`reconnecting (attempt ${attempt})`));
    c.on('message', (frame) => {
      void onCallback(frame);
    });
    c.on('event.template_card_event', (frame) => {
      void onCardEvent(frame as CardEventFrame);
    });
  }

  function settleStart(err?: Error): void {
    const p = pendingStart;
    pendingStart = undefined;
    if (err) p?.reject(err);
    else p?.resolve();
  }

  function report(state: 'connected' | 'disconnected' | 'failed', reason?: string): void {
    if (last.state === state && last.reason === reason) return;
    last = reason === undefined ? { state } : { state, reason };
    ctx?.onStatus(reason === undefined ? { state } : { state, reason });
  }

  // --- inbound ---

  async function onCallback(frame: WsFrame): Promise<void> {
    const msg = normalizeCallback(name, frame as CallbackFrame);
    if (!msg) {
      log.info(`ignoring a ${String((frame.body as { msgtype?: string } | undefined)?.msgtype)} message: text, voice, pictures, mixed and files are supported`);
      return;
    }
    try {
      // WeCom has no acknowledgement frame: the first reply frame is what stops re-pushes.
      await ctx?.onMessage(msg);
    } catch (err) {
      log.warn(`message ${msg.messageId} not accepted (WeCom will push it again): ${errorMessage(err)}`);
    }
  }

  /**
   * A press on an approval card: the card is updated for the presser at once (WeCom allows it only
   * within 5 s of the event, on the event's req_id), then the press goes to the bridge as a message.
   */
  async function onCardEvent(frame: CardEventFrame): Promise<void> {
    const press = normalizeCardEvent(name, frame);
    if (!press) {
      log.debug('ignoring a template_card_event that is not an approval answer');
      return;
    }
    const card = cards.get(press.taskId);
    const presser = press.message.senderId;
    if (card && client && frame.headers?.req_id) {
      client
        .updateTemplateCard({ headers: { req_id: frame.headers.req_id } }, formatAnsweredCard(card), [presser])
        .catch((err: unknown) => log.debug(`card update for ${press.taskId}: ${toChannelError(name, err, 'aibot_respond_update_msg').message}`));
    }
    try {
      await ctx?.onMessage(press.message);
    } catch (err) {
      log.warn(`card press ${press.message.messageId} not accepted: ${errorMessage(err)}`);
    }
  }

  // --- outbound ---

  function connected(): WSClient {
    if (!client) throw new ChannelError(name, 'not_connected', 'not connected (the adapter was stopped)');
    return client;
  }

  function remember(messageId: string, state: ReplyState): void {
    replies.delete(messageId);
    replies.set(messageId, state);
    if (replies.size > REMEMBERED_REPLIES) replies.delete(replies.keys().next().value as string);
  }

  const frameOf = (reqId: string) => ({ headers: { req_id: reqId } });

  async function sendMarkdown(chatId: string, content: string): Promise<SentMessage> {
    try {
      const receipt = await connected().sendMessage(chatId, { msgtype: 'markdown', markdown: { content } });
      return { chatId, messageId: receipt.headers.req_id };
    } catch (err) {
      throw toChannelError(name, err, 'aibot_send_msg');
    }
  }

  /**
   * Claims the inbound message's stream bubble for one visible reply: the one typing() opened, or a
   * new one. Undefined when the message has no usable req_id or its bubble was already used (a
   * second part of a split reply): the caller then sends a separate proactive message.
   */
  function claimStream(to: ReplyTarget): { reqId: string; streamId: string } | undefined {
    const reqId = readReplyExtra(to.extra).reqId;
    const key = to.messageId;
    if (!reqId || !key) return undefined;
    const prior = replies.get(key);
    if (prior?.state === 'used') return undefined;
    const streamId = prior?.streamId ?? randomUUID();
    remember(key, { streamId, state: 'used' });
    return { reqId, streamId };
  }

  return {
    name,
    limit: { max: WECOM_MAX_BYTES, unit: 'bytes' },
    render: renderWecomMarkdown,
    start: lifecycle.start,
    stop: lifecycle.stop,

    async reply(to, markdown) {
      lifecycle.assertStarted('reply');
      const content = renderWecomMarkdown(markdown);
      const claim = claimStream(to);
      if (claim) {
        try {
          // A buffered reply is one stream frame that is also the last.
          await connected().replyStream(frameOf(claim.reqId), claim.streamId, content, true);
          return { chatId: to.chatId, messageId: claim.streamId };
        } catch (err) {
          const e = toChannelError(name, err, 'aibot_respond_msg');
          if (e.kind !== 'not_found') throw e;
          // The req_id died with its connection (846605 after a reconnect): answer proactively.
          log.debug(`reply to ${to.messageId ?? ''} falls back to aibot_send_msg: ${e.message}`);
        }
      }
      return sendMarkdown(to.chatId, content);
    },

    async send(chatId, markdown) {
      lifecycle.assertStarted('send');
      // aibot_send_msg takes a userid (one-to-one) or a group chatid alike.
      return sendMarkdown(chatId, renderWecomMarkdown(markdown));
    },

    /** Opens the reply bubble early (an empty, unfinished stream frame); reply/openStream reuse it. */
    async typing(to) {
      const reqId = readReplyExtra(to.extra).reqId;
      if (!lifecycle.isStarted() || !reqId || !to.messageId || replies.has(to.messageId) || !client) return;
      const streamId = randomUUID();
      remember(to.messageId, { streamId, state: 'open' });
      try {
        await client.replyStream(frameOf(reqId), streamId, '', false);
      } catch (err) {
        // Best effort. A dead req_id stays claimed so that the reply goes proactive at once.
        const e = toChannelError(name, err, 'typing');
        if (e.kind !== 'not_found' && replies.get(to.messageId)?.state === 'open') replies.delete(to.messageId);
        log.debug(`typing: ${e.message}`);
      }
    },

    maxFileBytes: WECOM_MAX_FILE_BYTES,

    async downloadImage(image) {
      lifecycle.assertStarted('downloadImage');
      return downloadWecomMedia(name, connected(), image.ref, { maxBytes: WECOM_MAX_FILE_BYTES });
    },

    async downloadFile(file, { maxBytes }) {
      lifecycle.assertStarted('downloadFile');
      return downloadWecomMedia(name, connected(), file.ref, { maxBytes, file });
    },

    async sendFile(to, file) {
      lifecycle.assertStarted('sendFile');
      return sendWecomFile(name, connected(), to.chatId, file);
    },

    /** A button_interaction card, sent proactively (the message's reply bubble carries the text stream). */
    async askApproval(to, prompt) {
      lifecycle.assertStarted('askApproval');
      const card = createApprovalCard(prompt);
      const taskId = card.task_id as string;
      // Remembered before it is sent: a press can reach us before the send's receipt does.
      cards.set(taskId, card);
      if (cards.size > REMEMBERED_CARDS) cards.delete(cards.keys().next().value as string);
      try {
        await connected().sendMessage(to.chatId, { msgtype: 'template_card', template_card: card });
      } catch (err) {
        cards.delete(taskId);
        throw toChannelError(name, err, 'aibot_send_msg template_card');
      }
      return { chatId: to.chatId, messageId: taskId };
    },

    async openStream(to) {
      lifecycle.assertStarted('openStream');
      const claim = claimStream(to);
      let dead = !claim;
      let closed = false;
      const stream: ReplyStream = {
        async update(markdown) {
          if (dead || closed || !claim) return;
          try {
            // Frames replace the bubble; one still waiting for its receipt makes this one redundant.
            await connected().replyStreamNonBlocking(frameOf(claim.reqId), claim.streamId, renderWecomMarkdown(markdown), false);
          } catch (err) {
            const e = toChannelError(name, err, 'stream update');
            if (e.kind !== 'not_found') throw e;
            dead = true; // finish() sends the whole text proactively instead
          }
        },
        async finish(markdown) {
          if (closed) return;
          closed = true;
          const content = renderWecomMarkdown(markdown);
          if (!dead && claim) {
            try {
              await connected().replyStream(frameOf(claim.reqId), claim.streamId, content, true);
              return;
            } catch (err) {
              const e = toChannelError(name, err, 'stream finish');
              if (e.kind !== 'not_found') throw e;
            }
          }
          await sendMarkdown(to.chatId, content);
        },
      };
      return stream;
    },
  };
}

// --- internal ---

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
