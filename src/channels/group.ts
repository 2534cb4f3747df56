import type { ServiceConfig } from '../core/config/schema.js';
import type { GroupMessage } from '../core/store/types.js';
import type { InboundMessage } from './types.js';

/**
 * Session keys and group behaviour, pure. A direct message runs on a key per user, a group on a
 * key per group chat, and per thread where the platform has threads (including the thread the
 * reply will start, as on Slack):
 *   `<channel>:dm:<sender>`   `<channel>:group:<chat>`   `<channel>:group:<chat>:<thread>`
 */
export function sessionKeyOf(msg: InboundMessage): string {
  if (msg.chatType === 'direct') return `${msg.channel}:dm:${msg.senderId}`;
  const thread = msg.threadId ?? msg.replyTarget.threadId;
  return `${msg.channel}:group:${msg.chatId}${thread ? `:${thread}` : ''}`;
}

/**
 * Where a group message was said: the chat, or the thread it was posted in. Group context
 * (historyLimit) and the run of bot replies (maxTurns) belong to this, not to the session: a
 * reply thread the bot starts does not hide what was said in the channel.
 */
export function conversationKeyOf(msg: InboundMessage): string {
  if (msg.chatType === 'direct') return `${msg.channel}:dm:${msg.senderId}`;
  return `${msg.channel}:group:${msg.chatId}${msg.threadId ? `:${msg.threadId}` : ''}`;
}

export type Decision = { respond: true } | { respond: false; why: string };

/** Whether the bot answers this message under `groupChat` (DMs are always answered, bots never in DMs). */
export function decide(msg: InboundMessage, group: ServiceConfig['groupChat'], consecutiveBotReplies: number): Decision {
  if (msg.chatType === 'direct') return msg.fromBot ? { respond: false, why: 'a bot in a direct chat' } : { respond: true };
  if (group.groupPolicy === 'mention-only' && !msg.mentioned) return { respond: false, why: 'not mentioned (mention-only)' };
  if (consecutiveBotReplies >= group.maxTurns)
    return { respond: false, why: `${consecutiveBotReplies} bot replies in a row (maxTurns ${group.maxTurns}); waiting for a human` };
  return { respond: true };
}

/**
 * The prompt of a group turn: the recent group messages (answered or not, oldest first) as
 * context, then the message itself with its sender. In smart mode the assistant is reminded that
 * `[PASS]` means "say nothing".
 */
export function groupPrompt(msg: InboundMessage, context: readonly GroupMessage[], policy: ServiceConfig['groupChat']['groupPolicy']): string {
  const lines: string[] = [];
  if (context.length > 0) {
    lines.push('Recent messages in this group chat (oldest first):');
    for (const m of context)
      lines.push(`[${new Date(m.ts).toISOString().slice(11, 16)}] ${m.sender}${m.fromBot ? ' (bot)' : ''}: ${m.text.replace(/\s*\n\s*/g, ' ')}`);
    lines.push('');
  }
  lines.push(`Message from ${msg.senderName ?? msg.senderId} in the group:`, msg.text);
  if (policy === 'smart') lines.push('', '(Group chat, smart mode: if this message needs no answer from you, reply with exactly [PASS].)');
  return lines.join('\n');
}

/**
 * The context of a group message when its turn runs: everything said before it, plus the bot's
 * own replies sent since it arrived (answers to earlier messages it waited behind), but not
 * messages people sent after it. Newest `limit`, in the order we received them.
 */
export function contextBefore(all: readonly GroupMessage[], msg: InboundMessage, limit: number): GroupMessage[] {
  if (limit <= 0) return [];
  const idx = all.findIndex((m) => m.messageId === msg.messageId);
  const context = idx < 0 ? [...all] : all.filter((m, i) => i < idx || (i > idx && m.fromBot && m.messageId === undefined));
  return context.slice(-limit);
}
