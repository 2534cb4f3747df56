import { randomUUID } from 'node:crypto';
import { errorMessage } from '../../core/errors.js';
import { mimeTypeOf } from '../../core/files/file-names.js';
import type { Logger } from '../../core/logger.js';
import type { ApprovalPrompt } from '../approval-prompt.js';
import type { Lifecycle } from '../lifecycle.js';
import { ChannelError, type InboundFile, type InboundImage, type OutboundFile, type ReplyStream, type ReplyTarget, type SentMessage } from '../types.js';
import { formatApprovalCardParams } from './approval.js';
import { deliverCard, openAiCard } from './cards.js';
import { dingtalkTitle, renderDingtalkMarkdown } from './format.js';
import { parseChatId, readDingtalkReplyExtra } from './inbound.js';
import type { DingtalkApi, Json } from './openapi.js';

/**
 * The largest file a robot can send: the media upload takes files of up to 20 MB (pictures: JPG,
 * PNG, GIF, BMP up to 20 MB); sampleFile then names the media id.
 */
export const DINGTALK_MAX_FILE_BYTES = 20 * 1024 * 1024;
const DINGTALK_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/bmp'];
/** Do not start a reply on a sessionWebhook this close to its expiry. */
const WEBHOOK_MARGIN_MS = 5_000;

type RobotTarget = { group: boolean; id: string; robotCode?: string | undefined };

export interface DingtalkOutboundDeps {
  name: string;
  /** The app's client id: the robot code of messages whose reply data names none. */
  clientId: string;
  /** The card-builder template of approval cards (askApproval is offered only with one). */
  approvalCardTemplateId?: string | undefined;
  /** The OpenAPI (and the older API's media upload); stop() aborts its requests in flight. */
  api: DingtalkApi;
  link: { readonly log: Logger };
  /** The adapter's lifecycle: every call below needs a started adapter. */
  started: Pick<Lifecycle, 'assertStarted'>;
  /** outTrackId → where the approval card went (written here, read by the connection on a press). */
  approvalCards: Map<string, ReplyTarget>;
}

/**
 * The outbound side of channel_b, over HTTP rather than the stream: a reply goes to the message's
 * sessionWebhook while it is valid, else through the robot OpenAPI (also for proactive sends);
 * streams are AI cards (cards.ts), approvals interactive cards, files a media upload and a
 * template message.
 */
/** File extensions of the recording types a voice message may be served as. */
const RECORDING_EXTENSIONS: Record<string, string> = {
  'audio/amr': 'amr',
  'audio/ogg': 'ogg',
  'audio/opus': 'opus',
  'audio/mpeg': 'mp3',
  'audio/mp4': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/aac': 'aac',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/webm': 'webm',
};

export class DingtalkOutbound {
  private readonly d: DingtalkOutboundDeps;

  constructor(deps: DingtalkOutboundDeps) {
    this.d = deps;
  }

  async reply(to: ReplyTarget, markdown: string): Promise<SentMessage | undefined> {
    this.d.started.assertStarted('reply');
    const text = renderDingtalkMarkdown(markdown);
    const extra = readDingtalkReplyExtra(to.extra);
    if (extra.sessionWebhook && (extra.sessionWebhookExpiredTime ?? 0) > Date.now() + WEBHOOK_MARGIN_MS) {
      try {
        await this.d.api.postWebhook(extra.sessionWebhook, { msgtype: 'markdown', markdown: { title: dingtalkTitle(text), text } });
        return undefined; // a sessionWebhook reply has no message id
      } catch (err) {
        if (!(err instanceof ChannelError && err.kind === 'not_found')) throw err;
        this.d.link.log.debug(`sessionWebhook of ${to.messageId ?? to.chatId} expired early; replying through the OpenAPI`);
      }
    }
    return this.sendRobot({ group: to.chatType === 'group', id: to.chatId, robotCode: extra.robotCode }, text);
  }

  async send(chatId: string, markdown: string): Promise<SentMessage> {
    this.d.started.assertStarted('send');
    return this.sendRobot(parseChatId(chatId), renderDingtalkMarkdown(markdown));
  }

  async downloadImage(image: InboundImage): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadImage');
    const { data, mimeType } = await this.download(image.ref, DINGTALK_MAX_FILE_BYTES);
    return { data, mimeType: mimeType ?? 'image/jpeg' };
  }

  async downloadFile(file: InboundFile, { maxBytes }: { maxBytes: number }): Promise<{ data: Buffer; mimeType: string }> {
    this.d.started.assertStarted('downloadFile');
    const { data, mimeType } = await this.download(file.ref, maxBytes);
    if (file.kind === 'voice' && !file.fileName) {
      // A voice message has no name: its type says which recording it is (DingTalk records AMR).
      file.fileName = `voice.${RECORDING_EXTENSIONS[mimeType ?? ''] ?? 'amr'}`;
      return { data, mimeType: mimeType && mimeType !== 'application/octet-stream' ? mimeType : 'audio/amr' };
    }
    // DingTalk serves some files as application/octet-stream (or with a ".file" name): the name says more.
    const named = file.fileName ? mimeTypeOf(file.fileName) : 'application/octet-stream';
    return { data, mimeType: named !== 'application/octet-stream' ? named : (mimeType ?? named) };
  }

  /** Uploaded to the media API, then sent as a sampleImageMsg (pictures) or sampleFile (the rest). */
  async sendFile(to: ReplyTarget, file: OutboundFile): Promise<SentMessage> {
    this.d.started.assertStarted('sendFile');
    const { api } = this.d;
    const target = { group: to.chatType === 'group', id: to.chatId, robotCode: readDingtalkReplyExtra(to.extra).robotCode };
    // WebP is not among the media API's picture types: it goes as a file.
    if (DINGTALK_IMAGE_TYPES.includes(file.mimeType)) {
      const mediaId = await api.uploadMedia('image', file.name, file.mimeType, file.data);
      return this.sendTemplate(target, 'sampleImageMsg', { photoURL: mediaId });
    }
    const mediaId = await api.uploadMedia('file', file.name, file.mimeType, file.data);
    const ext = file.name.includes('.') ? (file.name.split('.').at(-1) ?? '') : '';
    return this.sendTemplate(target, 'sampleFile', { mediaId, fileName: file.name, fileType: ext.toLowerCase() || 'file' });
  }

  /** The approval card (approval.ts), delivered with stream callbacks; its chat is remembered for the press. */
  async askApproval(to: ReplyTarget, prompt: ApprovalPrompt): Promise<SentMessage> {
    this.d.started.assertStarted('askApproval');
    const outTrackId = `approval_${prompt.id}_${randomUUID()}`;
    const robotCode = readDingtalkReplyExtra(to.extra).robotCode ?? this.d.clientId;
    await deliverCard(this.d.api, this.d.name, to, {
      templateId: this.d.approvalCardTemplateId as string,
      outTrackId,
      robotCode,
      params: formatApprovalCardParams(prompt, renderDingtalkMarkdown(prompt.text)),
      callbackType: 'STREAM',
    });
    this.d.approvalCards.set(outTrackId, { chatId: to.chatId, chatType: to.chatType, extra: { robotCode } });
    return { chatId: to.chatId, messageId: outTrackId };
  }

  async openStream(to: ReplyTarget): Promise<ReplyStream> {
    this.d.started.assertStarted('openStream');
    try {
      return await openAiCard(this.d.api, this.d.name, to, readDingtalkReplyExtra(to.extra).robotCode ?? this.d.clientId);
    } catch (err) {
      // No AI card (the app lacks the Card.Instance.Write / Card.Streaming.Write permissions, or
      // delivery failed): degrade to one buffered reply so that the answer still arrives.
      this.d.link.log.warn(`AI card unavailable, replying without streaming: ${errorMessage(err)}`);
      return {
        update: async () => undefined,
        finish: async (markdown) => {
          await this.reply(to, markdown);
        },
      };
    }
  }

  // --- internal ---

  /** Proactive robot message through the OpenAPI (also the fallback once a sessionWebhook expired). */
  private sendRobot(target: RobotTarget, text: string): Promise<SentMessage> {
    return this.sendTemplate(target, 'sampleMarkdown', { title: dingtalkTitle(text), text });
  }

  /** A robot message template (sampleMarkdown, sampleImageMsg, sampleFile) to a user or group. */
  private async sendTemplate(target: RobotTarget, msgKey: string, param: Json): Promise<SentMessage> {
    const { api } = this.d;
    const robotCode = target.robotCode ?? this.d.clientId;
    const msgParam = JSON.stringify(param);
    const res = target.group
      ? await api.call('POST', '/v1.0/robot/groupMessages/send', { robotCode, openConversationId: target.id, msgKey, msgParam })
      : await api.call('POST', '/v1.0/robot/oToMessages/batchSend', { robotCode, userIds: [target.id], msgKey, msgParam });
    if (Array.isArray(res.invalidStaffIdList) && res.invalidStaffIdList.length > 0) {
      throw new ChannelError(this.d.name, 'not_found', `unknown user id ${target.id}`);
    }
    return { chatId: target.id, messageId: String(res.processQueryKey ?? randomUUID()) };
  }

  /** A downloadCode → its URL (messageFiles/download) → the bytes, at most `maxBytes`. */
  private async download(downloadCode: string, maxBytes: number): Promise<{ data: Buffer; mimeType: string | undefined }> {
    const res = await this.d.api.call('POST', '/v1.0/robot/messageFiles/download', { downloadCode, robotCode: this.d.clientId });
    if (typeof res.downloadUrl !== 'string') throw new ChannelError(this.d.name, 'not_found', 'messageFiles/download gave no downloadUrl');
    return this.d.api.fetchFile(res.downloadUrl, maxBytes);
  }
}
