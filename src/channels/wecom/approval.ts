import { randomBytes } from 'node:crypto';
import type { TemplateCard } from '@wecom/aibot-node-sdk';
import type { ApprovalPrompt } from '../approval-prompt.js';

/**
 * The approval request as a `button_interaction` template card: the request's text, then one
 * button per answer whose key is the command a press stands for (`/allow k7m2x`), so a press
 * needs no state to be understood. A press arrives as a template_card_event; WeCom wants the
 * card updated within 5 s of it, which the adapter does for the person who pressed only, with
 * the buttons kept (someone who may not answer must not take them from the one who may).
 */
export function createApprovalCard(prompt: ApprovalPrompt): TemplateCard {
  return {
    card_type: 'button_interaction',
    main_title: { title: 'Approval needed', desc: prompt.tool },
    // Card text is plain: the Markdown emphasis of the prompt would show as asterisks.
    sub_title_text: prompt.text.replace(/\*\*/g, ''),
    button_list: prompt.actions.map((a) => ({ text: a.label, key: a.command })),
    // Unique per bot, [0-9a-zA-Z_-@] and at most 128 bytes.
    task_id: `approval_${prompt.id.replace(/[^0-9a-zA-Z_-]/g, '')}_${randomBytes(6).toString('hex')}`,
  };
}

/** The card as the person who pressed sees it afterwards: the same buttons, and that the press arrived. */
export function formatAnsweredCard(card: TemplateCard): TemplateCard {
  return { ...card, main_title: { ...card.main_title, desc: 'Answer received.' } };
}
