import type { Bot } from 'grammy';
import type { Message } from 'grammy/types';
import type { Logger } from '../../core/logger.js';
import type { ApprovalPrompt } from '../approval-prompt.js';
import { openLiveReply } from '../delivery/live-reply.js';
import { createChatPacer } from '../delivery/pacer.js';
import type { Lifecycle } from '../lifecycle.js';
import type {
  ChannelError,
  InboundFile,
  InboundImage,
  MessageLimit,
  OpenStreamOptions,
  OutboundFile,
  ReplyStream,
  ReplyTarget,
  SentMessage,
} from '../types.js';
import { formatTelegramApprovalKeyboard } from './approval.js';
import { openDraftReply } from './draft-reply.js';
import { describeTelegramError as describe, isNotModified, isParseError, type TelegramEndpoint, toTelegramChannelError } from './errors.js';
import { renderTelegramMarkdownV2, renderTelegramPlain } from './format.js';
import { mimeFromPath, nativeMessageId } from './inbound.js';
import { downloadTelegramFile, sendTelegramFile, type TelegramFileAccess } from './media.js';

/** Telegram counts 4096 characters after entity parsing; rendered MarkdownV2 is never shorter. */
export const TELEGRAM_LIMIT: MessageLimit = { max: 4096, unit: 'chars' };

/** Telegram allows about one message or edit per second in a chat: the pace of a growing reply. */
export const TELEGRAM_EDIT_INTERVAL_MS = 1_000;

/** Pictures sent to a bot are small; what the Bot API lets a bot download at all. */
const IMAGE_MAX_BYTES = 20 * 1024 * 1024;

type Sendable = Parameters<Bot['api']['sendMessage']>[2];

/** What the outbound side needs from the connection: its client and its logger. */
export interface TelegramLink {
  readonly api: Bot['api'] | undefined;
  readonly log: Logger;
}

export interface TelegramOutboundDeps {
  name: string;
  endpoint: TelegramEndpoint;
  link: TelegramLink;
  /** The adapter's lifecycle: every call below needs a started adapter. */
  started: Pick<Lifecycle, 'assertStarted' | 'isStarted' | 'connected'>;
  /** Grow replies in private chats as drafts (sendMessageDraft) rather than by edits. */
  drafts: boolean;
}

/**
 * The outbound side of channel_e: everything the bot says through the Bot API. Text goes as
 * MarkdownV2, and once more as plain text when Telegram cannot parse the entities; edits do the
 * same. Refusals (a 429's retry_after included) become ChannelErrors in errors.ts.
 */
export class TelegramOutbound {
  private readonly d: TelegramOutboundDeps;
  private readonly pacer = createChatPacer({ intervalMs: TELEGRAM_EDIT_INTERVAL_MS });
  /** Set once the Bot API refused a draft: later replies grow by edits at once. */
  private draftsRefused = false;

  constructor(deps: TelegramOutboundDeps) {
    this.d = deps;
  }

  reply(to: ReplyTarget, markdown: string): Promise<SentMessage | undefined> {
    return this.sendText('reply', to.chatId, markdown, replyExtra(to));
  }

  askApproval(to: ReplyTarget, prompt: ApprovalPrompt): Promise<SentMessage | undefined> {
    return this.sendText('askApproval', to.chatId, prompt.text, { ...replyExtra(to), reply_markup: formatTelegramApprovalKeyboard(prompt) });
  }

  send(chatId: string, markdown: string): Promise<SentMessage | undefined> {
    return this.sendText('send', chatId, markdown, {});
  }

  async edit(message: SentMessage, markdown: string): Promise<void> {
    const client = this.api('edit');
    const text = renderTelegramMarkdownV2(markdown);
    if (!text.trim()) return;
    const id = Number(message.messageId);
    try {
      await client.editMessageText(message.chatId, id, text, { parse_mode: 'MarkdownV2' });
      return;
    } catch (e) {
      if (isNotModified(e)) return;
      if (!isParseError(e)) throw this.toError(e, `edit of ${message.messageId}`);
    }
    try {
      await client.editMessageText(message.chatId, id, renderTelegramPlain(markdown));
    } catch (e) {
      if (!isNotModified(e)) throw this.toError(e, `edit of ${message.messageId} (plain text)`);
    }
  }

  async remove(message: SentMessage): Promise<void> {
    const client = this.api('remove');
    try {
      await client.deleteMessage(message.chatId, Number(message.messageId));
    } catch (e) {
      throw this.toError(e, `delete of ${message.messageId}`);
    }
  }

  /**
   * A reply that grows in one message: in a private chat as a draft (sendMessageDraft, then the
   * final text sent once), elsewhere, or where drafts are refused, by editMessageText; at most
   * one call per second per chat, 429s waited out (delivery/live-reply.ts).
   */
  async openStream(to: ReplyTarget, opts: OpenStreamOptions = {}): Promise<ReplyStream> {
    this.api('openStream');
    const base = {
      name: this.d.name,
      limit: TELEGRAM_LIMIT,
      render: renderTelegramMarkdownV2,
      post: (md: string) => this.reply(to, md),
    };
    const edited = () =>
      openLiveReply(
        { ...base, edit: (m, md) => this.edit(m, md), remove: (m) => this.remove(m) },
        { pacer: this.pacer, chat: to.chatId, log: this.d.link.log, ...(opts.onPosted ? { onPosted: opts.onPosted } : {}) },
      );
    if (!this.d.drafts || this.draftsRefused || to.chatType !== 'direct') return edited();
    return openDraftReply({
      ...base,
      draft: (id, md) => this.draft(to, id, md),
      pacer: this.pacer,
      chat: to.chatId,
      log: this.d.link.log,
      ...(opts.onPosted ? { onPosted: opts.onPosted } : {}),
      fallback: () => {
        this.draftsRefused = true;
        return edited();
      },
    });
  }

  async typing(to: ReplyTarget): Promise<void> {
    const api = this.d.link.api;
    if (!this.d.started.isStarted() || !api) return;
    try {
      await api.sendChatAction(to.chatId, 'typing', to.threadId ? { message_thread_id: Number(to.threadId) } : {});
    } catch (e) {
      this.d.link.log.debug(`typing failed: ${describe(e)}`);
    }
  }

  async downloadImage(image: InboundImage): Promise<{ data: Buffer; mimeType: string }> {
    const { data, path } = await downloadTelegramFile(this.files('downloadImage'), image.ref, IMAGE_MAX_BYTES);
    // Photos come without a type; Telegram re-encodes them as JPEG.
    return { data, mimeType: image.mimeType ?? mimeFromPath(path) ?? 'image/jpeg' };
  }

  async downloadFile(file: InboundFile, opts: { maxBytes: number }): Promise<{ data: Buffer; mimeType: string }> {
    const { data } = await downloadTelegramFile(this.files('downloadFile'), file.ref, opts.maxBytes);
    return { data, mimeType: file.mimeType ?? 'application/octet-stream' };
  }

  async sendFile(to: ReplyTarget, file: OutboundFile): Promise<SentMessage> {
    const m = await sendTelegramFile(this.files('sendFile'), to, file);
    return { chatId: String(m.chat.id), messageId: String(m.message_id) };
  }

  // --- internal ---

  private api(what: string): Bot['api'] {
    return this.d.started.connected(what, this.d.link.api);
  }

  private async sendText(what: 'reply' | 'send' | 'askApproval', chatId: string, markdown: string, extra: Sendable): Promise<SentMessage | undefined> {
    const client = this.api(what);
    const text = renderTelegramMarkdownV2(markdown);
    if (!text.trim()) return undefined;
    const sent = (m: Message) => ({ chatId: String(m.chat.id), messageId: String(m.message_id) });
    try {
      return sent(await client.sendMessage(chatId, text, { ...extra, parse_mode: 'MarkdownV2' }));
    } catch (e) {
      if (!isParseError(e)) throw this.toError(e, `${what} to ${chatId}`);
      this.d.link.log.warn(`Telegram refused the formatting (${describe(e)}); sending plain text`);
    }
    try {
      return sent(await client.sendMessage(chatId, renderTelegramPlain(markdown), extra));
    } catch (e) {
      throw this.toError(e, `${what} to ${chatId} (plain text)`);
    }
  }

  /** sendMessageDraft in MarkdownV2, and once more as plain text when Telegram cannot parse it. */
  private async draft(to: ReplyTarget, draftId: number, markdown: string): Promise<void> {
    const client = this.api('draft');
    const thread = to.threadId ? { message_thread_id: Number(to.threadId) } : {};
    const chat = Number(to.chatId);
    try {
      await client.sendMessageDraft(chat, draftId, renderTelegramMarkdownV2(markdown), { ...thread, parse_mode: 'MarkdownV2' });
      return;
    } catch (e) {
      if (!isParseError(e)) throw this.toError(e, `draft in ${to.chatId}`);
    }
    try {
      await client.sendMessageDraft(chat, draftId, renderTelegramPlain(markdown), thread);
    } catch (e) {
      throw this.toError(e, `draft in ${to.chatId} (plain text)`);
    }
  }

  private toError(e: unknown, what: string): ChannelError {
    return toTelegramChannelError(this.d.name, this.d.endpoint, e, what);
  }

  private files(what: string): TelegramFileAccess {
    const { name, endpoint } = this.d;
    return { name, token: endpoint.token, apiRoot: endpoint.apiRoot, api: this.api(what), toError: (e, w) => this.toError(e, w) };
  }
}

/** Quote the message answered, in its forum topic. */
function replyExtra(to: ReplyTarget): Sendable {
  const id = nativeMessageId(to.messageId);
  return {
    ...(id ? { reply_parameters: { message_id: id, allow_sending_without_reply: true } } : {}),
    ...(to.threadId ? { message_thread_id: Number(to.threadId) } : {}),
  };
}
