import { AttachmentBuilder, type Client, DiscordAPIError, type Message, type SendableChannels, type TextBasedChannel } from 'discord.js';
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
  type ReplyTarget,
  type SentMessage,
} from '../types.js';
import { formatDiscordApprovalComponents } from './approval.js';
import { toDiscordChannelError } from './errors.js';
import { renderDiscordMarkdown } from './format.js';
import { type DiscordSelf, toInboundMessage } from './inbound.js';
import { DISCORD_MAX_IMAGE_BYTES, readDiscordAttachment } from './media.js';

/** Discord counts characters (code points) of `content`; UTF-16 length is never smaller, so the bridge's count is safe. */
export const DISCORD_LIMIT: MessageLimit = { max: 2000, unit: 'chars' };

/** Discord lets a bot edit about five messages per five seconds in a channel. */
export const DISCORD_EDIT_INTERVAL_MS = 1_000;

/** Discord's page size for GET /channels/:id/messages. */
const HISTORY_PAGE = 100;

type Postable = TextBasedChannel & SendableChannels;

/** What the outbound side needs from the connection: its client, the bot's identity on it, its logger. */
export interface DiscordLink {
  readonly client: Client | undefined;
  readonly log: Logger;
  self(c: Client): DiscordSelf;
}

export interface DiscordOutboundDeps {
  name: string;
  link: DiscordLink;
  /** The adapter's lifecycle: every call below needs a started adapter. */
  started: Pick<Lifecycle, 'assertStarted' | 'isStarted' | 'connected'>;
}

/**
 * The outbound side of channel_f: everything the bot says over REST (messages, edits, typing,
 * attachments, approval buttons) and the history it reads. discord.js's REST manager queues
 * requests per route and waits out a 429 by itself; what fails becomes a ChannelError in errors.ts.
 */
export class DiscordOutbound {
  private readonly d: DiscordOutboundDeps;

  constructor(deps: DiscordOutboundDeps) {
    this.d = deps;
  }

  reply(to: ReplyTarget, markdown: string): Promise<SentMessage | undefined> {
    return this.replyIn('reply', to, markdown);
  }

  askApproval(to: ReplyTarget, prompt: ApprovalPrompt): Promise<SentMessage | undefined> {
    return this.replyIn('askApproval', to, prompt.text, prompt);
  }

  async send(chatId: string, markdown: string): Promise<SentMessage | undefined> {
    const c = this.live('send');
    try {
      const ch = await this.destination(c, chatId);
      const m = await post(ch, markdown);
      return m && sent(chatId, m);
    } catch (err) {
      throw this.fail(`send to ${chatId}`, err);
    }
  }

  async edit(message: SentMessage, markdown: string): Promise<void> {
    const c = this.live('edit');
    const channelId = typeof message.extra?.channelId === 'string' ? message.extra.channelId : message.chatId;
    try {
      const ch = await this.channelById(c, channelId);
      await ch.messages.edit(message.messageId, { content: renderDiscordMarkdown(markdown) || '…' });
    } catch (err) {
      throw this.fail(`edit ${message.messageId}`, err);
    }
  }

  async remove(message: SentMessage): Promise<void> {
    const c = this.live('remove');
    const channelId = typeof message.extra?.channelId === 'string' ? message.extra.channelId : message.chatId;
    try {
      await (await this.channelById(c, channelId)).messages.delete(message.messageId);
    } catch (err) {
      throw this.fail(`delete ${message.messageId}`, err);
    }
  }

  async typing(to: ReplyTarget): Promise<void> {
    const client = this.d.link.client;
    if (!this.d.started.isStarted() || !client) return;
    try {
      await (await this.channelById(client, to.threadId ?? to.chatId)).sendTyping();
    } catch (err) {
      this.d.link.log.debug(`typing in ${to.threadId ?? to.chatId} failed: ${String(err)}`);
    }
  }

  async readHistory(chatId: string, { since, limit }: { since: Date; limit: number }): Promise<InboundMessage[]> {
    const c = this.live('readHistory');
    try {
      const ch = await this.channelById(c, chatId);
      const out: InboundMessage[] = [];
      let before: string | undefined;
      // Newest first, page by page, until older than `since` or `limit` reached: the newest
      // `limit` messages since `since`, returned oldest first.
      while (out.length < limit) {
        const want = Math.min(HISTORY_PAGE, limit - out.length);
        const page = [...(await ch.messages.fetch({ limit: want, ...(before ? { before } : {}) })).values()];
        for (const m of page) {
          if (m.createdTimestamp < since.getTime() || out.length >= limit) break;
          const msg = toInboundMessage(m, this.d.link.self(c));
          if (msg) out.push(msg);
        }
        const oldest = page.at(-1);
        if (page.length < want || !oldest || oldest.createdTimestamp < since.getTime()) break;
        before = oldest.id;
      }
      return out.sort((a, b) => a.ts - b.ts || compareSnowflakes(a.messageId, b.messageId));
    } catch (err) {
      throw this.fail(`history of ${chatId}`, err);
    }
  }

  async downloadImage(image: InboundImage): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadImage');
    try {
      return await readDiscordAttachment(this.d.name, image, { maxBytes: DISCORD_MAX_IMAGE_BYTES });
    } catch (err) {
      throw this.fail(`download ${image.fileName ?? 'image'}`, err);
    }
  }

  async downloadFile(file: InboundFile, { maxBytes }: { maxBytes: number }): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadFile');
    try {
      return await readDiscordAttachment(this.d.name, file, { maxBytes });
    } catch (err) {
      throw this.fail(`download ${file.fileName ?? 'file'}`, err);
    }
  }

  /** One attachment in the reply's channel or thread; Discord shows pictures inline by itself. */
  async sendFile(to: ReplyTarget, file: OutboundFile): Promise<SentMessage> {
    const c = this.live('sendFile');
    try {
      const ch = await this.channelById(c, to.threadId ?? to.chatId);
      return sent(to.chatId, await ch.send({ files: [new AttachmentBuilder(file.data, { name: file.name })] }));
    } catch (err) {
      throw this.fail(`upload of ${file.name} in ${to.threadId ?? to.chatId}`, err);
    }
  }

  // --- internal ---

  private live(what: string): Client {
    return this.d.started.connected(what, this.d.link.client);
  }

  private fail(what: string, err: unknown): ChannelError {
    return toDiscordChannelError(this.d.name, what, err);
  }

  private async replyIn(what: string, to: ReplyTarget, markdown: string, prompt?: ApprovalPrompt): Promise<SentMessage | undefined> {
    const c = this.live(what);
    try {
      const ch = await this.channelById(c, to.threadId ?? to.chatId);
      const m = await post(ch, markdown, to.messageId, prompt);
      return m && sent(to.chatId, m);
    } catch (err) {
      throw this.fail(`${what} in ${to.threadId ?? to.chatId}`, err);
    }
  }

  private async channelById(c: Client, id: string): Promise<Postable> {
    if (!/^\d{1,20}$/.test(id)) throw new ChannelError(this.d.name, 'not_found', `"${id}" is not a Discord id (a snowflake of digits)`);
    const ch = await c.channels.fetch(id);
    if (!ch?.isTextBased() || !ch.isSendable()) throw new ChannelError(this.d.name, 'not_found', `channel ${id} is not a text channel the bot can use`);
    return ch;
  }

  /** `send` takes a channel id, a DM channel id or a user id (`user:<id>` forces the user reading). */
  private async destination(c: Client, chatId: string): Promise<Postable> {
    const userId = /^user:(\d{1,20})$/.exec(chatId)?.[1];
    if (userId) return c.users.createDM(userId);
    try {
      return await this.channelById(c, chatId);
    } catch (err) {
      if (!(err instanceof DiscordAPIError && err.code === 10003)) throw err; // Unknown Channel: maybe a user id
      return c.users.createDM(chatId);
    }
  }
}

// --- internal ---

async function post(ch: SendableChannels, markdown: string, replyTo?: string, prompt?: ApprovalPrompt): Promise<Message | undefined> {
  const content = renderDiscordMarkdown(markdown);
  if (!content) return undefined; // Discord refuses empty messages (50006); there is nothing to show anyway
  return ch.send({
    content,
    ...(replyTo ? { reply: { messageReference: replyTo, failIfNotExists: false } } : {}),
    ...(prompt ? { components: formatDiscordApprovalComponents(prompt) as never } : {}),
  });
}

function sent(chatId: string, m: Message): SentMessage {
  return { chatId, messageId: m.id, ...(m.channelId !== chatId ? { extra: { channelId: m.channelId } } : {}) };
}

function compareSnowflakes(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
