import type { Message, MessageEntity } from 'grammy/types';
import type { InboundFile, InboundImage, InboundMessage } from '../types.js';

/** Telegram Message → InboundMessage (pure; type-only use of grammy's Bot API types). */

export interface TelegramIdentity {
  id: number;
  username: string;
}

export const telegramMessageId = (chatId: number | string, messageId: number | string): string => `${chatId}:${messageId}`;

/** The Bot API message id inside `${chatId}:${messageId}` (or a bare id). */
export function nativeMessageId(id: string | undefined): number | undefined {
  const n = Number(id?.split(':').at(-1));
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

function isOwnMention(e: MessageEntity, text: string, me: TelegramIdentity): boolean {
  if (e.type === 'text_mention') return e.user.id === me.id;
  if (e.type === 'mention') return text.slice(e.offset, e.offset + e.length).toLowerCase() === `@${me.username.toLowerCase()}`;
  return false;
}

/**
 * Whether the bot was addressed, and the text without its own mention entities. Offsets are
 * UTF-16 code units, which is how JavaScript strings index, so slicing needs no conversion.
 */
export function stripTelegramMention(text: string, entities: MessageEntity[], me: TelegramIdentity): { text: string; mentioned: boolean } {
  const own = entities.filter((e) => isOwnMention(e, text, me)).sort((a, b) => b.offset - a.offset);
  const command = entities.some(
    (e) =>
      e.type === 'bot_command' &&
      text
        .slice(e.offset, e.offset + e.length)
        .toLowerCase()
        .endsWith(`@${me.username.toLowerCase()}`),
  );
  let out = text;
  for (const e of own) {
    const end = e.offset + e.length;
    const gap = /^[ \t]/.test(out.slice(end, end + 1)) ? 1 : 0;
    out = out.slice(0, e.offset) + out.slice(end + gap);
  }
  return { text: out.trim(), mentioned: own.length > 0 || command };
}

function displayName(u: { first_name?: string; last_name?: string; username?: string; title?: string }): string | undefined {
  const full = [u.first_name, u.last_name].filter(Boolean).join(' ');
  return full || u.title || u.username || undefined;
}

const EXT_MIME: Record<string, string> = { jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp', gif: 'image/gif' };

/** Telegram serves files as application/octet-stream; the path's extension is the best type hint. */
export function mimeFromPath(path: string): string | undefined {
  return EXT_MIME[path.split('.').at(-1)?.toLowerCase() ?? ''];
}

export function normaliseTelegramMessage(channelKey: string, msg: Message, me: TelegramIdentity): InboundMessage | undefined {
  const raw = msg.text ?? msg.caption ?? '';
  const entities = msg.entities ?? msg.caption_entities ?? [];
  const direct = msg.chat.type === 'private';
  const stripped = stripTelegramMention(raw, entities, me);
  const repliesToBot = msg.reply_to_message?.from?.id === me.id;

  const images: InboundImage[] = [];
  const files: InboundFile[] = [];
  // Telegram lists the sizes of one photo, smallest first; the largest is the one worth reading.
  // Its type is learnt from the file path at download time.
  const largest = msg.photo?.reduce((a, b) => (b.width * b.height >= a.width * a.height ? b : a));
  if (largest) images.push({ ref: largest.file_id });
  const doc = msg.document;
  if (doc?.mime_type?.startsWith('image/')) {
    images.push({ ref: doc.file_id, mimeType: doc.mime_type, ...(doc.file_name ? { fileName: doc.file_name } : {}) });
  } else if (doc) {
    files.push(inboundFile(doc, 'file'));
  }
  // Recordings and clips are files too: the agent may have tools for them.
  if (msg.audio) files.push({ ...inboundFile(msg.audio, 'audio.mp3'), kind: 'audio' });
  if (msg.video) files.push(inboundFile(msg.video, 'video.mp4'));
  if (msg.voice) files.push({ ...inboundFile(msg.voice, 'voice.ogg'), kind: 'voice' });
  const text = stripped.text;
  if (!text && images.length === 0 && files.length === 0) return undefined;

  const chatId = String(msg.chat.id);
  const chatType = direct ? 'direct' : 'group';
  const messageId = telegramMessageId(msg.chat.id, msg.message_id);
  // Forum topics are the only Telegram threads a reply must name explicitly.
  const threadId = msg.is_topic_message && msg.message_thread_id !== undefined ? String(msg.message_thread_id) : undefined;
  const sender = msg.sender_chat ?? msg.from;
  const senderName = sender ? displayName(sender) : undefined;
  return {
    channel: channelKey,
    messageId,
    chatId,
    chatType,
    ...(threadId ? { threadId } : {}),
    senderId: sender ? String(sender.id) : '',
    ...(senderName ? { senderName } : {}),
    text,
    mentioned: direct || stripped.mentioned || repliesToBot,
    ...(msg.from?.is_bot ? { fromBot: true } : {}),
    ts: msg.date * 1000,
    ...(images.length ? { images } : {}),
    ...(files.length ? { files } : {}),
    replyTarget: { chatId, chatType, messageId, ...(threadId ? { threadId } : {}) },
  };
}

function inboundFile(f: { file_id: string; file_name?: string; mime_type?: string; file_size?: number }, fallbackName: string): InboundFile {
  return {
    ref: f.file_id,
    fileName: f.file_name ?? fallbackName,
    ...(f.mime_type ? { mimeType: f.mime_type } : {}),
    ...(f.file_size !== undefined ? { size: f.file_size } : {}),
  };
}
