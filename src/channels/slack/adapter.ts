import { createLifecycle } from '../lifecycle.js';
import type { ChannelAdapter, ChannelDeps } from '../types.js';
import { SlackConnection, type SlackOptions } from './connection.js';
import { renderSlackMrkdwn } from './format.js';
import { SLACK_EDIT_INTERVAL_MS, SLACK_LIMIT, SLACK_MAX_UPLOAD_BYTES, SlackOutbound } from './outbound.js';

/**
 * channel_d: Slack over Socket Mode. The connection (connection.ts: token check, the socket and its
 * reconnects, envelopes in and acknowledged) and the outbound side (outbound.ts: messages, edits,
 * files, approval blocks, history) share the Web API client; the lifecycle runs the connection.
 */
export async function createSlackAdapter(opts: SlackOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  const name = deps.name;
  const connection = new SlackConnection(name, opts, deps.log);
  const lifecycle = createLifecycle(name, connection);
  const out = new SlackOutbound({ name, opts, link: connection, started: lifecycle });
  return {
    name,
    limit: SLACK_LIMIT,
    render: renderSlackMrkdwn,
    start: lifecycle.start,
    stop: lifecycle.stop,
    reply: (to, markdown) => out.reply(to, markdown),
    send: (chatId, markdown) => out.send(chatId, markdown),
    askApproval: (to, prompt) => out.askApproval(to, prompt),
    edit: (message, markdown) => out.edit(message, markdown),
    remove: (message) => out.remove(message),
    editIntervalMs: SLACK_EDIT_INTERVAL_MS,
    typing: (to) => out.typing(to),
    readHistory: (chatId, o) => out.readHistory(chatId, o),
    downloadImage: (image) => out.downloadImage(image),
    downloadFile: (file, o) => out.downloadFile(file, o),
    maxFileBytes: SLACK_MAX_UPLOAD_BYTES,
    sendFile: (to, file) => out.sendFile(to, file),
  };
}
