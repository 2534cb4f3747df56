import type { Readable } from 'node:stream';
import type * as lark from '@larksuiteoapi/node-sdk';
import { readCapped } from '../download.js';
import { LarkApiError, unwrap } from './errors.js';
import type { LarkHistoryItem } from './inbound.js';

/** Lark's `im.messageResource.get` serves up to 100 MB; an image for the model never needs more than this. */
export const LARK_MAX_IMAGE_BYTES = 20 * 1024 * 1024;

export type ReceiveIdType = 'chat_id' | 'open_id' | 'union_id' | 'user_id' | 'email';

/** The id kind of a proactive target, by its prefix: `oc_` chat, `ou_` open_id, `on_` union_id, an e-mail, else a user_id. */
export function receiveIdType(id: string): ReceiveIdType {
  if (id.startsWith('oc_')) return 'chat_id';
  if (id.startsWith('ou_')) return 'open_id';
  if (id.startsWith('on_')) return 'union_id';
  return id.includes('@') ? 'email' : 'user_id';
}

export interface LarkSent {
  messageId: string;
  chatId: string;
}

/**
 * The REST calls the adapter makes, as typed one-liners over the SDK client. Each throws on a
 * non-zero Lark `code` (LarkApiError) or an HTTP failure (the SDK's axios error).
 */
export function createLarkRest(client: lark.Client) {
  const sentOf = (data: { message_id?: string; chat_id?: string } | undefined, fallbackChat: string): LarkSent => {
    if (!data?.message_id) throw new LarkApiError(-1, 'the platform returned no message_id');
    return { messageId: data.message_id, chatId: data.chat_id ?? fallbackChat };
  };
  return {
    async botOpenId(): Promise<string> {
      const res = (await client.request({ url: '/open-apis/bot/v3/info', method: 'GET' })) as { code?: number; msg?: string; bot?: { open_id?: string } };
      unwrap(res);
      if (!res.bot?.open_id) throw new LarkApiError(-1, 'bot/v3/info has no open_id: is the bot capability enabled?');
      return res.bot.open_id;
    },

    async reply(messageId: string, msgType: string, content: string, inThread: boolean, chatId: string): Promise<LarkSent> {
      const res = await client.im.v1.message.reply({
        path: { message_id: messageId },
        data: { msg_type: msgType, content, ...(inThread ? { reply_in_thread: true } : {}) },
      });
      return sentOf(unwrap(res), chatId);
    },

    async create(receiveId: string, msgType: string, content: string): Promise<LarkSent> {
      const res = await client.im.v1.message.create({
        params: { receive_id_type: receiveIdType(receiveId) },
        data: { receive_id: receiveId, msg_type: msgType, content },
      });
      return sentOf(unwrap(res), receiveId);
    },

    async update(messageId: string, msgType: string, content: string): Promise<void> {
      unwrap(await client.im.v1.message.update({ path: { message_id: messageId }, data: { msg_type: msgType, content } }));
    },

    /** One page of a chat's messages since `startSeconds`, newest first. */
    async listPage(chatId: string, startSeconds: number, pageSize: number, pageToken?: string): Promise<{ items: LarkHistoryItem[]; next?: string }> {
      const data = unwrap(
        await client.im.v1.message.list({
          params: {
            container_id_type: 'chat',
            container_id: chatId,
            start_time: String(startSeconds),
            sort_type: 'ByCreateTimeDesc',
            page_size: pageSize,
            ...(pageToken ? { page_token: pageToken } : {}),
          },
        }),
      );
      return { items: (data?.items ?? []) as LarkHistoryItem[], ...(data?.has_more && data.page_token ? { next: data.page_token } : {}) };
    },

    /** 'p2p', 'group' or 'topic' (GET /open-apis/im/v1/chats/:chat_id). */
    async chatMode(chatId: string): Promise<string | undefined> {
      return unwrap(await client.im.v1.chat.get({ path: { chat_id: chatId } }))?.chat_mode;
    },

    /** A message's image or file (im/v1/messages/:id/resources/:key), at most `maxBytes` (a `too_long` ChannelError past it). */
    async resource(
      channel: string,
      messageId: string,
      fileKey: string,
      type: 'image' | 'file',
      maxBytes: number,
    ): Promise<{ data: Buffer; mimeType?: string }> {
      const res = await client.im.v1.messageResource.get({ path: { message_id: messageId, file_key: fileKey }, params: { type } });
      const stream = res.getReadableStream() as Readable;
      const data = await readCapped(channel, stream, maxBytes, `${type} ${fileKey}`);
      const mime = (res.headers as Record<string, unknown> | undefined)?.['content-type'];
      return { data, ...(typeof mime === 'string' ? { mimeType: (mime.split(';')[0] ?? '').trim() } : {}) };
    },

    /** im/v1/images (for sending as a message): the image_key. */
    async uploadImage(data: Buffer): Promise<string> {
      // The upload calls return only `data` (a refusal is an HTTP error the SDK throws).
      const out = await client.im.v1.image.create({ data: { image_type: 'message', image: data } });
      if (!out?.image_key) throw new LarkApiError(-1, 'the platform returned no image_key');
      return out.image_key;
    },

    /** im/v1/files: the file_key. `file_type` is what Lark previews (pdf, doc, xls, ppt, mp4, opus), else `stream`. */
    async uploadFile(name: string, data: Buffer): Promise<string> {
      const out = await client.im.v1.file.create({ data: { file_type: larkFileType(name), file_name: name, file: data } });
      if (!out?.file_key) throw new LarkApiError(-1, 'the platform returned no file_key');
      return out.file_key;
    },

    async createCard(card: Record<string, unknown>): Promise<string> {
      const data = unwrap(await client.cardkit.v1.card.create({ data: { type: 'card_json', data: JSON.stringify(card) } }));
      if (!data?.card_id) throw new LarkApiError(-1, 'the platform returned no card_id');
      return data.card_id;
    },

    async cardContent(cardId: string, elementId: string, content: string, sequence: number): Promise<void> {
      unwrap(await client.cardkit.v1.cardElement.content({ path: { card_id: cardId, element_id: elementId }, data: { content, sequence } }));
    },

    async cardSettings(cardId: string, settings: Record<string, unknown>, sequence: number): Promise<void> {
      unwrap(await client.cardkit.v1.card.settings({ path: { card_id: cardId }, data: { settings: JSON.stringify(settings), sequence } }));
    },
  };
}

export type LarkRest = ReturnType<typeof createLarkRest>;

type LarkFileType = 'opus' | 'mp4' | 'pdf' | 'doc' | 'xls' | 'ppt' | 'stream';

function larkFileType(name: string): LarkFileType {
  const ext = name.split('.').at(-1)?.toLowerCase() ?? '';
  if (ext === 'pdf' || ext === 'mp4' || ext === 'opus') return ext;
  if (ext === 'doc' || ext === 'docx') return 'doc';
  if (ext === 'xls' || ext === 'xlsx') return 'xls';
  if (ext === 'ppt' || ext === 'pptx') return 'ppt';
  return 'stream';
}
