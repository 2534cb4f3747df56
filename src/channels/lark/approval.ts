import type { ApprovalPrompt } from '../approval-prompt.js';
import type { InboundMessage } from '../types.js';

/**
 * Approval buttons on Lark (pure): an `interactive` card (JSON 1.0: a markdown element and an
 * action element) whose buttons carry their command in `value.command`, and a press (a
 * `card.action.trigger` callback on the long connection) read back as the message that command
 * would be.
 */

/** The `card.action.trigger` callback as the SDK's EventDispatcher hands it over (header and event flattened). */
export interface LarkCardAction {
  /** The callback's own id (from the header): one per press. */
  event_id?: string;
  /** The callback token (`c-…`), also one per press. */
  token?: string;
  operator?: { open_id?: string; user_id?: string; union_id?: string; name?: string };
  action?: { tag?: string; value?: unknown };
  context?: { open_message_id?: string; open_chat_id?: string };
  open_message_id?: string;
  open_chat_id?: string;
}

/** Where the prompt a press answers was shown: remembered when it was sent (the callback does not say). */
export interface LarkPromptPlace {
  chatType: 'direct' | 'group';
  threadId?: string | undefined;
}

/** The answer to the callback: a toast, so the client shows no "something went wrong" error. */
export interface LarkCardActionAnswer {
  toast: { type: 'info' | 'success' | 'error' | 'warning'; content: string };
}

/** The `content` of the interactive message (a JSON string, as im/v1 messages take it). */
export function formatLarkApprovalCard(prompt: ApprovalPrompt, markdown: string): string {
  const card = {
    config: { wide_screen_mode: true },
    elements: [
      { tag: 'markdown', content: markdown },
      {
        tag: 'action',
        actions: prompt.actions.map((a, i) => ({
          tag: 'button',
          text: { tag: 'plain_text', content: a.label },
          type: i === 0 ? 'primary' : i === 1 ? 'danger' : 'default',
          value: { command: a.command },
        })),
      },
    ],
  };
  return JSON.stringify(card);
}

/** The command a pressed button carries, if it is one of ours. */
export function readLarkButtonCommand(action: LarkCardAction): string | undefined {
  const value = action.action?.value;
  const command = value && typeof value === 'object' ? (value as { command?: unknown }).command : undefined;
  return typeof command === 'string' && command.trim() ? command.trim() : undefined;
}

/**
 * A button press → the message its command would be, from the person who pressed, in the chat
 * (and thread) of the prompt. Each press has its own id (the callback's event id), so pressing
 * twice is two answers. Undefined for callbacks that are not a press of one of our buttons.
 */
export function normaliseLarkCardAction(channelKey: string, action: LarkCardAction, place: LarkPromptPlace): InboundMessage | undefined {
  const text = readLarkButtonCommand(action);
  const promptId = action.context?.open_message_id ?? action.open_message_id;
  const chatId = action.context?.open_chat_id ?? action.open_chat_id;
  const senderId = action.operator?.open_id ?? action.operator?.user_id ?? action.operator?.union_id;
  const pressId = action.event_id ?? action.token;
  if (!text || !promptId || !chatId || !senderId || !pressId) return undefined;
  const thread = place.threadId ? { threadId: place.threadId } : {};
  const senderName = action.operator?.name;
  return {
    channel: channelKey,
    messageId: `card:${pressId}`,
    chatId,
    chatType: place.chatType,
    ...thread,
    senderId,
    ...(senderName ? { senderName } : {}),
    text,
    mentioned: true,
    ts: Date.now(),
    // The answer to a press quotes the prompt it answers.
    replyTarget: { chatId, chatType: place.chatType, messageId: promptId, ...thread },
  };
}
