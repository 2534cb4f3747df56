import { BoundedMap } from '../bounded-map.js';
import { createLifecycle } from '../lifecycle.js';
import type { ChannelAdapter, ChannelDeps, ReplyTarget } from '../types.js';
import { DingtalkConnection, type DingtalkOptions, type DingtalkTuning } from './connection.js';
import { renderDingtalkMarkdown } from './format.js';
import { createDingtalkApi } from './openapi.js';
import { DINGTALK_MAX_FILE_BYTES, DingtalkOutbound } from './outbound.js';

/**
 * Bytes of rendered Markdown per message. The groupMessages/send doc caps msgParam at 15 000 bytes;
 * msgParam is the JSON string {"title","text"}, where escaping can at most double the text (quotes,
 * backslashes, newlines; control characters are dropped by render()), and the title adds at most
 * ~400 bytes. 7 000 × 2 + 400 + braces stays under 15 000 for any text, and well under the
 * sessionWebhook's (unverified) 20 000-byte cap.
 */
export const DINGTALK_MAX_BYTES = 7_000;

/** How many approval cards remember their chat (a press carries only the card's outTrackId). */
const REMEMBERED_CARDS = 500;

/**
 * channel_b: DingTalk in stream mode. The connection (connection.ts: the stream gateway, robot
 * messages and card presses in) and the outbound side (outbound.ts: sessionWebhook and OpenAPI
 * replies, AI-card streams, files, approval cards) share no client: the stream is a websocket,
 * everything outbound is HTTP. The approval cards sent are remembered here for their presses.
 */
export async function createDingtalkAdapter(opts: DingtalkOptions, deps: ChannelDeps, tuning: DingtalkTuning = {}): Promise<ChannelAdapter> {
  const name = deps.name;
  const apiBaseUrl = (opts.apiBaseUrl ?? 'https://api.dingtalk.com').replace(/\/+$/, '');
  const approvalCards = new BoundedMap<string, ReplyTarget>(REMEMBERED_CARDS);
  const connection = new DingtalkConnection(name, opts, { apiBaseUrl, tuning, log: deps.log, approvalCards });
  const lifecycle = createLifecycle(name, connection);
  const api = createDingtalkApi({
    name,
    baseUrl: apiBaseUrl,
    oapiBaseUrl: (opts.oapiBaseUrl ?? 'https://oapi.dingtalk.com').replace(/\/+$/, ''),
    clientId: opts.clientId,
    clientSecret: opts.clientSecret,
    timeoutMs: tuning.requestTimeoutMs ?? 15_000,
    signal: lifecycle.signal, // stop() aborts requests in flight
  });
  const { clientId, approvalCardTemplateId } = opts;
  const out = new DingtalkOutbound({ name, clientId, approvalCardTemplateId, api, link: connection, started: lifecycle, approvalCards });
  return {
    name,
    limit: { max: DINGTALK_MAX_BYTES, unit: 'bytes' },
    render: renderDingtalkMarkdown,
    start: lifecycle.start,
    stop: lifecycle.stop,
    reply: (to, markdown) => out.reply(to, markdown),
    send: (chatId, markdown) => out.send(chatId, markdown),
    maxFileBytes: DINGTALK_MAX_FILE_BYTES,
    downloadImage: (image) => out.downloadImage(image),
    downloadFile: (file, o) => out.downloadFile(file, o),
    sendFile: (to, file) => out.sendFile(to, file),
    ...(approvalCardTemplateId ? { askApproval: (to, prompt) => out.askApproval(to, prompt) } : {}),
    openStream: (to) => out.openStream(to),
  };
}
