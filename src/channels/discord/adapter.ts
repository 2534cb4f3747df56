import { createLifecycle } from '../lifecycle.js';
import type { ChannelAdapter, ChannelDeps } from '../types.js';
import { DiscordConnection, type DiscordOptions } from './connection.js';
import { renderDiscordMarkdown } from './format.js';
import { DISCORD_MAX_UPLOAD_BYTES } from './media.js';
import { DISCORD_EDIT_INTERVAL_MS, DISCORD_LIMIT, DiscordOutbound } from './outbound.js';

/**
 * channel_f over discord.js 14: the gateway for inbound messages (connection.ts: login, shard
 * status, messages and button presses in), REST for everything outbound (outbound.ts). Both use
 * the one client; the lifecycle runs the connection.
 */
export async function createDiscordAdapter(opts: DiscordOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  const name = deps.name;
  deps.log.addSecrets([opts.botToken]);
  const connection = new DiscordConnection(name, opts, deps.log);
  const lifecycle = createLifecycle(name, connection);
  const out = new DiscordOutbound({ name, link: connection, started: lifecycle });
  return {
    name,
    limit: DISCORD_LIMIT,
    render: renderDiscordMarkdown,
    start: lifecycle.start,
    stop: lifecycle.stop,
    reply: (to, markdown) => out.reply(to, markdown),
    askApproval: (to, prompt) => out.askApproval(to, prompt),
    send: (chatId, markdown) => out.send(chatId, markdown),
    edit: (message, markdown) => out.edit(message, markdown),
    remove: (message) => out.remove(message),
    editIntervalMs: DISCORD_EDIT_INTERVAL_MS,
    typing: (to) => out.typing(to),
    // Discord shows "typing…" for 10 s after one call (or until the bot's message arrives).
    typingLastsMs: 10_000,
    readHistory: (chatId, o) => out.readHistory(chatId, o),
    downloadImage: (image) => out.downloadImage(image),
    downloadFile: (file, o) => out.downloadFile(file, o),
    maxFileBytes: DISCORD_MAX_UPLOAD_BYTES,
    sendFile: (to, file) => out.sendFile(to, file),
  };
}
