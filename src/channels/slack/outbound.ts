import type { webApi } from '@slack/bolt';
import type { Logger } from '../../core/logger.js';
import type { ApprovalPrompt } from '../approval-prompt.js';
import type { Lifecycle } from '../lifecycle.js';
import type { InboundFile, InboundImage, InboundMessage, MessageLimit, OutboundFile, ReplyTarget, SentMessage } from '../types.js';
import { formatSlackApprovalBlocks } from './approval.js';
import { describe, slackErrorCode, toSlackChannelError } from './errors.js';
import { downloadSlackFile, uploadSlackFile } from './files.js';
import { renderSlackMrkdwn } from './format.js';
import { normaliseSlackMessage, type SlackIdentity, type SlackMessageEvent } from './inbound.js';

/** Slack truncates at 40 000 characters but asks for at most 4 000 per message for readability. */
export const SLACK_LIMIT: MessageLimit = { max: 4000, unit: 'chars' };
/** chat.update is a Tier 3 method (about 50 a minute) and Slack posts about one message a second per channel. */
export const SLACK_EDIT_INTERVAL_MS = 1_000;
/** Slack takes files up to 1 GB; what we send is capped lower by the chat core (100 MB). */
export const SLACK_MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;

/** Pictures for the model; documents get the limit the bridge passes. */
const IMAGE_MAX_BYTES = 20 * 1024 * 1024;

/** What the outbound side needs from the connection: its client, the bot's identity, sender names. */
export interface SlackLink {
  readonly web: webApi.WebClient | undefined;
  readonly me: SlackIdentity | undefined;
  readonly log: Logger;
  userName(user: string): Promise<string | undefined>;
}

export interface SlackOutboundDeps {
  name: string;
  /** For file downloads: the bot token goes to Slack's file hosts (or the configured API host) only. */
  opts: { botToken: string; apiUrl?: string | undefined };
  link: SlackLink;
  /** The adapter's lifecycle: every call below needs a started adapter. */
  started: Pick<Lifecycle, 'assertStarted' | 'isStarted' | 'connected'>;
}

/**
 * The outbound side of channel_d: everything the bot says through the Web API (chat.postMessage,
 * chat.update, files, the assistant-thread status) and the history it reads. The WebClient retries
 * once and waits out a 429 by itself; what it gives up on becomes a ChannelError in errors.ts.
 */
export class SlackOutbound {
  private readonly d: SlackOutboundDeps;
  private typingOff = false;

  constructor(deps: SlackOutboundDeps) {
    this.d = deps;
  }

  reply(to: ReplyTarget, markdown: string): Promise<SentMessage | undefined> {
    return this.post('reply', to.chatId, markdown, to.threadId);
  }

  send(chatId: string, markdown: string): Promise<SentMessage | undefined> {
    return this.post('send', chatId, markdown, undefined);
  }

  askApproval(to: ReplyTarget, prompt: ApprovalPrompt): Promise<SentMessage | undefined> {
    return this.post('askApproval', to.chatId, prompt.text, to.threadId, prompt);
  }

  async edit(message: SentMessage, markdown: string): Promise<void> {
    const client = this.api('edit');
    const text = renderSlackMrkdwn(markdown);
    if (!text.trim()) return;
    try {
      await client.chat.update({ channel: message.chatId, ts: message.messageId, text });
    } catch (e) {
      throw toSlackChannelError(this.d.name, e, `edit of ${message.messageId}`);
    }
  }

  async remove(message: SentMessage): Promise<void> {
    const client = this.api('remove');
    try {
      await client.chat.delete({ channel: message.chatId, ts: message.messageId });
    } catch (e) {
      throw toSlackChannelError(this.d.name, e, `delete of ${message.messageId}`);
    }
  }

  /**
   * Bots have no typing indicator on Slack except the assistant-thread status, which exists
   * only where the app is an AI app; elsewhere the first refusal turns typing off.
   */
  async typing(to: ReplyTarget): Promise<void> {
    const thread = to.threadId;
    const web = this.d.link.web;
    if (!this.d.started.isStarted() || !web || this.typingOff || !thread) return;
    try {
      await web.assistant.threads.setStatus({ channel_id: to.chatId, thread_ts: thread, status: 'is typing…' });
    } catch (e) {
      const code = slackErrorCode(e);
      if (code && code !== 'ratelimited') this.typingOff = true;
      this.d.link.log.debug(`typing status unavailable: ${code ?? describe(e)}`);
    }
  }

  async readHistory(chatId: string, { since, limit }: { since: Date; limit: number }): Promise<InboundMessage[]> {
    const client = this.api('readHistory');
    const { link, name } = this.d;
    const me = link.me;
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
          const senderName = m.user && !m.bot_id ? await link.userName(m.user) : undefined;
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
  }

  async downloadImage(image: InboundImage): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadImage');
    return downloadSlackFile(this.d.name, image, this.d.opts, IMAGE_MAX_BYTES);
  }

  async downloadFile(file: InboundFile, { maxBytes }: { maxBytes: number }): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadFile');
    return downloadSlackFile(this.d.name, file, this.d.opts, maxBytes);
  }

  /**
   * files.uploadV2: files.getUploadURLExternal, the bytes to the upload URL, then
   * files.completeUploadExternal shares the file into the channel (the reply's thread). Slack
   * shows pictures inline by itself. The share is asynchronous: there is no message ts to return.
   */
  async sendFile(to: ReplyTarget, file: OutboundFile): Promise<undefined> {
    await uploadSlackFile(this.d.name, this.api('sendFile'), to, file);
    return undefined;
  }

  // --- internal ---

  private api(what: string): webApi.WebClient {
    return this.d.started.connected(what, this.d.link.web);
  }

  private async post(
    what: 'reply' | 'send' | 'askApproval',
    channel: string,
    markdown: string,
    thread: string | undefined,
    prompt?: ApprovalPrompt,
  ): Promise<SentMessage | undefined> {
    const client = this.api(what);
    const text = renderSlackMrkdwn(markdown);
    if (!text.trim()) return undefined;
    try {
      // mrkdwn text is never refused for its formatting, so there is no plain-text retry here.
      // With blocks, `text` is what notifications show; the blocks are what the chat shows.
      const blocks = prompt ? { blocks: formatSlackApprovalBlocks(prompt, text) } : {};
      const res = await client.chat.postMessage({ channel, text, ...blocks, ...(thread ? { thread_ts: thread } : {}) });
      return { chatId: res.channel ?? channel, messageId: res.ts ?? '', ...(thread ? { extra: { threadTs: thread } } : {}) };
    } catch (e) {
      throw toSlackChannelError(this.d.name, e, `${what} to ${channel}`);
    }
  }
}
