import type { Message } from 'discord.js';
import type { InboundFile, InboundImage, InboundMessage, ReplyTarget } from '../types.js';

/** Who "the bot" is on Discord, for mention detection and flags. */
export interface DiscordSelf {
  channel: string;
  botId: string;
  /** From options: a typed `@botName` (no autocomplete, so no `<@id>` token) counts as a mention too. */
  botName?: string;
}

/**
 * A discord.js message → InboundMessage, or undefined for what is not a chat message (system
 * messages such as "thread created" or "pinned", and messages with neither text nor attachments).
 *
 * Ids: messageId is the message snowflake (unique across Discord). chatId is the channel id; for a
 * message in a thread it is the thread's *parent* channel and threadId is the thread channel id,
 * so group policy configured per channel applies to its threads while the bridge still keeps one
 * session per thread. A DM's chatId is the DM channel id (what `send` and `readHistory` take).
 */
export function toInboundMessage(m: Message, self: DiscordSelf): InboundMessage | undefined {
  if (m.system) return undefined;
  const direct = !m.inGuild();
  const ch = m.channel;
  const thread = !direct && ch.isThread() ? ch : undefined;
  const chatId = thread ? (thread.parentId ?? thread.id) : m.channelId;
  const botRoleIds = direct ? [] : [...m.mentions.roles.values()].filter((r) => r.tags?.botId === self.botId).map((r) => r.id);
  const tokenMention = new RegExp(`<@!?${self.botId}>`).test(m.content);
  const typedMention = self.botName !== undefined && typedMentionPattern(self.botName).test(m.content);
  const repliesToBot = m.reference !== null && m.mentions.repliedUser?.id === self.botId;
  const mentioned = direct || m.mentions.users.has(self.botId) || tokenMention || botRoleIds.length > 0 || typedMention || repliesToBot;

  const names = new Map<string, string>();
  for (const [id, user] of m.mentions.users) names.set(id, m.mentions.members?.get(id)?.displayName ?? user.globalName ?? user.username);
  const text = nameMentions(stripBotMention(m.content, { botId: self.botId, roleIds: botRoleIds, botName: self.botName }), {
    users: names,
    roles: new Map([...m.mentions.roles].map(([id, r]) => [id, r.name])),
    channels: new Map([...m.mentions.channels].map(([id, c]) => [id, 'name' in c && c.name ? c.name : id])),
  });
  const attachments = [...m.attachments.values()];
  const images: InboundImage[] = attachments
    .filter((a) => a.contentType?.startsWith('image/'))
    .map((a) => ({ ref: a.url, ...(a.contentType ? { mimeType: a.contentType } : {}), fileName: a.name }));
  const files: InboundFile[] = attachments
    .filter((a) => !a.contentType?.startsWith('image/'))
    .map((a) => ({
      ref: a.url,
      fileName: a.name,
      ...(a.contentType ? { mimeType: a.contentType } : {}),
      size: a.size,
      // A voice message is an attachment with a waveform (and the IS_VOICE_MESSAGE flag).
      ...(a.waveform ? { kind: 'voice' as const } : a.contentType?.startsWith('audio/') ? { kind: 'audio' as const } : {}),
    }));
  if (!text && images.length === 0 && files.length === 0) return undefined;

  const chatType = direct ? 'direct' : 'group';
  const replyTarget: ReplyTarget = { chatId, chatType, ...(thread ? { threadId: thread.id } : {}), messageId: m.id };
  return {
    channel: self.channel,
    messageId: m.id,
    chatId,
    chatType,
    ...(thread ? { threadId: thread.id } : {}),
    senderId: m.author.id,
    senderName: m.member?.displayName ?? m.author.globalName ?? m.author.username,
    text,
    mentioned,
    // Webhook posts (integrations) are authored by bot users too; the bot's own echoes land here as well.
    ...(m.author.bot || m.webhookId || m.author.id === self.botId ? { fromBot: true } : {}),
    ts: m.createdTimestamp,
    ...(images.length ? { images } : {}),
    ...(files.length ? { files } : {}),
    replyTarget,
  };
}

/**
 * Removes only the bot's own mention: `<@id>`, `<@!id>`, the bot's managed role `<@&role>` and a
 * typed `@botName`. Other people's mentions, `@handles` and e-mail addresses stay.
 */
export function stripBotMention(content: string, bot: { botId: string; roleIds?: string[]; botName?: string }): string {
  let text = content.replace(new RegExp(`[ \\t]*<@!?${bot.botId}>[ \\t]*`, 'g'), ' ');
  for (const role of bot.roleIds ?? []) text = text.replace(new RegExp(`[ \\t]*<@&${role}>[ \\t]*`, 'g'), ' ');
  if (bot.botName) text = text.replace(typedMentionPattern(bot.botName, 'g'), '$1');
  return text.trim();
}

/** `<@id>`, `<@&role>`, `<#channel>` → `@name` / `#name`, so the model reads names, not snowflakes. */
export function nameMentions(text: string, names: { users: Map<string, string>; roles?: Map<string, string>; channels?: Map<string, string> }): string {
  return text
    .replace(/<@!?(\d+)>/g, (token, id: string) => (names.users.has(id) ? `@${names.users.get(id)}` : token))
    .replace(/<@&(\d+)>/g, (token, id: string) => (names.roles?.has(id) ? `@${names.roles.get(id)}` : token))
    .replace(/<#(\d+)>/g, (token, id: string) => (names.channels?.has(id) ? `#${names.channels.get(id)}` : token));
}

// --- internal ---

/** `@Name` as a whole word at a word start (so `me@Name.com` is not a mention). */
function typedMentionPattern(botName: string, flags = ''): RegExp {
  const escaped = botName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|\\s)@${escaped}(?=$|[\\s,.!?:;)])[ \\t]*`, `i${flags}`);
}
