import type { InboundFile, InboundImage, InboundMessage } from '../types.js';

/**
 * Pure helpers of the DingTalk adapter: the robot callback payload → InboundMessage, the reply data
 * kept in `replyTarget.extra`, and how a bare chat id names a user or a group.
 */

/** The robot message callback (topic /v1.0/im/bot/messages/get), fields this adapter reads. */
export interface RobotPayload {
  conversationId?: string;
  /** "1" one-to-one, "2" group. */
  conversationType?: string;
  msgId?: string;
  msgtype?: string;
  text?: { content?: string };
  /**
   * audio (one-to-one chats only): the recording's downloadCode and DingTalk's own transcript
   * (recognition); richText: text parts and pictures; picture: downloadCode; file (one-to-one chats
   * only): downloadCode and fileName. A downloadCode becomes a URL through
   * /v1.0/robot/messageFiles/download.
   */
  content?: {
    recognition?: string;
    duration?: number;
    richText?: Array<{ text?: string; type?: string; downloadCode?: string; pictureDownloadCode?: string }>;
    downloadCode?: string;
    pictureDownloadCode?: string;
    fileName?: string;
  };
  senderStaffId?: string;
  senderId?: string;
  senderNick?: string;
  chatbotUserId?: string;
  robotCode?: string;
  sessionWebhook?: string;
  sessionWebhookExpiredTime?: number;
  isInAtList?: boolean;
  atUsers?: Array<{ dingtalkId?: string; staffId?: string }>;
  createAt?: number;
}

/** What reply() needs later; stored in replyTarget.extra (JSON, kept by the inbox). */
export interface DingtalkReplyExtra {
  sessionWebhook?: string;
  /** Unix ms after which the sessionWebhook is refused. */
  sessionWebhookExpiredTime?: number;
  /** The robot that received the message (the app's clientId unless DingTalk said otherwise). */
  robotCode?: string;
}

/**
 * A robot callback as an InboundMessage (text, rich text with pictures, pictures, files, voice),
 * or undefined for the rest (videos; the caller acknowledges and drops them).
 *
 * Chat ids: a DM is keyed by the sender's staffId (what the OpenAPI's oToMessages/batchSend takes as
 * `userIds`); a group by its openConversationId (the callback's conversationId, `cid…`).
 */
export function normalizeRobotMessage(channel: string, p: RobotPayload): InboundMessage | undefined {
  const text = textOf(p);
  if (text === undefined || !p.msgId) return undefined;
  const { images, files } = mediaOf(p);
  const group = p.conversationType === '2';
  const senderId = p.senderStaffId || p.senderId || '';
  const chatId = group ? (p.conversationId ?? '') : senderId;
  const extra: DingtalkReplyExtra = {};
  if (p.sessionWebhook) extra.sessionWebhook = p.sessionWebhook;
  if (typeof p.sessionWebhookExpiredTime === 'number') extra.sessionWebhookExpiredTime = p.sessionWebhookExpiredTime;
  if (p.robotCode) extra.robotCode = p.robotCode;
  const chatType = group ? 'group' : 'direct';
  return {
    channel,
    messageId: p.msgId,
    chatId,
    chatType,
    senderId,
    ...(p.senderNick ? { senderName: p.senderNick } : {}),
    // DingTalk removes the bot's own @mention from group text and leaves the separating space.
    text: text.trim(),
    // Groups deliver only @-messages by default; isInAtList is the platform's own flag for it.
    mentioned: !group || p.isInAtList === true || (p.atUsers ?? []).some((u) => !!u.dingtalkId && u.dingtalkId === p.chatbotUserId),
    ts: typeof p.createAt === 'number' ? p.createAt : Date.now(),
    ...(images.length ? { images } : {}),
    ...(files.length ? { files } : {}),
    replyTarget: { chatId, chatType, messageId: p.msgId, extra: { ...extra } },
  };
}

function textOf(p: RobotPayload): string | undefined {
  switch (p.msgtype) {
    case 'text':
      return p.text?.content ?? '';
    case 'richText': {
      const items = p.content?.richText ?? [];
      const parts = items.map((r) => r.text).filter((t): t is string => typeof t === 'string');
      return parts.length > 0 || items.some((r) => r.type === 'picture') ? parts.join('') : undefined;
    }
    case 'picture':
    case 'file':
      return p.content?.downloadCode ? '' : undefined;
    case 'audio':
      // The recording is a file (its transcript with it); without one, DingTalk's own speech-to-text is the text.
      return p.content?.downloadCode ? '' : p.content?.recognition || undefined;
    default:
      return undefined;
  }
}

/** Pictures and files of a message; each ref is its downloadCode. */
function mediaOf(p: RobotPayload): { images: InboundImage[]; files: InboundFile[] } {
  const c = p.content;
  const code = (x: { downloadCode?: string; pictureDownloadCode?: string } | undefined) => x?.downloadCode || x?.pictureDownloadCode;
  const pictures = p.msgtype === 'picture' ? [code(c)] : p.msgtype === 'richText' ? (c?.richText ?? []).filter((r) => r.type === 'picture').map(code) : [];
  const fileCode = p.msgtype === 'file' ? c?.downloadCode : undefined;
  const voiceCode = p.msgtype === 'audio' ? c?.downloadCode : undefined;
  // A voice message's file is named once downloaded (its type says which recording format it is).
  const voice: InboundFile | undefined = voiceCode ? { ref: voiceCode, kind: 'voice', ...(c?.recognition ? { transcript: c.recognition } : {}) } : undefined;
  return {
    images: pictures.filter((x): x is string => !!x).map((ref) => ({ ref })),
    files: fileCode ? [{ ref: fileCode, ...(c?.fileName ? { fileName: c.fileName } : {}) }] : voice ? [voice] : [],
  };
}

export function readDingtalkReplyExtra(extra: Record<string, unknown> | undefined): DingtalkReplyExtra {
  const out: DingtalkReplyExtra = {};
  if (typeof extra?.sessionWebhook === 'string') out.sessionWebhook = extra.sessionWebhook;
  if (typeof extra?.sessionWebhookExpiredTime === 'number') out.sessionWebhookExpiredTime = extra.sessionWebhookExpiredTime;
  if (typeof extra?.robotCode === 'string') out.robotCode = extra.robotCode;
  return out;
}

/**
 * Proactive sends get a bare chat id. DingTalk group ids (openConversationId) start with `cid`;
 * user ids (staffIds) are assigned by the organisation and do not. `group:<id>` and `user:<id>`
 * force the reading for the rare staffId that does start with "cid".
 */
export function parseChatId(chatId: string): { group: boolean; id: string } {
  if (chatId.startsWith('group:')) return { group: true, id: chatId.slice('group:'.length) };
  if (chatId.startsWith('user:')) return { group: false, id: chatId.slice('user:'.length) };
  return { group: chatId.startsWith('cid'), id: chatId };
}
