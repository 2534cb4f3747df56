import { randomUUID } from 'node:crypto';
import { TOPIC_ROBOT, type DWClientDownStream } from 'dingtalk-stream';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { createLifecycle } from '../lifecycle.js';
import type { ChannelAdapter, ChannelContext, ChannelDeps, ReplyStream, ReplyTarget, SentMessage } from '../types.js';
import { ChannelError } from '../types.js';
import { dingtalkTitle, renderDingtalkMarkdown } from './format.js';
import { normalizeRobotMessage, parseChatId, readReplyExtra, type RobotPayload } from './inbound.js';
import { createDingtalkApi, type Json } from './openapi.js';
import { DingtalkStreamClient } from './stream-client.js';

/** channel_b options, as validated by the definition in index.ts. */
export interface DingtalkOptions {
  clientId: string;
  clientSecret: string;
  /** Base of the stream gateway (connections/open) and of the OpenAPI. */
  apiBaseUrl?: string | undefined;
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

/** DingTalk's built-in "AI card" template (Markdown body `msgContent`, status `flowStatus`). */
const AI_CARD_TEMPLATE = '382e4302-551d-4880-bf29-a30acfab2e71.schema';
const FLOW = { processing: '1', inputting: '2', finished: '3' } as const;
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
    clientId: opts.clientId,
    clientSecret: opts.clientSecret,
    timeoutMs: tuning.requestTimeoutMs ?? 15_000,
    signal: lifecycle.signal, // stop() aborts requests in flight
  });
  let client: DingtalkStreamClient | undefined;
  let ctx: ChannelContext | undefined;
  let pendingStart: { resolve: () => void; reject: (err: Error) => void } | undefined;
  let last: { state: string; reason?: string } = { state: 'idle' };

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

  function ack(frameId: string): void {
    try {
      client?.socketCallBackResponse(frameId, { success: true });
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

  // --- outbound ---

  /** Proactive robot message through the OpenAPI (also the fallback once a sessionWebhook expired). */
  async function sendRobot(target: { group: boolean; id: string; robotCode?: string | undefined }, text: string): Promise<SentMessage> {
    const robotCode = target.robotCode ?? opts.clientId;
    const msgParam = JSON.stringify({ title: dingtalkTitle(text), text });
    const res = target.group
      ? await api.call('POST', '/v1.0/robot/groupMessages/send', { robotCode, openConversationId: target.id, msgKey: 'sampleMarkdown', msgParam })
      : await api.call('POST', '/v1.0/robot/oToMessages/batchSend', { robotCode, userIds: [target.id], msgKey: 'sampleMarkdown', msgParam });
    if (Array.isArray(res.invalidStaffIdList) && res.invalidStaffIdList.length > 0) {
      throw new ChannelError(name, 'not_found', `unknown user id ${target.id}`);
    }
    return { chatId: target.id, messageId: String(res.processQueryKey ?? randomUUID()) };
  }

  /** An AI card that is created, delivered, then streamed into (full text each time). */
  async function openCard(to: ReplyTarget): Promise<ReplyStream> {
    const group = to.chatType === 'group';
    const outTrackId = randomUUID();
    const robotCode = readReplyExtra(to.extra).robotCode ?? opts.clientId;
    const created = await api.call('POST', '/v1.0/card/instances/createAndDeliver', {
      cardTemplateId: AI_CARD_TEMPLATE,
      outTrackId,
      callbackType: 'STREAM',
      userIdType: 1,
      cardData: { cardParamMap: { flowStatus: FLOW.processing, msgContent: '' } },
      // As the official Python SDK sends it: both space models, the deliver model of the target.
      openSpaceId: `dtv1.card//${group ? 'IM_GROUP' : 'IM_ROBOT'}.${to.chatId}`,
      imGroupOpenSpaceModel: { supportForward: true },
      imRobotOpenSpaceModel: { supportForward: true },
      ...(group ? { imGroupOpenDeliverModel: { robotCode } } : { imRobotOpenDeliverModel: { spaceType: 'IM_ROBOT' } }),
    });
    // createAndDeliver answers 200 even when delivery failed; the per-space results say so.
    const results = ((created.result as Json | undefined)?.deliverResults ?? []) as Array<{ success?: boolean; errorMsg?: string }>;
    if (results.length > 0 && results.every((r) => r.success !== true)) {
      throw new ChannelError(name, 'other', `AI card not delivered: ${results.map((r) => r.errorMsg ?? 'unknown').join('; ')}`);
    }
    const setStatus = (cardParamMap: Json) =>
      api.call('PUT', '/v1.0/card/instances', { outTrackId, cardData: { cardParamMap }, cardUpdateOptions: { updateCardDataByKey: true } });
    let inputting = false;
    let closed = false;
    let shown = '';
    let chain: Promise<unknown> = Promise.resolve();
    // Updates are serialised so that a slow PUT can never overwrite a newer text.
    const serial = (fn: () => Promise<void>): Promise<void> => {
      const run = chain.then(fn);
      chain = run.catch(() => undefined);
      return run;
    };
    const put = async (text: string, final: boolean) => {
      if (!inputting) {
        await setStatus({ flowStatus: FLOW.inputting });
        inputting = true;
      }
      await api.call('PUT', '/v1.0/card/streaming', {
        outTrackId,
        guid: randomUUID(),
        key: 'msgContent',
        content: text,
        isFull: true,
        isFinalize: final,
        isError: false,
      });
      shown = text;
    };
    return {
      update: (markdown) =>
        serial(async () => {
          const text = renderDingtalkMarkdown(markdown);
          if (closed || text === shown) return;
          await put(text, false);
        }),
      finish: (markdown) =>
        serial(async () => {
          if (closed) return;
          closed = true;
          const text = renderDingtalkMarkdown(markdown);
          await put(text, true);
          await setStatus({ flowStatus: FLOW.finished, msgContent: text });
        }),
    };
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

    async openStream(to) {
      lifecycle.assertStarted('openStream');
      try {
        return await openCard(to);
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
