import { BoundedMap } from '../bounded-map.js';
import { createLifecycle } from '../lifecycle.js';
import type { ChannelAdapter, ChannelDeps } from '../types.js';
import type { LarkPromptPlace } from './approval.js';
import { LarkConnection, type LarkOptions } from './connection.js';
import { renderLarkMarkdown } from './format.js';
import { LARK_LIMIT, LARK_MAX_UPLOAD_BYTES, LarkOutbound } from './outbound.js';

/** Approval cards remembered for their presses; bounded, oldest forgotten first. */
const PROMPTS_KEPT = 2000;

/**
 * channel_a over @larksuiteoapi/node-sdk: events on the long connection (connection.ts, with
 * long-connection.ts for the SDK's WSClient), everything else over REST (outbound.ts: posts,
 * edits, approval cards, CardKit stream cards in stream.ts, files, history). Both sides share the
 * REST client and the chat kinds; the approval cards sent are remembered here for their presses.
 */
export async function createLarkAdapter(opts: LarkOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  const name = deps.name;
  deps.log.addSecrets([opts.appSecret]);
  const prompts = new BoundedMap<string, LarkPromptPlace>(PROMPTS_KEPT);
  const connection = new LarkConnection(name, opts, deps.log, prompts);
  const lifecycle = createLifecycle(name, connection);
  const out = new LarkOutbound({ name, link: connection, started: lifecycle, prompts });
  return {
    name,
    limit: LARK_LIMIT,
    render: renderLarkMarkdown,
    start: lifecycle.start,
    stop: lifecycle.stop,
    reply: (to, markdown) => out.reply(to, markdown),
    askApproval: (to, prompt) => out.askApproval(to, prompt),
    send: (chatId, markdown) => out.send(chatId, markdown),
    edit: (message, markdown) => out.edit(message, markdown),
    openStream: (to) => out.openStream(to),
    readHistory: (chatId, o) => out.readHistory(chatId, o),
    downloadImage: (image) => out.downloadImage(image),
    downloadFile: (file, o) => out.downloadFile(file, o),
    maxFileBytes: LARK_MAX_UPLOAD_BYTES,
    sendFile: (to, file) => out.sendFile(to, file),
  };
}
