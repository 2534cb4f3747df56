import type { WSClient } from '@wecom/aibot-node-sdk';
import { isInlineImage, mimeTypeOf } from '../../core/files/file-names.js';
import type { InboundFile, OutboundFile, SentMessage } from '../types.js';
import { ChannelError } from '../types.js';
import { toWecomChannelError } from './errors.js';
import { parseMediaRef } from './inbound.js';

/**
 * Files both ways through the AI bot SDK. In: a callback's picture or file is a URL (valid five
 * minutes) of AES-256-CBC ciphertext with a per-message key; the SDK's downloadFile fetches and
 * decrypts it and reads the name from Content-Disposition (the callback carries none). Out: the
 * SDK's uploadMedia (aibot_upload_media_init / _chunk / _finish over the socket, 512 KB chunks,
 * at most 100), then sendMediaMessage (aibot_send_msg with msgtype image or file).
 */

/** WeCom's temporary-media cap for a file (20 MB); pictures are capped at 10 MB (JPG and PNG only). */
export const WECOM_MAX_FILE_BYTES = 20 * 1024 * 1024;
const WECOM_MAX_IMAGE_BYTES = 10 * 1024 * 1024;
const WECOM_IMAGE_TYPES = ['image/png', 'image/jpeg'];

/**
 * A picture or file of a callback, decrypted. The SDK reads the whole body before it can be
 * measured (its axios call has no size cap), so the limit is checked once it is in memory.
 */
export async function downloadWecomMedia(
  channel: string,
  client: WSClient,
  ref: string,
  opts: { maxBytes: number; file?: InboundFile },
): Promise<{ data: Buffer; mimeType: string }> {
  let media: { url: string; aeskey?: string };
  try {
    media = parseMediaRef(ref);
  } catch (err) {
    throw new ChannelError(channel, 'not_found', `unreadable media reference: ${(err as Error).message}`);
  }
  let got: { buffer: Buffer; filename?: string };
  try {
    got = await client.downloadFile(media.url, media.aeskey);
  } catch (err) {
    throw toWecomChannelError(channel, err, 'media download');
  }
  if (opts.file && got.filename && !opts.file.fileName) opts.file.fileName = got.filename;
  if (got.buffer.length > opts.maxBytes) throw new ChannelError(channel, 'too_long', `the file is ${got.buffer.length} bytes, over ${opts.maxBytes}`);
  return { data: got.buffer, mimeType: got.filename ? mimeTypeOf(got.filename) : 'application/octet-stream' };
}

/** Uploads a file over the socket and posts it to the chat: JPG and PNG up to 10 MB as a picture, the rest as a file. */
export async function sendWecomFile(channel: string, client: WSClient, chatId: string, file: OutboundFile): Promise<SentMessage> {
  const asImage = isInlineImage(file.mimeType) && WECOM_IMAGE_TYPES.includes(file.mimeType) && file.data.length <= WECOM_MAX_IMAGE_BYTES;
  const type = asImage ? 'image' : 'file';
  try {
    const { media_id } = await client.uploadMedia(file.data, { type, filename: file.name });
    const receipt = await client.sendMediaMessage(chatId, type, media_id);
    return { chatId, messageId: receipt.headers.req_id };
  } catch (err) {
    throw toWecomChannelError(channel, err, `sending ${type} ${file.name}`);
  }
}
