import { randomUUID } from 'node:crypto';
import type { TemplateCard, WSClient } from '@wecom/aibot-node-sdk';
import type { Logger } from '../../core/logger.js';
import type { ApprovalPrompt } from '../approval-prompt.js';
import { BoundedMap } from '../bounded-map.js';
import type { Lifecycle } from '../lifecycle.js';
import { ChannelError, type InboundFile, type InboundImage, type OutboundFile, type ReplyStream, type ReplyTarget, type SentMessage } from '../types.js';
import { createApprovalCard } from './approval.js';
import { toWecomChannelError } from './errors.js';
import { renderWecomMarkdown } from './format.js';
import { readWecomReplyExtra } from './inbound.js';
import { downloadWecomMedia, sendWecomFile, WECOM_MAX_FILE_BYTES } from './media.js';

/** How many recent inbound messages remember their reply stream (the bridge replies soon after). */
const REMEMBERED_REPLIES = 2_000;

/** Per inbound message: the stream bubble opened for it ('open') or already finished ('used'). */
interface ReplyState {
  streamId: string;
  state: 'open' | 'used';
}

/** What the outbound side needs from the connection: the SDK client (one socket both ways) and its logger. */
export interface WecomLink {
  readonly client: WSClient | undefined;
  readonly log: Logger;
}

export interface WecomOutboundDeps {
  name: string;
  link: WecomLink;
  /** The adapter's lifecycle: every call below needs a started adapter. */
  started: Pick<Lifecycle, 'assertStarted' | 'isStarted'>;
  /** Approval cards by task_id (written here, read by the connection when a button is pressed). */
  cards: Map<string, TemplateCard>;
}

const frameOf = (reqId: string) => ({ headers: { req_id: reqId } });

/**
 * The outbound side of channel_c, over the same socket: a reply goes into the inbound message's
 * stream bubble (opened early by typing()), and proactively with aibot_send_msg once that bubble
 * is used or its req_id died with an earlier connection; streams, files and approval cards.
 */
export class WecomOutbound {
  private readonly d: WecomOutboundDeps;
  private readonly replies = new BoundedMap<string, ReplyState>(REMEMBERED_REPLIES);

  constructor(deps: WecomOutboundDeps) {
    this.d = deps;
  }

  async reply(to: ReplyTarget, markdown: string): Promise<SentMessage> {
    this.d.started.assertStarted('reply');
    const content = renderWecomMarkdown(markdown);
    const claim = this.claimStream(to);
    if (claim) {
      try {
        // A buffered reply is one stream frame that is also the last.
        await this.client().replyStream(frameOf(claim.reqId), claim.streamId, content, true);
        return { chatId: to.chatId, messageId: claim.streamId };
      } catch (err) {
        const e = toWecomChannelError(this.d.name, err, 'aibot_respond_msg');
        if (e.kind !== 'not_found') throw e;
        // The req_id died with its connection (846605 after a reconnect): answer proactively.
        this.d.link.log.debug(`reply to ${to.messageId ?? ''} falls back to aibot_send_msg: ${e.message}`);
      }
    }
    return this.sendMarkdown(to.chatId, content);
  }

  async send(chatId: string, markdown: string): Promise<SentMessage> {
    this.d.started.assertStarted('send');
    // aibot_send_msg takes a userid (one-to-one) or a group chatid alike.
    return this.sendMarkdown(chatId, renderWecomMarkdown(markdown));
  }

  /** Opens the reply bubble early (an empty, unfinished stream frame); reply/openStream reuse it. */
  async typing(to: ReplyTarget): Promise<void> {
    const reqId = readWecomReplyExtra(to.extra).reqId;
    const client = this.d.link.client;
    if (!this.d.started.isStarted() || !reqId || !to.messageId || this.replies.has(to.messageId) || !client) return;
    const streamId = randomUUID();
    this.replies.set(to.messageId, { streamId, state: 'open' });
    try {
      await client.replyStream(frameOf(reqId), streamId, '', false);
    } catch (err) {
      // Best effort. A dead req_id stays claimed so that the reply goes proactive at once.
      const e = toWecomChannelError(this.d.name, err, 'typing');
      if (e.kind !== 'not_found' && this.replies.get(to.messageId)?.state === 'open') this.replies.delete(to.messageId);
      this.d.link.log.debug(`typing: ${e.message}`);
    }
  }

  async downloadImage(image: InboundImage): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadImage');
    return downloadWecomMedia(this.d.name, this.client(), image.ref, { maxBytes: WECOM_MAX_FILE_BYTES });
  }

  async downloadFile(file: InboundFile, { maxBytes }: { maxBytes: number }): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadFile');
    return downloadWecomMedia(this.d.name, this.client(), file.ref, { maxBytes, file });
  }

  async sendFile(to: ReplyTarget, file: OutboundFile): Promise<SentMessage> {
    this.d.started.assertStarted('sendFile');
    return sendWecomFile(this.d.name, this.client(), to.chatId, file);
  }

  /** A button_interaction card, sent proactively (the message's reply bubble carries the text stream). */
  async askApproval(to: ReplyTarget, prompt: ApprovalPrompt): Promise<SentMessage> {
    this.d.started.assertStarted('askApproval');
    const { cards } = this.d;
    const card = createApprovalCard(prompt);
    const taskId = card.task_id as string;
    // Remembered before it is sent: a press can reach us before the send's receipt does.
    cards.set(taskId, card);
    try {
      await this.client().sendMessage(to.chatId, { msgtype: 'template_card', template_card: card });
    } catch (err) {
      cards.delete(taskId);
      throw toWecomChannelError(this.d.name, err, 'aibot_send_msg template_card');
    }
    return { chatId: to.chatId, messageId: taskId };
  }

  async openStream(to: ReplyTarget): Promise<ReplyStream> {
    this.d.started.assertStarted('openStream');
    const claim = this.claimStream(to);
    let dead = !claim;
    let closed = false;
    return {
      update: async (markdown) => {
        if (dead || closed || !claim) return;
        try {
          // Frames replace the bubble; one still waiting for its receipt makes this one redundant.
          await this.client().replyStreamNonBlocking(frameOf(claim.reqId), claim.streamId, renderWecomMarkdown(markdown), false);
        } catch (err) {
          const e = toWecomChannelError(this.d.name, err, 'stream update');
          if (e.kind !== 'not_found') throw e;
          dead = true; // finish() sends the whole text proactively instead
        }
      },
      finish: async (markdown) => {
        if (closed) return;
        closed = true;
        const content = renderWecomMarkdown(markdown);
        if (!dead && claim) {
          try {
            await this.client().replyStream(frameOf(claim.reqId), claim.streamId, content, true);
            return;
          } catch (err) {
            const e = toWecomChannelError(this.d.name, err, 'stream finish');
            if (e.kind !== 'not_found') throw e;
          }
        }
        await this.sendMarkdown(to.chatId, content);
      },
    };
  }

  /** Forgets the reply bubbles and approval cards of a connection that is gone (its req_ids died with it). */
  forget(): void {
    this.replies.clear();
    this.d.cards.clear();
  }

  // --- internal ---

  private client(): WSClient {
    const client = this.d.link.client;
    if (!client) throw new ChannelError(this.d.name, 'not_connected', 'not connected (the adapter was stopped)');
    return client;
  }

  private async sendMarkdown(chatId: string, content: string): Promise<SentMessage> {
    try {
      const receipt = await this.client().sendMessage(chatId, { msgtype: 'markdown', markdown: { content } });
      return { chatId, messageId: receipt.headers.req_id };
    } catch (err) {
      throw toWecomChannelError(this.d.name, err, 'aibot_send_msg');
    }
  }

  /**
   * Claims the inbound message's stream bubble for one visible reply: the one typing() opened, or a
   * new one. Undefined when the message has no usable req_id or its bubble was already used (a
   * second part of a split reply): the caller then sends a separate proactive message.
   */
  private claimStream(to: ReplyTarget): { reqId: string; streamId: string } | undefined {
    const reqId = readWecomReplyExtra(to.extra).reqId;
    const key = to.messageId;
    if (!reqId || !key) return undefined;
    const prior = this.replies.get(key);
    if (prior?.state === 'used') return undefined;
    const streamId = prior?.streamId ?? randomUUID();
    this.replies.set(key, { streamId, state: 'used' });
    return { reqId, streamId };
  }
}
