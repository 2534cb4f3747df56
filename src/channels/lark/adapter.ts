import * as lark from '@larksuiteoapi/node-sdk';
import type { Logger } from '../../core/logger.js';
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
import { isInlineImage } from '../../core/files/file-names.js';
import type { ApprovalPrompt } from '../approval-prompt.js';
import { createLifecycle } from '../lifecycle.js';
import { formatLarkApprovalCard, type LarkCardAction, type LarkCardActionAnswer, type LarkPromptPlace, normaliseLarkCardAction } from './approval.js';
import { createLarkConnection, type LarkConnection } from './connection.js';
import { larkCode, toChannelError } from './errors.js';
import { renderLarkMarkdown } from './format.js';
import { fromHistoryItem, fromReceiveEvent, type LarkReceiveEvent, type LarkSelf } from './inbound.js';
import { createLarkSdkLogger } from './logger.js';
import { LARK_LIMIT, sendWithPlainRetry } from './outbound.js';
import { createLarkRest, type LarkSent, MAX_IMAGE_BYTES } from './rest.js';
import { openCardStream } from './stream.js';

/** Options of channel_a as validated by index.ts. */
export interface LarkOptions {
  appId: string;
  appSecret: string;
  /** Open platform base URL (index.ts turns `feishu` / `lark` into theirs); Feishu's by default. */
  domain?: string | undefined;
  pingTimeout?: number | undefined;
}

const DEFAULT_DOMAIN = 'https://open.feishu.cn';
/** WSClient.start() silently does nothing for other app ids; fail loudly instead. */
const APP_ID = /^cli_[0-9a-fA-F]{16}$/;
/** GET /im/v1/messages takes page_size 1-50. */
const HISTORY_PAGE = 50;
/** "The message was recalled": reply to the chat instead. */
const RECALLED = 230011;
/** Chat kinds remembered from events (history items do not carry it); bounded, oldest forgotten first. */
const CHAT_TYPES_KEPT = 2000;

/**
 * channel_a over @larksuiteoapi/node-sdk: events on the long connection (WSClient), everything else
 * over REST (Client). Replies are `post` messages with an `md` element (outbound.ts), streams are
 * CardKit cards (stream.ts).
 */
export async function createLarkAdapter(opts: LarkOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  // --- state ---
  const name = deps.name;
  const lifecycle = createLifecycle(name, { connect, release });
  deps.log.addSecrets([opts.appSecret]);
  const domain = (opts.domain ?? DEFAULT_DOMAIN).replace(/\/+$/, '');
  let log: Logger = deps.log;
  let ctx: ChannelContext | undefined;
  const sdkLogger = createLarkSdkLogger(() => log);
  // Per-adapter token cache: the SDK's default cache is process-wide and keyed by appId only.
  const client = new lark.Client({
    appId: opts.appId,
    appSecret: opts.appSecret,
    domain,
    cache: new lark.DefaultCache(),
    logger: sdkLogger,
    loggerLevel: lark.LoggerLevel.warn,
  });
  const rest = createLarkRest(client);
  const chatTypes = new Map<string, 'direct' | 'group'>();
  /** Approval cards sent, by message id: the callback names the chat but not its kind or thread. */
  const prompts = new Map<string, LarkPromptPlace>();
  let self: LarkSelf | undefined;
  let conn: LarkConnection | undefined;
  let reported: 'connected' | 'disconnected' = 'connected';
  let handoff: Promise<void> = Promise.resolve();

  // --- connection ---

  async function connect(context: ChannelContext, signal: AbortSignal): Promise<void> {
    ctx = context;
    log = context.log;
    if (!APP_ID.test(opts.appId)) throw new ChannelError(name, 'auth', `appId "${opts.appId}" is not cli_ followed by 16 hex digits`);
    let botOpenId: string;
    try {
      botOpenId = await rest.botOpenId(); // also proves appId/appSecret before the socket
    } catch (err) {
      throw toChannelError(name, `cannot use the bot API at ${domain} (check appId / appSecret)`, err);
    }
    signal.throwIfAborted();
    const identity: LarkSelf = { channel: name, botOpenId };
    const lc = createLarkConnection({
      appId: opts.appId,
      appSecret: opts.appSecret,
      domain,
      pingTimeout: opts.pingTimeout,
      sdkLogger,
      onEvent: (event) => onEvent(identity, event),
      onCardAction: (action) => onCardAction(action),
      onStatus: (state, reason) => report(state, reason),
    });
    conn = lc;
    try {
      await lc.start();
    } catch (err) {
      if (conn === lc) conn = undefined;
      lc.stop();
      throw new ChannelError(
        name,
        /514|auth/i.test(String(err)) ? 'auth' : 'network',
        `long connection refused: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    self = identity;
    reported = 'connected';
  }

  async function release(): Promise<void> {
    self = undefined;
    conn?.stop(); // the SDK first: no more events, no timers
    conn = undefined;
    await handoff;
  }

  function report(state: typeof reported, reason?: string): void {
    if (state === reported && state === 'connected') return;
    reported = state;
    ctx?.onStatus(reason === undefined ? { state } : { state, reason });
  }

  // --- inbound ---

  /** Runs inside the SDK's event handler: the ack goes out when this resolves, and Lark wants it within 3 s. */
  async function onEvent(me: LarkSelf, event: LarkReceiveEvent): Promise<void> {
    let msg: InboundMessage | undefined;
    try {
      msg = fromReceiveEvent(event, me);
    } catch (err) {
      log.warn(`cannot read event for ${event.message?.message_id ?? '?'}: ${String(err)}`);
      return; // acked: a redelivery would not read any better
    }
    if (!msg) return;
    rememberChat(msg.chatId, msg.chatType);
    const message = msg;
    const to = ctx;
    if (!to) return;
    // In order, and only acked once the bridge has it; a throw acks with 500 so Lark delivers it again.
    const next = handoff.then(() => to.onMessage(message));
    handoff = next.catch(() => undefined);
    await next;
  }

  /** Runs inside the SDK's handler too: its answer is the callback's, shown by the client as a toast. */
  async function onCardAction(action: LarkCardAction): Promise<LarkCardActionAnswer> {
    const promptId = action.context?.open_message_id ?? action.open_message_id ?? '';
    const chatId = action.context?.open_chat_id ?? action.open_chat_id ?? '';
    const place = prompts.get(promptId) ?? { chatType: chatId ? await chatTypeOf(chatId) : 'group' };
    const msg = normaliseLarkCardAction(name, action, place);
    const to = ctx;
    if (!msg || !to) return { toast: { type: 'warning', content: 'This button no longer does anything.' } };
    const next = handoff.then(() => to.onMessage(msg));
    handoff = next.catch(() => undefined);
    try {
      await next;
    } catch (err) {
      log.warn(`cannot hand over the press on ${promptId}: ${String(err)}`);
      return { toast: { type: 'error', content: 'Your answer was not received; please try again.' } };
    }
    return { toast: { type: 'info', content: 'Answer received.' } };
  }

  function rememberPrompt(messageId: string, place: LarkPromptPlace): void {
    prompts.set(messageId, place);
    if (prompts.size > CHAT_TYPES_KEPT) {
      const oldest = prompts.keys().next().value;
      if (oldest !== undefined) prompts.delete(oldest);
    }
  }

  function rememberChat(chatId: string, type: 'direct' | 'group'): void {
    chatTypes.delete(chatId);
    chatTypes.set(chatId, type);
    if (chatTypes.size > CHAT_TYPES_KEPT) {
      const oldest = chatTypes.keys().next().value;
      if (oldest !== undefined) chatTypes.delete(oldest);
    }
  }

  async function chatTypeOf(chatId: string): Promise<'direct' | 'group'> {
    const known = chatTypes.get(chatId);
    if (known) return known;
    try {
      const type = (await rest.chatMode(chatId)) === 'p2p' ? 'direct' : 'group';
      rememberChat(chatId, type);
      return type;
    } catch (err) {
      // Remembered, so a missing scope costs one failed call per chat, not one per read; an event from
      // the chat corrects it.
      log.debug(`chat mode of ${chatId} unknown (${String(err)}); reading it as a group`);
      rememberChat(chatId, 'group');
      return 'group';
    }
  }

  // --- outbound ---

  /** The bot's identity, once started (set before start() resolves). */
  function identity(what: string): LarkSelf {
    lifecycle.assertStarted(what);
    if (!self) throw new ChannelError(name, 'not_connected', `${what}: not connected`);
    return self;
  }

  const sentMessage = (s: LarkSent): SentMessage => ({ chatId: s.chatId, messageId: s.messageId });

  return {
    name,
    limit: LARK_LIMIT,
    render: renderLarkMarkdown,
    start: lifecycle.start,
    stop: lifecycle.stop,

    async reply(to: ReplyTarget, markdown: string) {
      lifecycle.assertStarted('reply');
      const text = renderLarkMarkdown(markdown);
      if (!text) return undefined;
      const toChat = (type: 'post' | 'text', content: string) => rest.create(to.chatId, type, content);
      try {
        if (!to.messageId) return sentMessage(await sendWithPlainRetry(text, toChat, log));
        const parent = to.messageId;
        const sent = await sendWithPlainRetry(text, (type, content) => rest.reply(parent, type, content, Boolean(to.threadId), to.chatId), log).catch(
          (err: unknown) => {
            if (larkCode(err) !== RECALLED) throw err;
            return sendWithPlainRetry(text, toChat, log);
          },
        );
        return sentMessage(sent);
      } catch (err) {
        throw toChannelError(name, `reply in ${to.chatId}`, err);
      }
    },

    /**
     * An interactive card (the prompt, then one button per answer) in reply to the message. A press
     * arrives as a `card.action.trigger` callback on the long connection (onCardAction).
     */
    async askApproval(to: ReplyTarget, prompt: ApprovalPrompt) {
      lifecycle.assertStarted('askApproval');
      const content = formatLarkApprovalCard(prompt, renderLarkMarkdown(prompt.text));
      try {
        const toChat = () => rest.create(to.chatId, 'interactive', content);
        const parent = to.messageId;
        const sent = !parent
          ? await toChat()
          : await rest.reply(parent, 'interactive', content, Boolean(to.threadId), to.chatId).catch((err: unknown) => {
              if (larkCode(err) !== RECALLED) throw err;
              return toChat();
            });
        rememberPrompt(sent.messageId, { chatType: to.chatType, threadId: to.threadId });
        return sentMessage(sent);
      } catch (err) {
        throw toChannelError(name, `approval card in ${to.chatId}`, err);
      }
    },

    async send(chatId: string, markdown: string) {
      lifecycle.assertStarted('send');
      const text = renderLarkMarkdown(markdown);
      if (!text) return undefined;
      try {
        return sentMessage(await sendWithPlainRetry(text, (type, content) => rest.create(chatId, type, content), log));
      } catch (err) {
        throw toChannelError(name, `send to ${chatId}`, err);
      }
    },

    async edit(message: SentMessage, markdown: string) {
      lifecycle.assertStarted('edit');
      try {
        await sendWithPlainRetry(renderLarkMarkdown(markdown) || '…', (type, content) => rest.update(message.messageId, type, content), log);
      } catch (err) {
        throw toChannelError(name, `edit ${message.messageId}`, err);
      }
    },

    async openStream(to: ReplyTarget) {
      lifecycle.assertStarted('openStream');
      try {
        return await openCardStream({ channel: name, rest, render: renderLarkMarkdown, log, maxBytes: LARK_LIMIT.max }, to);
      } catch (err) {
        throw toChannelError(name, `open a stream card in ${to.chatId}`, err);
      }
    },

    async readHistory(chatId: string, { since, limit }: { since: Date; limit: number }) {
      const me = identity('readHistory');
      try {
        const chatType = await chatTypeOf(chatId);
        const out: InboundMessage[] = [];
        let page: string | undefined;
        // Newest first until `limit`: the newest `limit` messages since `since`, returned oldest first.
        do {
          const res = await rest.listPage(chatId, Math.floor(since.getTime() / 1000), Math.min(HISTORY_PAGE, limit), page);
          for (const item of res.items) {
            const msg = fromHistoryItem(item, chatType, me);
            if (msg && msg.ts >= since.getTime() && out.length < limit) out.push(msg);
          }
          page = res.next;
        } while (page && out.length < limit);
        return out.sort((a, b) => a.ts - b.ts);
      } catch (err) {
        throw toChannelError(name, `history of ${chatId}`, err);
      }
    },

    async downloadImage(image: InboundImage) {
      lifecycle.assertStarted('downloadImage');
      const [messageId, fileKey] = image.ref.split('/');
      if (!messageId || !fileKey) throw new ChannelError(name, 'not_found', `image ref "${image.ref}" is not <message_id>/<image_key>`);
      try {
        const { data, mimeType } = await rest.resource(name, messageId, fileKey, 'image', MAX_IMAGE_BYTES);
        return {
          data,
          mimeType: mimeType && mimeType !== 'application/octet-stream' ? mimeType : (sniffImageType(data) ?? image.mimeType ?? 'application/octet-stream'),
        };
      } catch (err) {
        throw toChannelError(name, `download ${fileKey}`, err);
      }
    },

    async downloadFile(file: InboundFile, { maxBytes }: { maxBytes: number }) {
      lifecycle.assertStarted('downloadFile');
      const [messageId, fileKey] = file.ref.split('/');
      if (!messageId || !fileKey) throw new ChannelError(name, 'not_found', `file ref "${file.ref}" is not <message_id>/<file_key>`);
      try {
        const { data, mimeType } = await rest.resource(name, messageId, fileKey, 'file', maxBytes);
        return { data, mimeType: file.mimeType ?? mimeType ?? 'application/octet-stream' };
      } catch (err) {
        throw toChannelError(name, `download ${file.fileName ?? fileKey}`, err);
      }
    },

    maxFileBytes: MAX_UPLOAD_BYTES,

    /**
     * Upload (im/v1/images for a picture up to 10 MB, shown inline; im/v1/files for anything else,
     * up to 30 MB), then an `image` or `file` message in reply to the message (in its thread).
     */
    async sendFile(to: ReplyTarget, file: OutboundFile) {
      lifecycle.assertStarted('sendFile');
      try {
        const asImage = isInlineImage(file.mimeType) && file.data.length <= UPLOAD_IMAGE_MAX_BYTES;
        const [msgType, content] = asImage
          ? ['image', JSON.stringify({ image_key: await rest.uploadImage(file.data) })]
          : ['file', JSON.stringify({ file_key: await rest.uploadFile(file.name, file.data) })];
        const sent = to.messageId
          ? await rest.reply(to.messageId, msgType, content, Boolean(to.threadId), to.chatId)
          : await rest.create(to.chatId, msgType, content);
        return sentMessage(sent);
      } catch (err) {
        throw toChannelError(name, `upload of ${file.name} in ${to.chatId}`, err);
      }
    },
  };
}

/** im/v1/files takes up to 30 MB, im/v1/images up to 10 MB. */
const MAX_UPLOAD_BYTES = 30 * 1024 * 1024;
const UPLOAD_IMAGE_MAX_BYTES = 10 * 1024 * 1024;

// --- internal ---

function sniffImageType(b: Buffer): string | undefined {
  if (b.subarray(0, 8).equals(Buffer.from('89504e470d0a1a0a', 'hex'))) return 'image/png';
  if (b[0] === 0xff && b[1] === 0xd8) return 'image/jpeg';
  if (b.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return undefined;
}
