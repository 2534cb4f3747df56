import type { TemplateCard } from '@wecom/aibot-node-sdk';
import { BoundedMap } from '../bounded-map.js';
import { createLifecycle } from '../lifecycle.js';
import type { ChannelAdapter, ChannelDeps } from '../types.js';
import { WecomConnection, type WecomOptions, type WecomTuning } from './connection.js';
import { renderWecomMarkdown } from './format.js';
import { WECOM_MAX_FILE_BYTES } from './media.js';
import { WecomOutbound } from './outbound.js';

/**
 * Bytes of rendered Markdown per message. Stream content is capped at 20 480 bytes of UTF-8 (SDK
 * types, api.d.ts); a CJK character is 3 bytes. 480 bytes are kept in hand for server-side
 * counting differences; the fake's proactive-markdown cap is the same.
 */
export const WECOM_MAX_BYTES = 20_000;

/** How many approval cards are remembered for the update a press needs. */
const REMEMBERED_CARDS = 500;

/**
 * channel_c: the WeCom AI bot over its websocket, one socket both ways. The connection
 * (connection.ts: subscribe, statuses, callbacks and card presses in) and the outbound side
 * (outbound.ts: stream-bubble replies, proactive sends, files, approval cards) share the SDK
 * client; the approval cards sent are remembered here for their presses. Once the connection is
 * released the outbound side forgets what belonged to it.
 */
export async function createWecomAdapter(opts: WecomOptions, deps: ChannelDeps, tuning: WecomTuning = {}): Promise<ChannelAdapter> {
  const name = deps.name;
  const cards = new BoundedMap<string, TemplateCard>(REMEMBERED_CARDS);
  const connection = new WecomConnection(name, opts, tuning, deps.log, cards);
  const lifecycle = createLifecycle(name, {
    connect: (ctx) => connection.connect(ctx),
    release: async () => {
      await connection.release();
      out.forget();
    },
  });
  const out = new WecomOutbound({ name, link: connection, started: lifecycle, cards });
  return {
    name,
    limit: { max: WECOM_MAX_BYTES, unit: 'bytes' },
    render: renderWecomMarkdown,
    start: lifecycle.start,
    stop: lifecycle.stop,
    reply: (to, markdown) => out.reply(to, markdown),
    send: (chatId, markdown) => out.send(chatId, markdown),
    typing: (to) => out.typing(to),
    maxFileBytes: WECOM_MAX_FILE_BYTES,
    downloadImage: (image) => out.downloadImage(image),
    downloadFile: (file, o) => out.downloadFile(file, o),
    sendFile: (to, file) => out.sendFile(to, file),
    askApproval: (to, prompt) => out.askApproval(to, prompt),
    openStream: (to) => out.openStream(to),
  };
}
