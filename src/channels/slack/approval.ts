import type { ApprovalPrompt } from '../approval-prompt.js';
import type { InboundMessage } from '../types.js';
import { slackChatType, slackMessageId } from './inbound.js';

/**
 * Approval buttons on Slack (pure): the prompt as a section plus an actions block whose buttons
 * carry their command as `value`, and a press (a `block_actions` interaction) read back as the
 * message that command would be.
 */

/** Slack refuses a button label longer than this (plain_text characters). */
const BUTTON_LABEL_MAX = 75;
/** Slack refuses a section text longer than this; the prompt is far shorter (its summary is capped). */
const SECTION_TEXT_MAX = 3000;

/** What the adapter passes to chat.postMessage besides channel and thread: `text` stays the notification fallback. */
export function formatSlackApprovalBlocks(prompt: ApprovalPrompt, mrkdwn: string): Array<Record<string, unknown>> {
  return [
    { type: 'section', text: { type: 'mrkdwn', text: clip(mrkdwn, SECTION_TEXT_MAX) } },
    {
      type: 'actions',
      block_id: `approval_${prompt.id}`,
      elements: prompt.actions.map((a, i) => ({
        type: 'button',
        action_id: `approval_${i}`,
        text: { type: 'plain_text', text: clip(a.label, BUTTON_LABEL_MAX) },
        value: a.command,
        ...(i === 0 ? { style: 'primary' } : i === 1 ? { style: 'danger' } : {}),
      })),
    },
  ];
}

/** The parts of a `block_actions` payload a press needs. */
export interface SlackBlockActions {
  type?: string;
  user?: { id?: string; username?: string; name?: string };
  container?: { channel_id?: string; message_ts?: string; thread_ts?: string };
  channel?: { id?: string };
  message?: { ts?: string; thread_ts?: string };
  trigger_id?: string;
  actions?: Array<{ type?: string; value?: string; action_ts?: string }>;
}

/**
 * A button press → the message its command would be, from the person who pressed, in the
 * channel and thread of the prompt (a thread is its own session on Slack). Each press has its own
 * id (its action_ts), so pressing twice is two answers. Undefined for anything but a button press.
 */
export function normaliseSlackBlockAction(channelKey: string, body: SlackBlockActions): InboundMessage | undefined {
  const action = body.actions?.find((a) => a.type === 'button' && a.value);
  const chatId = body.container?.channel_id ?? body.channel?.id;
  const promptTs = body.container?.message_ts ?? body.message?.ts;
  const senderId = body.user?.id;
  const text = action?.value?.trim();
  if (body.type !== 'block_actions' || !action || !text || !chatId || !promptTs || !senderId) return undefined;
  const threadId = body.container?.thread_ts ?? body.message?.thread_ts;
  const chatType = slackChatType(chatId);
  const senderName = body.user?.name ?? body.user?.username;
  return {
    channel: channelKey,
    messageId: `action:${chatId}:${action.action_ts ?? body.trigger_id ?? promptTs}:${senderId}`,
    chatId,
    chatType,
    ...(threadId ? { threadId } : {}),
    senderId,
    ...(senderName ? { senderName } : {}),
    text,
    mentioned: true,
    ts: Date.now(),
    replyTarget: { chatId, chatType, messageId: slackMessageId(chatId, promptTs), ...(threadId ? { threadId } : {}) },
  };
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
