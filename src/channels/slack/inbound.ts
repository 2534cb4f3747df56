import type { InboundFile, InboundImage, InboundMessage } from '../types.js';
import { slackTextToMarkdown } from './format.js';

/**
 * Slack message events (and conversations.history entries, which have the same shape) →
 * InboundMessage. Pure: the adapter supplies the bot's identity and any looked-up sender name.
 */

export interface SlackFileInfo {
  id?: string;
  name?: string;
  mimetype?: string;
  size?: number;
  url_private?: string;
  url_private_download?: string;
  /** `slack_audio` for a voice clip recorded in Slack. */
  subtype?: string;
}

export interface SlackMessageEvent {
  type?: string;
  subtype?: string;
  hidden?: boolean;
  channel?: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  username?: string;
  bot_profile?: { name?: string };
  text?: string;
  ts?: string;
  thread_ts?: string;
  files?: SlackFileInfo[];
}

export interface SlackIdentity {
  botUserId: string;
  botId?: string;
}

/** Subtypes that carry a message someone wrote; edits, deletions, joins and the like are not turns. */
const CONVERSATIONAL = new Set([undefined, 'file_share', 'thread_broadcast', 'me_message', 'bot_message']);

export function slackTsToMs(ts: string): number {
  const [sec = '0', frac = ''] = ts.split('.');
  return Number(sec) * 1000 + Number(frac.padEnd(3, '0').slice(0, 3));
}

export const slackMessageId = (channel: string, ts: string): string => `${channel}:${ts}`;

/** Slack ids: D… is a direct message; C… and G… (channels, private channels, group DMs) are groups. */
export function slackChatType(channel: string, channelType?: string): 'direct' | 'group' {
  if (channelType) return channelType === 'im' ? 'direct' : 'group';
  return channel.startsWith('D') ? 'direct' : 'group';
}

/** Remove only the bot's own `<@BOT>` / `<@BOT|name>` tokens; other mentions stay as written. */
export function stripSlackMention(text: string, botUserId: string): { text: string; mentioned: boolean } {
  const id = botUserId.replace(/[^A-Za-z0-9]/g, '\\$&');
  const re = new RegExp(`(^|\\s)<@${id}(?:\\|[^>]*)?>[ \\t]?`, 'g');
  const mentioned = new RegExp(`<@${id}(?:\\|[^>]*)?>`).test(text);
  return { text: mentioned ? text.replace(re, '$1').trim() : text.trim(), mentioned };
}

export interface NormaliseOptions {
  channel: string;
  me: SlackIdentity;
  /** The event was an `app_mention`: the bot was addressed even without a token we can see. */
  appMention?: boolean;
  /** Keep this bot's own messages (history wants them as context; live events do not). */
  includeOwn?: boolean;
  senderName?: string;
}

export function normaliseSlackMessage(channelKey: string, ev: SlackMessageEvent, o: NormaliseOptions): InboundMessage | undefined {
  if (ev.hidden || !ev.ts || !CONVERSATIONAL.has(ev.subtype)) return undefined;
  const own = ev.user === o.me.botUserId || (o.me.botId !== undefined && ev.bot_id === o.me.botId);
  if (own && !o.includeOwn) return undefined;

  const chatType = slackChatType(o.channel, ev.channel_type);
  const stripped = stripSlackMention(ev.text ?? '', o.me.botUserId);
  const images: InboundImage[] = [];
  const files: InboundFile[] = [];
  for (const f of ev.files ?? []) {
    const url = f.url_private_download ?? f.url_private;
    if (!url) continue;
    if (f.mimetype?.startsWith('image/')) images.push({ ref: url, mimeType: f.mimetype, ...(f.name ? { fileName: f.name } : {}) });
    else
      files.push({
        ref: url,
        fileName: f.name ?? 'file',
        ...(f.mimetype ? { mimeType: f.mimetype } : {}),
        ...(f.size !== undefined ? { size: f.size } : {}),
        ...(f.subtype === 'slack_audio' ? { kind: 'voice' as const } : f.mimetype?.startsWith('audio/') ? { kind: 'audio' as const } : {}),
      });
  }
  const text = slackTextToMarkdown(stripped.text);
  if (!text && images.length === 0 && files.length === 0) return undefined;

  const messageId = slackMessageId(o.channel, ev.ts);
  // Group answers go into the message's thread (starting one if needed); DMs stay flat unless
  // the user already wrote inside a thread.
  const replyThread = chatType === 'group' ? (ev.thread_ts ?? ev.ts) : ev.thread_ts;
  const senderName = o.senderName ?? ev.username ?? ev.bot_profile?.name;
  return {
    channel: channelKey,
    messageId,
    chatId: o.channel,
    chatType,
    ...(ev.thread_ts ? { threadId: ev.thread_ts } : {}),
    senderId: ev.user ?? ev.bot_id ?? '',
    ...(senderName ? { senderName } : {}),
    text,
    mentioned: chatType === 'direct' || stripped.mentioned || o.appMention === true,
    ...(own || ev.bot_id || ev.subtype === 'bot_message' ? { fromBot: true } : {}),
    ts: slackTsToMs(ev.ts),
    ...(images.length ? { images } : {}),
    ...(files.length ? { files } : {}),
    replyTarget: { chatId: o.channel, chatType, messageId, ...(replyThread ? { threadId: replyThread } : {}) },
  };
}
