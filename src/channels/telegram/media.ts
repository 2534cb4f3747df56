import { type Bot, GrammyError, InputFile } from 'grammy';
import type { Message } from 'grammy/types';
import { isInlineImage } from '../../core/files/file-names.js';
import { readCappedResponse } from '../download.js';
import { ChannelError, type OutboundFile, type ReplyTarget } from '../types.js';
import { nativeMessageId } from './inbound.js';

/**
 * Files on the Bot API: downloads are getFile then GET /file/bot<token>/<file_path> (bots may
 * download up to 20 MB; getFile answers "file is too big" past that); uploads are multipart
 * sendPhoto (pictures, up to 10 MB, shown inline) or sendDocument (anything, up to 50 MB).
 */
export const TELEGRAM_MAX_UPLOAD_BYTES = 50 * 1024 * 1024;
const PHOTO_MAX_BYTES = 10 * 1024 * 1024;
const DOWNLOAD_TIMEOUT_MS = 60_000;

export interface TelegramFileAccess {
  name: string;
  token: string;
  apiRoot: string;
  api: Bot['api'];
  toError(e: unknown, what: string): ChannelError;
}

/** A file's bytes by file id, at most `maxBytes`; `path` is Telegram's file_path (its extension hints the type). */
export async function downloadTelegramFile(t: TelegramFileAccess, fileId: string, maxBytes: number): Promise<{ data: Buffer; path: string }> {
  let path: string | undefined;
  let size: number | undefined;
  try {
    const file = await t.api.getFile(fileId);
    path = file.file_path;
    size = file.file_size;
  } catch (e) {
    if (e instanceof GrammyError && /file is too big/i.test(e.description)) throw new ChannelError(t.name, 'too_long', `getFile: ${e.description}`);
    throw t.toError(e, 'getFile');
  }
  if (!path) throw new ChannelError(t.name, 'not_found', 'getFile returned no file_path (file too big for the Bot API?)');
  if (size !== undefined && size > maxBytes) throw new ChannelError(t.name, 'too_long', `the file is ${size} bytes, over the ${maxBytes}-byte limit`);
  let res: Response;
  try {
    res = await fetch(`${t.apiRoot}/file/bot${t.token}/${path}`, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
  } catch (e) {
    // Not describe(e) of a URL: the download URL contains the bot token.
    throw new ChannelError(t.name, 'network', `downloading ${path} failed`, { cause: e });
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new ChannelError(t.name, res.status === 404 ? 'not_found' : res.status === 401 ? 'auth' : 'other', `downloading ${path} failed: HTTP ${res.status}`);
  }
  return { data: await readCappedResponse(t.name, res, maxBytes, path), path };
}

/** A file into the chat of `to` (its topic), as a reply to the message: a picture as a photo, else a document. */
export async function sendTelegramFile(t: TelegramFileAccess, to: ReplyTarget, file: OutboundFile): Promise<Message> {
  const id = nativeMessageId(to.messageId);
  const extra = {
    ...(id ? { reply_parameters: { message_id: id, allow_sending_without_reply: true } } : {}),
    ...(to.threadId ? { message_thread_id: Number(to.threadId) } : {}),
  };
  const asPhoto = isInlineImage(file.mimeType) && file.mimeType !== 'image/gif' && file.data.length <= PHOTO_MAX_BYTES;
  if (asPhoto) {
    try {
      return await t.api.sendPhoto(to.chatId, new InputFile(file.data, file.name), extra);
    } catch (e) {
      // A picture Telegram will not show as a photo (dimensions, format) still goes out as a file.
      if (!(e instanceof GrammyError && e.error_code === 400)) throw t.toError(e, `sendPhoto ${file.name}`);
    }
  }
  try {
    return await t.api.sendDocument(to.chatId, new InputFile(file.data, file.name), extra);
  } catch (e) {
    throw t.toError(e, `sendDocument ${file.name}`);
  }
}
