import type { ApprovalPrompt } from '../approval-prompt.js';
import type { InboundMessage } from '../types.js';

/**
 * Approval buttons on Discord (pure): one action row of buttons whose `custom_id` is their
 * command, and a press (a button interaction) read back as the message that command would be.
 */

/** Discord refuses a custom_id longer than 100 characters and a label longer than 80. */
const CUSTOM_ID_MAX = 100;
const LABEL_MAX = 80;
/** Button styles: Success (green), Danger (red), Secondary (grey). */
const STYLES = [3, 4, 2];

export function formatDiscordApprovalComponents(prompt: ApprovalPrompt): Array<Record<string, unknown>> {
  const buttons = prompt.actions
    .filter((a) => a.command.length <= CUSTOM_ID_MAX)
    .slice(0, 5)
    .map((a, i) => ({
      type: 2,
      style: STYLES[i] ?? 2,
      label: a.label.length <= LABEL_MAX ? a.label : `${a.label.slice(0, LABEL_MAX - 1)}…`,
      custom_id: a.command,
    }));
  return [{ type: 1, components: buttons }];
}

/** The parts of a button interaction a press needs (discord.js ButtonInteraction has them). */
export interface DiscordButtonPress {
  id: string;
  customId: string;
  channelId: string | null;
  /** Set when the press was in a thread: the thread's parent channel. */
  parentId?: string | null | undefined;
  inGuild: boolean;
  user: { id: string; globalName?: string | null; username: string };
  messageId: string;
}

/**
 * A press → the message its command would be, from the person who pressed, in the channel (and
 * thread) of the prompt. Each press has its own id (the interaction's), so pressing twice is two answers.
 */
export function normaliseDiscordButtonPress(channelKey: string, press: DiscordButtonPress): InboundMessage | undefined {
  const text = press.customId.trim();
  if (!text || !press.channelId) return undefined;
  const thread = press.parentId ? press.channelId : undefined;
  const chatId = press.parentId ?? press.channelId;
  const chatType = press.inGuild ? 'group' : 'direct';
  const senderName = press.user.globalName ?? press.user.username;
  return {
    channel: channelKey,
    messageId: `interaction:${press.id}`,
    chatId,
    chatType,
    ...(thread ? { threadId: thread } : {}),
    senderId: press.user.id,
    ...(senderName ? { senderName } : {}),
    text,
    mentioned: true,
    ts: Date.now(),
    replyTarget: { chatId, chatType, messageId: press.messageId, ...(thread ? { threadId: thread } : {}) },
  };
}
