import type { InboundFile, InboundImage, InboundMessage } from '../types.js';

/** Who "the bot" is on Lark: its open_id (from GET /open-apis/bot/v3/info) marks its mentions. */
export interface LarkSelf {
  channel: string;
  botOpenId: string;
}

/** The parts of `im.message.receive_v1` the adapter reads (the SDK hands the event flattened). */
export interface LarkReceiveEvent {
  sender: { sender_id?: { open_id?: string; user_id?: string; union_id?: string }; sender_type: string };
  message: {
    message_id: string;
    create_time: string;
    chat_id: string;
    thread_id?: string;
    chat_type: string;
    message_type: string;
    content: string;
    mentions?: LarkMention[];
  };
}

/** An item of GET /open-apis/im/v1/messages (history). */
export interface LarkHistoryItem {
  message_id?: string;
  thread_id?: string;
  msg_type?: string;
  create_time?: string;
  deleted?: boolean;
  chat_id?: string;
  sender?: { id?: string; id_type?: string; sender_type?: string };
  body?: { content?: string };
  mentions?: LarkMention[];
}

/** Events carry `id: {open_id, …}`; history items carry `id: "ou_…"` with `id_type`. */
export interface LarkMention {
  key: string;
  id?: string | { open_id?: string; user_id?: string; union_id?: string };
  name?: string;
}

/**
 * An `im.message.receive_v1` event → InboundMessage. Ids: messageId is the `om_…` message id
 * (Lark redelivers with the same one); chatId is `chat_id` (`oc_…`, also for p2p chats, so it is
 * what `send` takes); threadId is the topic/thread id (`omt_…`) when the message is in one.
 */
export function fromReceiveEvent(ev: LarkReceiveEvent, self: LarkSelf): InboundMessage | undefined {
  const m = ev.message;
  const senderId = ev.sender.sender_id?.open_id ?? ev.sender.sender_id?.user_id ?? ev.sender.sender_id?.union_id ?? '';
  return build(self, {
    messageId: m.message_id,
    chatId: m.chat_id,
    chatType: m.chat_type === 'p2p' ? 'direct' : 'group',
    threadId: m.thread_id,
    senderId,
    fromBot: ev.sender.sender_type !== 'user',
    ts: Number(m.create_time),
    type: m.message_type,
    content: m.content,
    mentions: m.mentions ?? [],
  });
}

/** A history item → InboundMessage (history items do not say whether the chat is p2p: the caller knows). */
export function fromHistoryItem(item: LarkHistoryItem, chatType: 'direct' | 'group', self: LarkSelf): InboundMessage | undefined {
  if (item.deleted || !item.message_id || !item.chat_id) return undefined;
  return build(self, {
    messageId: item.message_id,
    chatId: item.chat_id,
    chatType,
    threadId: item.thread_id,
    senderId: item.sender?.id ?? '',
    fromBot: item.sender?.sender_type !== 'user',
    ts: Number(item.create_time),
    type: item.msg_type ?? '',
    content: item.body?.content ?? '',
    mentions: item.mentions ?? [],
  });
}

/**
 * Text and image keys of a message's `content` JSON. The bot's own `@_user_N` placeholder is
 * removed; other people's become `@Name`. Unsupported types become a short bracketed note, so the
 * model knows something was sent.
 */
export function readContent(
  type: string,
  content: string,
  mentions: LarkMention[],
  botOpenId: string,
): { text: string; imageKeys: string[]; files?: Array<{ key: string; name: string; voice?: boolean }> } {
  const json = parseObject(content);
  const mentionOf = (key: string) => mentions.find((x) => x.key === key || openIdOf(x) === key);
  switch (type) {
    case 'text':
      return { text: replacePlaceholders(typeof json.text === 'string' ? json.text : '', mentions, botOpenId), imageKeys: [] };
    case 'post':
      return readPost(json, (key) => {
        const who = mentionOf(key);
        return who && openIdOf(who) === botOpenId ? '' : `@${who?.name ?? key}`;
      });
    case 'image':
      return { text: '', imageKeys: typeof json.image_key === 'string' ? [json.image_key] : [] };
    case 'interactive':
      return { text: cardText(json) || '[card]', imageKeys: [] };
    // A file, a voice message and a video are one resource each, downloaded as a file.
    case 'file':
    case 'audio':
    case 'media': {
      const key = typeof json.file_key === 'string' ? json.file_key : '';
      const fallback = type === 'audio' ? 'audio.opus' : type === 'media' ? 'video.mp4' : 'file';
      const name = typeof json.file_name === 'string' && json.file_name ? json.file_name : fallback;
      return key
        ? { text: '', imageKeys: [], files: [{ key, name, ...(type === 'audio' ? { voice: true } : {}) }] }
        : { text: `[${type}: ${name}]`, imageKeys: [] };
    }
    default:
      return { text: type ? `[${type}]` : '', imageKeys: [] };
  }
}

// --- internal ---

interface Parts {
  messageId: string;
  chatId: string;
  chatType: 'direct' | 'group';
  threadId: string | undefined;
  senderId: string;
  fromBot: boolean;
  ts: number;
  type: string;
  content: string;
  mentions: LarkMention[];
}

/** System notices (member joined, chat renamed...) are not chat messages. */
const SKIPPED_TYPES = new Set(['system']);

function build(self: LarkSelf, p: Parts): InboundMessage | undefined {
  if (SKIPPED_TYPES.has(p.type)) return undefined;
  const { text, imageKeys, files: fileKeys = [] } = readContent(p.type, p.content, p.mentions, self.botOpenId);
  if (!text && imageKeys.length === 0 && fileKeys.length === 0) return undefined;
  const images: InboundImage[] = imageKeys.map((key) => ({ ref: `${p.messageId}/${key}` }));
  const files: InboundFile[] = fileKeys.map((f) => ({ ref: `${p.messageId}/${f.key}`, fileName: f.name, ...(f.voice ? { kind: 'voice' as const } : {}) }));
  const mentioned = p.chatType === 'direct' || p.mentions.some((x) => openIdOf(x) === self.botOpenId);
  const thread = p.threadId ? { threadId: p.threadId } : {};
  return {
    channel: self.channel,
    messageId: p.messageId,
    chatId: p.chatId,
    chatType: p.chatType,
    ...thread,
    senderId: p.senderId,
    text,
    mentioned,
    ...(p.fromBot ? { fromBot: true } : {}),
    ts: Number.isFinite(p.ts) ? p.ts : Date.now(),
    ...(images.length ? { images } : {}),
    ...(files.length ? { files } : {}),
    replyTarget: { chatId: p.chatId, chatType: p.chatType, ...thread, messageId: p.messageId },
  };
}

function openIdOf(m: LarkMention): string | undefined {
  return typeof m.id === 'string' ? m.id : m.id?.open_id;
}

/** `@_user_1` must not match inside `@_user_12`: longest keys first, and a digit may not follow. */
function replacePlaceholders(text: string, mentions: LarkMention[], botOpenId: string): string {
  let out = text;
  for (const m of [...mentions].sort((a, b) => b.key.length - a.key.length)) {
    const key = new RegExp(`[ \\t]*${m.key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?!\\d)`, 'g');
    out = openIdOf(m) === botOpenId ? out.replace(key, '') : out.replace(key, (hit) => `${hit.match(/^[ \t]*/)?.[0] ?? ''}@${m.name ?? m.key}`);
  }
  return out.trim();
}

type Json = Record<string, unknown>;

function parseObject(s: string): Json {
  try {
    const v: unknown = JSON.parse(s);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {};
  } catch {
    return {};
  }
}

/** A post is bare (`{title, content}`, as events carry it) or locale-wrapped (`{zh_cn: {…}}`). */
function readPost(json: Json, at: (key: string) => string): { text: string; imageKeys: string[] } {
  const body = 'content' in json || 'title' in json ? json : ((Object.values(json).find((v) => v && typeof v === 'object') as Json | undefined) ?? {});
  const imageKeys: string[] = [];
  const str = (el: Json, k: string) => (typeof el[k] === 'string' ? (el[k] as string) : '');
  const lines = (Array.isArray(body.content) ? (body.content as unknown[]) : []).map((par) =>
    (Array.isArray(par) ? (par as Json[]) : [])
      .map((el) => {
        switch (el.tag) {
          case 'at':
            return at(str(el, 'user_id'));
          case 'a':
            return str(el, 'href') ? `[${str(el, 'text') || str(el, 'href')}](${str(el, 'href')})` : str(el, 'text');
          case 'img':
            if (str(el, 'image_key')) imageKeys.push(str(el, 'image_key'));
            return '';
          case 'code_block':
            return `\`\`\`${str(el, 'language').toLowerCase()}\n${str(el, 'text')}\n\`\`\``;
          case 'emotion':
            return `:${str(el, 'emoji_type')}:`;
          case 'hr':
            return '---';
          case 'media':
            return '[video]';
          default:
            return str(el, 'text');
        }
      })
      .join('')
      .replace(/[ \t]{2,}/g, ' ')
      .trim(),
  );
  const title = str(body, 'title');
  const text = [title, ...lines].filter((l) => l !== '').join('\n');
  return { text, imageKeys };
}

const TEXT_TAGS = new Set(['markdown', 'lark_md', 'plain_text', 'text']);

/** Best-effort text of a card (another bot's card, or this bot's own in history). */
function cardText(v: unknown, out: string[] = []): string {
  if (Array.isArray(v)) for (const x of v) cardText(x, out);
  else if (v && typeof v === 'object') {
    const o = v as Json;
    if (typeof o.tag === 'string' && TEXT_TAGS.has(o.tag) && typeof o.content === 'string') out.push(o.content);
    else if (o.tag === 'text' && typeof o.text === 'string') out.push(o.text);
    else for (const x of Object.values(o)) cardText(x, out);
  }
  return out.join('\n');
}
