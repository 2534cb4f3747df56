import { createLifecycle } from '../lifecycle.js';
import type { ChannelAdapter, ChannelDeps } from '../types.js';
import { TelegramConnection } from './connection.js';
import { renderTelegramMarkdownV2 } from './format.js';
import { TELEGRAM_MAX_UPLOAD_BYTES } from './media.js';
import { TELEGRAM_EDIT_INTERVAL_MS, TELEGRAM_LIMIT, TelegramOutbound } from './outbound.js';

/** Options of channel_e as validated by index.ts. */
export interface TelegramOptions {
  botToken: string;
  apiRoot?: string | undefined;
  /** Grow replies in private chats as drafts (default true). */
  drafts?: boolean | undefined;
}

const DEFAULT_API_ROOT = 'https://api.telegram.org';

/**
 * channel_e: Telegram with grammy's long polling. The connection (connection.ts: token check,
 * polling, updates in) and the outbound side (outbound.ts: messages, edits, files, approval
 * buttons) share the bot's client; the lifecycle runs the connection.
 */
export async function createTelegramAdapter(opts: TelegramOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  const name = deps.name;
  const endpoint = { token: opts.botToken, apiRoot: (opts.apiRoot ?? DEFAULT_API_ROOT).replace(/\/+$/, '') };
  const connection = new TelegramConnection(name, endpoint, deps.log);
  const lifecycle = createLifecycle(name, connection);
  const out = new TelegramOutbound({ name, endpoint, link: connection, started: lifecycle, drafts: opts.drafts ?? true });
  return {
    name,
    limit: TELEGRAM_LIMIT,
    render: renderTelegramMarkdownV2,
    start: lifecycle.start,
    stop: lifecycle.stop,
    reply: (to, markdown) => out.reply(to, markdown),
    askApproval: (to, prompt) => out.askApproval(to, prompt),
    send: (chatId, markdown) => out.send(chatId, markdown),
    edit: (message, markdown) => out.edit(message, markdown),
    remove: (message) => out.remove(message),
    editIntervalMs: TELEGRAM_EDIT_INTERVAL_MS,
    openStream: (to, o) => out.openStream(to, o),
    typing: (to) => out.typing(to),
    typingLastsMs: 5_000,
    downloadImage: (image) => out.downloadImage(image),
    downloadFile: (file, o) => out.downloadFile(file, o),
    maxFileBytes: TELEGRAM_MAX_UPLOAD_BYTES,
    sendFile: (to, file) => out.sendFile(to, file),
  };
}
