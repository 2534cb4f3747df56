import type { InboundFile, InboundImage, InboundMessage } from '../types.js';

/**
 * Pure helpers of the WeCom adapter: the aibot_msg_callback body → InboundMessage, and the reply
 * data kept in `replyTarget.extra`.
 */

/** What every callback frame carries: its req_id, and who wrote where and when. */
interface FrameOf<Body> {
  headers?: { req_id?: string };
  body?: Body & {
    msgid?: string;
    chattype?: string;
    chatid?: string;
    from?: { userid?: string };
    create_time?: number;
  };
}

/** The parts of an aibot_msg_callback frame this adapter reads (see the SDK's BaseMessage). */
export type CallbackFrame = FrameOf<{
  msgtype?: string;
  text?: { content?: string };
  voice?: { content?: string };
  image?: MediaRef;
  file?: MediaRef;
  mixed?: { msg_item?: Array<{ msgtype?: string; text?: { content?: string }; image?: MediaRef }> };
}>;

/** A picture or file in a callback: a download URL (valid 5 minutes) and its per-message AES key. */
export interface MediaRef {
  url?: string;
  aeskey?: string;
}

/** A template_card_event callback (a button press on a card the bot sent). */
export type CardEventFrame = FrameOf<{
  event?: {
    eventtype?: string;
    /** As WeCom documents it: the event's own object under its type's name. */
    template_card_event?: { event_key?: string; task_id?: string };
    /** As the SDK's TemplateCardEventData types it: the fields flat on the event. */
    event_key?: string;
    task_id?: string;
  };
}>;

/** What reply() needs later; stored in replyTarget.extra (JSON, kept by the inbox). */
export interface WecomReplyExtra {
  /** The callback's req_id: replies on it are only accepted on the connection it arrived on. */
  reqId?: string;
}

/**
 * A callback as an InboundMessage (text, voice, pictures, mixed text and pictures, files), or
 * undefined for the rest (videos). Chat ids: a group is its `chatid`; a DM has no chatid and is keyed by the
 * sender's userid, which is also what aibot_send_msg takes as `chatid` for a one-to-one chat.
 */
export function normalizeCallback(channel: string, frame: CallbackFrame): InboundMessage | undefined {
  const b = frame.body;
  const raw = b ? textOf(b) : undefined;
  if (!b?.msgid || raw === undefined) return undefined;
  const media = b ? mediaOf(b) : { images: [], files: [] };
  const senderId = b.from?.userid ?? '';
  const { chatId, chatType } = chatOf(b, senderId);
  const group = chatType === 'group';
  const reqId = frame.headers?.req_id;
  return {
    channel,
    messageId: b.msgid,
    chatId,
    chatType,
    senderId,
    text: group ? stripLeadingMention(raw) : raw.trim(),
    // Group callbacks are only sent for messages that @ the bot; DMs are always addressed to it.
    mentioned: true,
    ts: timestampMs(b.create_time),
    ...(media.images.length ? { images: media.images } : {}),
    ...(media.files.length ? { files: media.files } : {}),
    replyTarget: { chatId, chatType, messageId: b.msgid, extra: reqId ? { reqId } : {} },
  };
}

/**
 * A button press on an approval card as the message it stands for: the button's key is the
 * command (`/allow k7m2x`), sent by the person who pressed. It carries no req_id for replies:
 * an event's req_id only takes a card update (aibot_respond_update_msg), so answers go out with
 * aibot_send_msg.
 */
export function normalizeCardEvent(channel: string, frame: CardEventFrame): { message: InboundMessage; taskId: string } | undefined {
  const b = frame.body;
  const e = b?.event;
  const key = e?.template_card_event?.event_key ?? e?.event_key;
  const taskId = e?.template_card_event?.task_id ?? e?.task_id;
  const senderId = b?.from?.userid;
  if (!b?.msgid || !key || !taskId || !senderId || !/^\/(allow|deny)\b/.test(key)) return undefined;
  const { chatId, chatType } = chatOf(b, senderId);
  return {
    taskId,
    message: {
      channel,
      messageId: b.msgid,
      chatId,
      chatType,
      senderId,
      text: key,
      mentioned: true,
      ts: timestampMs(b.create_time),
      replyTarget: { chatId, chatType, extra: {} },
    },
  };
}

/** The ref an InboundImage / InboundFile keeps: the URL and its key, as JSON (the inbox stores it). */
export function formatMediaRef(m: MediaRef): string {
  return JSON.stringify({ url: m.url, aeskey: m.aeskey });
}

export function parseMediaRef(ref: string): { url: string; aeskey?: string } {
  const v = JSON.parse(ref) as MediaRef;
  if (typeof v.url !== 'string' || v.url === '') throw new Error('no download URL');
  return typeof v.aeskey === 'string' && v.aeskey !== '' ? { url: v.url, aeskey: v.aeskey } : { url: v.url };
}

/** A group is its `chatid`; a one-to-one chat is keyed by the sender (what aibot_send_msg takes as its `chatid`). */
function chatOf(b: { chattype?: string; chatid?: string }, senderId: string): { chatId: string; chatType: 'group' | 'direct' } {
  return b.chattype === 'group' ? { chatId: b.chatid ?? '', chatType: 'group' } : { chatId: senderId, chatType: 'direct' };
}

function mediaOf(b: NonNullable<CallbackFrame['body']>): { images: InboundImage[]; files: InboundFile[] } {
  const ok = (m: MediaRef | undefined): m is MediaRef => typeof m?.url === 'string' && m.url !== '';
  const pictures = b.msgtype === 'image' ? [b.image] : b.msgtype === 'mixed' ? (b.mixed?.msg_item ?? []).map((i) => i.image) : [];
  return {
    images: pictures.filter(ok).map((m) => ({ ref: formatMediaRef(m) })),
    // No name in the callback: WeCom names the file in the download's Content-Disposition.
    files: b.msgtype === 'file' && ok(b.file) ? [{ ref: formatMediaRef(b.file) }] : [],
  };
}

/**
 * Group text arrives as "@BotName question". The protocol never tells the bot its own display name
 * (neither the subscribe receipt nor the callback carries it), so the bot's mention is recognised by
 * position: groups only deliver messages that @ the bot, and WeCom puts that mention first. Only
 * that one leading `@word` is removed; other @mentions, e-mail addresses and DMs are left alone.
 * A display name containing a space would leave its second word behind.
 */
export function stripLeadingMention(text: string): string {
  return text.replace(/^\s*@\S+(?:\s+|$)/, '').trim();
}

function textOf(b: NonNullable<CallbackFrame['body']>): string | undefined {
  switch (b.msgtype) {
    case 'text':
      return b.text?.content ?? '';
    case 'voice':
      return b.voice?.content; // WeCom's own speech-to-text
    case 'mixed': {
      const items = b.mixed?.msg_item ?? [];
      const parts = items.filter((i) => i.msgtype === 'text').map((i) => i.text?.content ?? '');
      return parts.length > 0 || items.some((i) => i.msgtype === 'image') ? parts.join('\n') : undefined;
    }
    case 'image':
    case 'file':
      return '';
    default:
      return undefined;
  }
}

/** create_time is documented as a timestamp without a unit; seconds in practice (unverified). */
function timestampMs(t: number | undefined): number {
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) return Date.now();
  return t < 1e12 ? t * 1000 : t;
}

export function readWecomReplyExtra(extra: Record<string, unknown> | undefined): WecomReplyExtra {
  return typeof extra?.reqId === 'string' && extra.reqId !== '' ? { reqId: extra.reqId } : {};
}
