import type { CallbackQuery, InlineKeyboardMarkup } from 'grammy/types';
import type { ApprovalPrompt } from '../approval-prompt.js';
import type { InboundMessage } from '../types.js';
import { telegramMessageId } from './inbound.js';

/**
 * Approval buttons on Telegram (pure): an inline keyboard whose buttons carry their command as
 * `callback_data`, and a press (a `callback_query`) read back as the message that command would be.
 */

/** Telegram refuses a button whose callback_data is longer than this (bytes). */
export const TELEGRAM_CALLBACK_DATA_MAX_BYTES = 64;

/** One row per button: the "Always allow <tool>" label is too long to share a row on a phone. */
export function formatTelegramApprovalKeyboard(prompt: ApprovalPrompt): InlineKeyboardMarkup {
  const fits = prompt.actions.filter((a) => Buffer.byteLength(a.command) <= TELEGRAM_CALLBACK_DATA_MAX_BYTES);
  return { inline_keyboard: fits.map((a) => [{ text: a.label, callback_data: a.command }]) };
}

/**
 * A button press → the message its command would be, from the person who pressed, in the chat
 * (and forum topic) of the prompt. Each press has its own id (the query's), so pressing twice is
 * two answers, the second told that nothing is waiting any more. Undefined for presses that
 * carry no command or whose message Telegram no longer shows (too old).
 */
export function normaliseTelegramCallback(channelKey: string, query: CallbackQuery): InboundMessage | undefined {
  const prompt = query.message;
  const text = query.data?.trim();
  if (!prompt || !text) return undefined;
  const chatId = String(prompt.chat.id);
  const chatType = prompt.chat.type === 'private' ? 'direct' : 'group';
  const messageId = `callback:${query.id}`;
  const topic = 'is_topic_message' in prompt && prompt.is_topic_message && prompt.message_thread_id !== undefined;
  const threadId = topic ? String(prompt.message_thread_id) : undefined;
  const senderName = [query.from.first_name, query.from.last_name].filter(Boolean).join(' ') || query.from.username;
  return {
    channel: channelKey,
    messageId,
    chatId,
    chatType,
    ...(threadId ? { threadId } : {}),
    senderId: String(query.from.id),
    ...(senderName ? { senderName } : {}),
    text,
    mentioned: true,
    ts: Date.now(),
    // The answer to a press quotes the prompt it answers.
    replyTarget: { chatId, chatType, messageId: telegramMessageId(prompt.chat.id, prompt.message_id), ...(threadId ? { threadId } : {}) },
  };
}
