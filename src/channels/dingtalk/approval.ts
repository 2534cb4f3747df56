import type { ApprovalPrompt } from '../approval-prompt.js';
import type { InboundMessage, ReplyTarget } from '../types.js';

/**
 * Approval buttons on DingTalk. Buttons that call the bot back exist only on cards built in
 * DingTalk's card builder: the operator makes one template (docs/channels.md, "DingTalk approval
 * card") and names it in `approvalCardTemplateId`. The card is delivered with callbackType STREAM,
 * so a press arrives over the stream connection as a CALLBACK frame on /v1.0/card/instances/callback
 * whose `value` is `{"cardPrivateData":{"actionIds":[…],"params":{…}}}`; each button of the template
 * sends `command` (bound to allowCommand / denyCommand / alwaysCommand) among its params.
 */

/** The card data the template reads (every value a string, as cardParamMap wants). */
export function formatApprovalCardParams(prompt: ApprovalPrompt, markdown: string): Record<string, string> {
  const [allow, deny, always] = prompt.actions;
  return {
    markdown,
    tool: prompt.tool,
    requestId: prompt.id,
    allowLabel: allow?.label ?? 'Allow',
    allowCommand: allow?.command ?? `/allow ${prompt.id}`,
    denyLabel: deny?.label ?? 'Deny',
    denyCommand: deny?.command ?? `/deny ${prompt.id}`,
    alwaysLabel: always?.label ?? 'Always allow',
    alwaysCommand: always?.command ?? `/allow always ${prompt.id}`,
  };
}

/** The card callback's data (the frame's `data`, parsed), fields read here. */
export interface CardCallbackData {
  userId?: string;
  outTrackId?: string;
  /** JSON: {cardPrivateData: {actionIds, params}}. */
  value?: string;
  /** The same JSON in older payloads. */
  content?: string;
}

/** The press: who pressed, on which card, and the command its button carries; undefined for anything else. */
export function parseCardPress(data: CardCallbackData): { userId: string; outTrackId: string; command: string } | undefined {
  let value: { cardPrivateData?: { params?: { command?: unknown } } } | undefined;
  try {
    value = JSON.parse(data.value ?? data.content ?? '{}') as typeof value;
  } catch {
    return undefined;
  }
  const command = value?.cardPrivateData?.params?.command;
  if (!data.userId || !data.outTrackId || typeof command !== 'string' || !/^\/(allow|deny)\b/.test(command)) return undefined;
  return { userId: data.userId, outTrackId: data.outTrackId, command };
}

/**
 * The press as the message it stands for, in the chat the card was sent to. A card the adapter no
 * longer knows (sent before a restart) is answered in a direct chat with the presser, where the
 * bridge says that nothing is waiting. Replies go through the OpenAPI: a press has no sessionWebhook.
 */
export function createPressMessage(
  channel: string,
  frameId: string,
  press: { userId: string; command: string },
  target: ReplyTarget | undefined,
): InboundMessage {
  const chatId = target?.chatId ?? press.userId;
  const chatType = target?.chatType ?? 'direct';
  return {
    channel,
    messageId: `card:${frameId}`,
    chatId,
    chatType,
    senderId: press.userId,
    text: press.command,
    mentioned: true,
    ts: Date.now(),
    replyTarget: { chatId, chatType, extra: { ...(target?.extra ?? {}) } },
  };
}
