import { isInlineImage } from '../../core/files/file-names.js';
import type { Logger } from '../../core/logger.js';
import type { ApprovalPrompt } from '../approval-prompt.js';
import type { Lifecycle } from '../lifecycle.js';
import {
  ChannelError,
  type InboundFile,
  type InboundImage,
  type InboundMessage,
  type MessageLimit,
  type OutboundFile,
  type ReplyStream,
  type ReplyTarget,
  type SentMessage,
} from '../types.js';
import { formatLarkApprovalCard, type LarkPromptPlace } from './approval.js';
import type { LarkChatKinds } from './chats.js';
import { isFormatRefusal, larkCode, toLarkChannelError } from './errors.js';
import { renderLarkMarkdown } from './format.js';
import { fromHistoryItem, type LarkSelf } from './inbound.js';
import { LARK_MAX_IMAGE_BYTES, type LarkRest, type LarkSent } from './rest.js';
import { openCardStream } from './stream.js';

/**
 * The size the bridge splits rendered text to, in UTF-8 bytes. Lark caps a post's `content` JSON at
 * 30,000 bytes. The rendered text goes into that JSON as a string, where escaping at most doubles
 * it (`"`, `\`, newline and tab become two bytes; render() drops the other control characters, the
 * only ones that would take six), plus about 60 bytes of post wrapper: 2 × 14,900 + 60 < 30,000.
 * Conservative on purpose: a chunk that fits here can never be refused for size.
 */
export const LARK_LIMIT: MessageLimit = { max: 14_900, unit: 'bytes' };

/** im/v1/files takes up to 30 MB, im/v1/images up to 10 MB. */
export const LARK_MAX_UPLOAD_BYTES = 30 * 1024 * 1024;
const UPLOAD_IMAGE_MAX_BYTES = 10 * 1024 * 1024;
/** GET /im/v1/messages takes page_size 1-50. */
const HISTORY_PAGE = 50;
/** "The message was recalled": reply to the chat instead. */
const RECALLED = 230011;

/**
 * Replies and sends are `post` messages with one `md` element, not cards: a post is an ordinary
 * chat message (selectable, quotable, forwardable), and it can be edited in place with
 * PUT /im/v1/messages/:id, which cards cannot. Only streaming uses a card (stream.ts).
 */
export function postContent(text: string): string {
  return JSON.stringify({ zh_cn: { title: '', content: [[{ tag: 'md', text }]] } });
}

export function textContent(text: string): string {
  return JSON.stringify({ text });
}

/**
 * Sends `text` as a post; when Lark refuses the post itself (bad content, too large as a post), sends
 * the same text once more as a plain `text` message (150 KB cap), so the reader still gets it.
 */
export async function sendWithPlainRetry<T>(text: string, send: (msgType: 'post' | 'text', content: string) => Promise<T>, log: Logger): Promise<T> {
  try {
    return await send('post', postContent(text));
  } catch (err) {
    if (!isFormatRefusal(err)) throw err;
    log.debug(`post refused (code ${larkCode(err) ?? '?'}); retrying as plain text`);
    return send('text', textContent(text));
  }
}

/** What the outbound side needs from the connection: the REST client, chat kinds, the bot's identity. */
export interface LarkLink {
  readonly rest: LarkRest;
  readonly chats: LarkChatKinds;
  readonly self: LarkSelf | undefined;
  readonly log: Logger;
}

export interface LarkOutboundDeps {
  name: string;
  link: LarkLink;
  /** The adapter's lifecycle: every call below needs a started adapter. */
  started: Pick<Lifecycle, 'assertStarted' | 'connected'>;
  /** Where each approval card went (written here, read by the connection when a button is pressed). */
  prompts: Map<string, LarkPromptPlace>;
}

/**
 * The outbound side of channel_a, all over REST: posts (in reply to the message, or to the chat
 * once it was recalled), edits, approval cards, CardKit stream cards (stream.ts), uploads and
 * downloads, and history. Refusals become ChannelErrors in errors.ts.
 */
export class LarkOutbound {
  private readonly d: LarkOutboundDeps;

  constructor(deps: LarkOutboundDeps) {
    this.d = deps;
  }

  async reply(to: ReplyTarget, markdown: string): Promise<SentMessage | undefined> {
    this.d.started.assertStarted('reply');
    const { rest, log } = this.d.link;
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
      throw this.fail(`reply in ${to.chatId}`, err);
    }
  }

  /**
   * An interactive card (the prompt, then one button per answer) in reply to the message. A press
   * arrives as a `card.action.trigger` callback on the long connection (the connection's onCardAction).
   */
  async askApproval(to: ReplyTarget, prompt: ApprovalPrompt): Promise<SentMessage | undefined> {
    this.d.started.assertStarted('askApproval');
    const { rest } = this.d.link;
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
      this.d.prompts.set(sent.messageId, { chatType: to.chatType, threadId: to.threadId });
      return sentMessage(sent);
    } catch (err) {
      throw this.fail(`approval card in ${to.chatId}`, err);
    }
  }

  async send(chatId: string, markdown: string): Promise<SentMessage | undefined> {
    this.d.started.assertStarted('send');
    const { rest, log } = this.d.link;
    const text = renderLarkMarkdown(markdown);
    if (!text) return undefined;
    try {
      return sentMessage(await sendWithPlainRetry(text, (type, content) => rest.create(chatId, type, content), log));
    } catch (err) {
      throw this.fail(`send to ${chatId}`, err);
    }
  }

  async edit(message: SentMessage, markdown: string): Promise<void> {
    this.d.started.assertStarted('edit');
    const { rest, log } = this.d.link;
    try {
      await sendWithPlainRetry(renderLarkMarkdown(markdown) || '…', (type, content) => rest.update(message.messageId, type, content), log);
    } catch (err) {
      throw this.fail(`edit ${message.messageId}`, err);
    }
  }

  async openStream(to: ReplyTarget): Promise<ReplyStream> {
    this.d.started.assertStarted('openStream');
    const { rest, log } = this.d.link;
    try {
      return await openCardStream({ channel: this.d.name, rest, render: renderLarkMarkdown, log, maxBytes: LARK_LIMIT.max }, to);
    } catch (err) {
      throw this.fail(`open a stream card in ${to.chatId}`, err);
    }
  }

  async readHistory(chatId: string, { since, limit }: { since: Date; limit: number }): Promise<InboundMessage[]> {
    const me = this.identity('readHistory');
    const { rest, chats } = this.d.link;
    try {
      const chatType = await chats.of(chatId);
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
      throw this.fail(`history of ${chatId}`, err);
    }
  }

  async downloadImage(image: InboundImage): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadImage');
    const { name } = this.d;
    const [messageId, fileKey] = image.ref.split('/');
    if (!messageId || !fileKey) throw new ChannelError(name, 'not_found', `image ref "${image.ref}" is not <message_id>/<image_key>`);
    try {
      const { data, mimeType } = await this.d.link.rest.resource(name, messageId, fileKey, 'image', LARK_MAX_IMAGE_BYTES);
      return {
        data,
        mimeType: mimeType && mimeType !== 'application/octet-stream' ? mimeType : (sniffImageType(data) ?? image.mimeType ?? 'application/octet-stream'),
      };
    } catch (err) {
      throw this.fail(`download ${fileKey}`, err);
    }
  }

  async downloadFile(file: InboundFile, { maxBytes }: { maxBytes: number }): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadFile');
    const { name } = this.d;
    const [messageId, fileKey] = file.ref.split('/');
    if (!messageId || !fileKey) throw new ChannelError(name, 'not_found', `file ref "${file.ref}" is not <message_id>/<file_key>`);
    try {
      const { data, mimeType } = await this.d.link.rest.resource(name, messageId, fileKey, 'file', maxBytes);
      return { data, mimeType: file.mimeType ?? mimeType ?? 'application/octet-stream' };
    } catch (err) {
      throw this.fail(`download ${file.fileName ?? fileKey}`, err);
    }
  }

  /**
   * Upload (im/v1/images for a picture up to 10 MB, shown inline; im/v1/files for anything else,
   * up to 30 MB), then an `image` or `file` message in reply to the message (in its thread).
   */
  async sendFile(to: ReplyTarget, file: OutboundFile): Promise<SentMessage> {
    this.d.started.assertStarted('sendFile');
    const { rest } = this.d.link;
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
      throw this.fail(`upload of ${file.name} in ${to.chatId}`, err);
    }
  }

  // --- internal ---

  /** The bot's identity, once started (set before start() resolves). */
  private identity(what: string): LarkSelf {
    return this.d.started.connected(what, this.d.link.self);
  }

  private fail(what: string, err: unknown): ChannelError {
    return toLarkChannelError(this.d.name, what, err);
  }
}

const sentMessage = (s: LarkSent): SentMessage => ({ chatId: s.chatId, messageId: s.messageId });

function sniffImageType(b: Buffer): string | undefined {
  if (b.subarray(0, 8).equals(Buffer.from('89504e470d0a1a0a', 'hex'))) return 'image/png';
  if (b[0] === 0xff && b[1] === 0xd8) return 'image/jpeg';
  if (b.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return undefined;
}
