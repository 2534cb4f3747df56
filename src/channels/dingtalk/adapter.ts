import { randomUUID } from 'node:crypto';
import { TOPIC_CARD, TOPIC_ROBOT, type DWClientDownStream } from 'dingtalk-stream';
import { mimeTypeOf } from '../../core/files/file-names.js';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { createLifecycle } from '../lifecycle.js';
import type { ChannelAdapter, ChannelContext, ChannelDeps, ReplyTarget, SentMessage } from '../types.js';
import { ChannelError } from '../types.js';
import { dingtalkTitle, renderDingtalkMarkdown } from './format.js';
import { type CardCallbackData, createPressMessage, formatApprovalCardParams, parseCardPress } from './approval.js';
import { deliverCard, openAiCard } from './cards.js';
import { normalizeRobotMessage, parseChatId, readReplyExtra, type RobotPayload } from './inbound.js';
import { createDingtalkApi, type Json } from './openapi.js';
import type { ApprovalPrompt } from '../approval-prompt.js';
import { DingtalkStreamClient } from './stream-client.js';

/** channel_b options, as validated by the definition in index.ts. */
export interface DingtalkOptions {
  clientId: string;
  clientSecret: string;
  /** Base of the stream gateway (connections/open) and of the OpenAPI. */
  apiBaseUrl?: string | undefined;
  /** Base of the older API (media upload); https://oapi.dingtalk.com by default. */
  oapiBaseUrl?: string | undefined;
  /** A card-builder template with Allow / Deny / Always buttons (see approval.ts); without it approvals are text. */
  approvalCardTemplateId?: string | undefined;
}

/** Timing knobs; production uses the defaults, tests shorten them. */
export interface DingtalkTuning {
  reconnectMs?: number;
  maxReconnectMs?: number;
  heartbeatMs?: number;
  requestTimeoutMs?: number;
}

/**
 * Bytes of rendered Markdown per message. The groupMessages/send doc caps msgParam at 15 000 bytes;
 * msgParam is the JSON string {"title","text"}, where escaping can at most double the text (quotes,
 * backslashes, newlines; control characters are dropped by render()), and the title adds at most
 * ~400 bytes. 7 000 × 2 + 400 + braces stays under 15 000 for any text, and well under the
 * sessionWebhook's (unverified) 20 000-byte cap.
 */
export const DINGTALK_MAX_BYTES = 7_000;

/**
 * The largest file a robot can send: the media upload takes files of up to 20 MB (pictures: JPG,
 * PNG, GIF, BMP up to 20 MB); sampleFile then names the media id.
 */
export const DINGTALK_MAX_FILE_BYTES = 20 * 1024 * 1024;
const DINGTALK_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/bmp'];
/** How many approval cards remember their chat (a press carries only the card's outTrackId). */
const REMEMBERED_CARDS = 500;
/** Do not start a reply on a sessionWebhook this close to its expiry. */
const WEBHOOK_MARGIN_MS = 5_000;

export async function createDingtalkAdapter(opts: DingtalkOptions, deps: ChannelDeps, tuning: DingtalkTuning = {}): Promise<ChannelAdapter> {
  // --- state ---
  const name = deps.name;
  const lifecycle = createLifecycle(name, { connect, release });
  let log: Logger = deps.log;
  const baseUrl = (opts.apiBaseUrl ?? 'https://api.dingtalk.com').replace(/\/+$/, '');
  const api = createDingtalkApi({
    name,
    baseUrl,
    oapiBaseUrl: (opts.oapiBaseUrl ?? 'https://oapi.dingtalk.com').replace(/\/+$/, ''),
    clientId: opts.clientId,
    clientSecret: opts.clientSecret,
    timeoutMs: tuning.requestTimeoutMs ?? 15_000,
    signal: lifecycle.signal, // stop() aborts requests in flight
  });
  let client: DingtalkStreamClient | undefined;
  let ctx: ChannelContext | undefined;
  let pendingStart: { resolve: () => void; reject: (err: Error) => void } | undefined;
  let last: { state: string; reason?: string } = { state: 'idle' };
  const approvalCards = new Map<string, ReplyTarget>(); // outTrackId → where the card was sent

  // --- connection ---

  async function connect(context: ChannelContext): Promise<void> {
    ctx = context;
    log = context.log;
    last = { state: 'starting' };
    const cl = new DingtalkStreamClient({
      name,
      clientId: opts.clientId,
      clientSecret: opts.clientSecret,
      apiBaseUrl: baseUrl,
      log,
      ...tuning,
    });
    client = cl;
    // Must precede connect(): the subscription list is sent with connections/open.
    cl.registerCallbackListener(TOPIC_ROBOT, (frame: DWClientDownStream) => {
      void onRobotFrame(frame);
    });
    if (opts.approvalCardTemplateId) {
      cl.registerCallbackListener(TOPIC_CARD, (frame: DWClientDownStream) => {
        void onCardFrame(frame);
      });
    }
    cl.on('gateway-open', () => {
      if (pendingStart) {
        last = { state: 'connected' };
        pendingStart.resolve();
        pendingStart = undefined;
      } else {
        report('connected');
      }
    });
    cl.on('gateway-error', (err: ChannelError) => {
      if (pendingStart) {
        // start() fails fast with the reason; the client keeps retrying with backoff and a later
        // success is reported as 'connected'.
        last = { state: 'failed', reason: err.message };
        pendingStart.reject(err);
        pendingStart = undefined;
      } else if (last.state !== 'failed') {
        report('disconnected', err.message);
      }
    });
    cl.on('gateway-close', (reason: string) => report('disconnected', reason));
    await new Promise<void>((resolve, reject) => {
      pendingStart = { resolve, reject };
      void cl.connect();
    });
  }

  async function release(): Promise<void> {
    const cl = client;
    client = undefined;
    pendingStart?.reject(new ChannelError(name, 'network', 'stopped before connecting'));
    pendingStart = undefined;
    if (cl) {
      await cl.stop();
      cl.removeAllListeners();
    }
    last = { state: 'idle' };
  }

  /** onStatus only on a change of state or reason: retries with the same failure stay quiet. */
  function report(state: 'connected' | 'disconnected' | 'failed', reason?: string): void {
    if (last.state === state && last.reason === reason) return;
    last = reason === undefined ? { state } : { state, reason };
    ctx?.onStatus(reason === undefined ? { state } : { state, reason });
  }

  // --- inbound ---

  /** `response` goes back to DingTalk: for a card callback it is a card update, and an empty one leaves the card as it is. */
  function ack(frameId: string, response: Record<string, unknown> = { success: true }): void {
    try {
      client?.socketCallBackResponse(frameId, response);
    } catch (err) {
      log.debug(`ack of ${frameId} not sent (DingTalk will redeliver): ${errorMessage(err)}`);
    }
  }

  async function onRobotFrame(frame: DWClientDownStream): Promise<void> {
    const frameId = frame.headers.messageId;
    let payload: RobotPayload;
    try {
      payload = JSON.parse(frame.data) as RobotPayload;
    } catch {
      log.warn('dropping a robot callback whose data is not JSON');
      return ack(frameId); // unreadable now means unreadable on every redelivery
    }
    const msg = normalizeRobotMessage(name, payload);
    if (!msg) {
      log.info(`ignoring a ${String(payload.msgtype)} message: only text, rich text and voice are supported`);
      return ack(frameId);
    }
    try {
      await ctx?.onMessage(msg);
    } catch (err) {
      // Not handed over: leave it unacknowledged so that DingTalk pushes it again.
      log.warn(`message ${msg.messageId} not accepted, leaving it unacknowledged: ${errorMessage(err)}`);
      return;
    }
    ack(frameId);
  }

  /** A press on an approval card: handed over as the command it stands for, then acknowledged. */
  async function onCardFrame(frame: DWClientDownStream): Promise<void> {
    const frameId = frame.headers.messageId;
    let press: ReturnType<typeof parseCardPress>;
    try {
      press = parseCardPress(JSON.parse(frame.data) as CardCallbackData);
    } catch {
      press = undefined;
    }
    if (!press) {
      log.debug('ignoring a card callback that is not an approval answer');
      return ack(frameId, {});
    }
    try {
      await ctx?.onMessage(createPressMessage(name, frameId, press, approvalCards.get(press.outTrackId)));
    } catch (err) {
      log.warn(`card press ${frameId} not accepted, leaving it unacknowledged: ${errorMessage(err)}`);
      return;
    }
    ack(frameId, {});
  }

  // --- outbound ---

  /** Proactive robot message through the OpenAPI (also the fallback once a sessionWebhook expired). */
  async function sendRobot(target: { group: boolean; id: string; robotCode?: string | undefined }, text: string): Promise<SentMessage> {
    return sendTemplate(target, 'sampleMarkdown', { title: dingtalkTitle(text), text });
  }

  /** A robot message template (sampleMarkdown, sampleImageMsg, sampleFile) to a user or group. */
  async function sendTemplate(target: { group: boolean; id: string; robotCode?: string | undefined }, msgKey: string, param: Json): Promise<SentMessage> {
    const robotCode = target.robotCode ?? opts.clientId;
    const msgParam = JSON.stringify(param);
    const res = target.group
      ? await api.call('POST', '/v1.0/robot/groupMessages/send', { robotCode, openConversationId: target.id, msgKey, msgParam })
      : await api.call('POST', '/v1.0/robot/oToMessages/batchSend', { robotCode, userIds: [target.id], msgKey, msgParam });
    if (Array.isArray(res.invalidStaffIdList) && res.invalidStaffIdList.length > 0) {
      throw new ChannelError(name, 'not_found', `unknown user id ${target.id}`);
    }
    return { chatId: target.id, messageId: String(res.processQueryKey ?? randomUUID()) };
  }

  async function reply(to: ReplyTarget, markdown: string): Promise<SentMessage | undefined> {
    lifecycle.assertStarted('reply');
    const text = renderDingtalkMarkdown(markdown);
    const extra = readReplyExtra(to.extra);
    if (extra.sessionWebhook && (extra.sessionWebhookExpiredTime ?? 0) > Date.now() + WEBHOOK_MARGIN_MS) {
      try {
        await api.postWebhook(extra.sessionWebhook, { msgtype: 'markdown', markdown: { title: dingtalkTitle(text), text } });
        return undefined; // a sessionWebhook reply has no message id
      } catch (err) {
        if (!(err instanceof ChannelError && err.kind === 'not_found')) throw err;
        log.debug(`sessionWebhook of ${to.messageId ?? to.chatId} expired early; replying through the OpenAPI`);
      }
    }
    return sendRobot({ group: to.chatType === 'group', id: to.chatId, robotCode: extra.robotCode }, text);
  }

  /** A downloadCode → its URL (messageFiles/download) → the bytes, at most `maxBytes`. */
  async function download(downloadCode: string, maxBytes: number): Promise<{ data: Buffer; mimeType: string | undefined }> {
    const res = await api.call('POST', '/v1.0/robot/messageFiles/download', { downloadCode, robotCode: opts.clientId });
    if (typeof res.downloadUrl !== 'string') throw new ChannelError(name, 'not_found', 'messageFiles/download gave no downloadUrl');
    return api.fetchFile(res.downloadUrl, maxBytes);
  }

  /** The approval card (approval.ts), delivered with stream callbacks; its chat is remembered for the press. */
  async function askApproval(to: ReplyTarget, prompt: ApprovalPrompt): Promise<SentMessage | undefined> {
    lifecycle.assertStarted('askApproval');
    const outTrackId = `approval_${prompt.id}_${randomUUID()}`;
    const robotCode = readReplyExtra(to.extra).robotCode ?? opts.clientId;
    await deliverCard(api, name, to, {
      templateId: opts.approvalCardTemplateId as string,
      outTrackId,
      robotCode,
      params: formatApprovalCardParams(prompt, renderDingtalkMarkdown(prompt.text)),
      callbackType: 'STREAM',
    });
    approvalCards.set(outTrackId, { chatId: to.chatId, chatType: to.chatType, extra: { robotCode } });
    if (approvalCards.size > REMEMBERED_CARDS) approvalCards.delete(approvalCards.keys().next().value as string);
    return { chatId: to.chatId, messageId: outTrackId };
  }

  return {
    name,
    limit: { max: DINGTALK_MAX_BYTES, unit: 'bytes' },
    render: renderDingtalkMarkdown,
    start: lifecycle.start,
    stop: lifecycle.stop,
    reply,

    async send(chatId, markdown) {
      lifecycle.assertStarted('send');
      return sendRobot(parseChatId(chatId), renderDingtalkMarkdown(markdown));
    },

    maxFileBytes: DINGTALK_MAX_FILE_BYTES,

    async downloadImage(image) {
      lifecycle.assertStarted('downloadImage');
      const { data, mimeType } = await download(image.ref, DINGTALK_MAX_FILE_BYTES);
      return { data, mimeType: mimeType ?? 'image/jpeg' };
    },

    async downloadFile(file, { maxBytes }) {
      lifecycle.assertStarted('downloadFile');
      const { data, mimeType } = await download(file.ref, maxBytes);
      // DingTalk serves some files as application/octet-stream (or with a ".file" name): the name says more.
      const named = file.fileName ? mimeTypeOf(file.fileName) : 'application/octet-stream';
      return { data, mimeType: named !== 'application/octet-stream' ? named : (mimeType ?? named) };
    },

    /** Uploaded to the media API, then sent as a sampleImageMsg (pictures) or sampleFile (the rest). */
    async sendFile(to, file) {
      lifecycle.assertStarted('sendFile');
      const target = { group: to.chatType === 'group', id: to.chatId, robotCode: readReplyExtra(to.extra).robotCode };
      // WebP is not among the media API's picture types: it goes as a file.
      if (DINGTALK_IMAGE_TYPES.includes(file.mimeType)) {
        const mediaId = await api.uploadMedia('image', file.name, file.mimeType, file.data);
        return sendTemplate(target, 'sampleImageMsg', { photoURL: mediaId });
      }
      const mediaId = await api.uploadMedia('file', file.name, file.mimeType, file.data);
      const ext = file.name.includes('.') ? (file.name.split('.').at(-1) ?? '') : '';
      return sendTemplate(target, 'sampleFile', { mediaId, fileName: file.name, fileType: ext.toLowerCase() || 'file' });
    },

    ...(opts.approvalCardTemplateId ? { askApproval } : {}),

    async openStream(to) {
      lifecycle.assertStarted('openStream');
      try {
        return await openAiCard(api, name, to, readReplyExtra(to.extra).robotCode ?? opts.clientId);
      } catch (err) {
        // No AI card (the app lacks the Card.Instance.Write / Card.Streaming.Write permissions, or
        // delivery failed): degrade to one buffered reply so that the answer still arrives.
        log.warn(`AI card unavailable, replying without streaming: ${errorMessage(err)}`);
        return {
          update: async () => undefined,
          finish: async (markdown) => {
            await reply(to, markdown);
          },
        };
      }
    },
  };
}
