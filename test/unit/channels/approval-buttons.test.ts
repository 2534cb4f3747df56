import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatApprovalPrompt } from '../../../src/channels/approval-prompt.js';
import { formatDiscordApprovalComponents, normaliseDiscordButtonPress } from '../../../src/channels/discord/approval.js';
import { formatLarkApprovalCard, normaliseLarkCardAction } from '../../../src/channels/lark/approval.js';
import { formatSlackApprovalBlocks, normaliseSlackBlockAction } from '../../../src/channels/slack/approval.js';
import { formatTelegramApprovalKeyboard, normaliseTelegramCallback } from '../../../src/channels/telegram/approval.js';

/** Approval buttons stay within each platform's limits whatever the tool is called (pure helpers). */
describe('approval buttons', () => {
  const prompts = fc
    .record({ id: fc.stringMatching(/^[a-z0-9]{5}$/), tool: fc.string({ minLength: 1, maxLength: 200 }), summary: fc.string({ maxLength: 80 }) })
    .map((r) => formatApprovalPrompt({ ...r, detail: r.summary, cut: false }, { timeoutSeconds: 300 }));

  it('Telegram: every button carries its command within 64 bytes of callback_data', () => {
    fc.assert(
      fc.property(prompts, (prompt) => {
        const buttons = formatTelegramApprovalKeyboard(prompt).inline_keyboard.flat() as Array<{ text: string; callback_data: string }>;
        expect(buttons.map((b) => b.callback_data)).toEqual(prompt.actions.map((a) => a.command));
        for (const b of buttons) expect(Buffer.byteLength(b.callback_data)).toBeLessThanOrEqual(64);
      }),
    );
  });

  it('Slack: labels within 75 characters, values are the commands, action ids unique', () => {
    fc.assert(
      fc.property(prompts, (prompt) => {
        const actions = formatSlackApprovalBlocks(prompt, prompt.text)[1] as { elements: Array<{ action_id: string; value: string; text: { text: string } }> };
        expect(actions.elements.map((e) => e.value)).toEqual(prompt.actions.map((a) => a.command));
        expect(new Set(actions.elements.map((e) => e.action_id)).size).toBe(actions.elements.length);
        for (const e of actions.elements) expect(e.text.text.length).toBeLessThanOrEqual(75);
      }),
    );
  });

  it('Discord: labels within 80 characters, custom_id the command within 100', () => {
    fc.assert(
      fc.property(prompts, (prompt) => {
        const row = formatDiscordApprovalComponents(prompt)[0] as { components: Array<{ label: string; custom_id: string }> };
        expect(row.components.map((c) => c.custom_id)).toEqual(prompt.actions.map((a) => a.command));
        for (const c of row.components) expect(c.label.length).toBeLessThanOrEqual(80);
      }),
    );
  });

  it('Lark: one callback button per action, each carrying its command, after the prompt as markdown', () => {
    fc.assert(
      fc.property(prompts, (prompt) => {
        const card = JSON.parse(formatLarkApprovalCard(prompt, prompt.text)) as {
          elements: [{ tag: string; content: string }, { tag: string; actions: Array<{ tag: string; text: { content: string }; value: { command: string } }> }];
        };
        expect(card.elements[0]).toEqual({ tag: 'markdown', content: prompt.text });
        expect(card.elements[1].tag).toBe('action');
        expect(card.elements[1].actions.map((a) => a.value.command)).toEqual(prompt.actions.map((a) => a.command));
        expect(card.elements[1].actions.map((a) => a.text.content)).toEqual(prompt.actions.map((a) => a.label));
      }),
    );
  });

  it('Lark: a card press is the command from the presser in the prompt’s chat and thread; other callbacks are not', () => {
    const press = {
      event_id: 'ev1',
      token: 'c-1',
      operator: { open_id: 'ou_alice', user_id: 'alice' },
      action: { tag: 'button', value: { command: '/deny k7m2x' } },
      context: { open_message_id: 'om_prompt', open_chat_id: 'oc_group' },
    };
    const lark = normaliseLarkCardAction('channel_a', press, { chatType: 'group', threadId: 'omt_1' });
    expect(lark).toMatchObject({ chatId: 'oc_group', chatType: 'group', threadId: 'omt_1', senderId: 'ou_alice', text: '/deny k7m2x', mentioned: true });
    expect(lark?.messageId).toBe('card:ev1');
    expect(lark?.replyTarget).toEqual({ chatId: 'oc_group', chatType: 'group', messageId: 'om_prompt', threadId: 'omt_1' });
    expect(normaliseLarkCardAction('channel_a', { ...press, action: { tag: 'button', value: { other: 1 } } }, { chatType: 'group' })).toBeUndefined();
    expect(normaliseLarkCardAction('channel_a', { ...press, operator: {} }, { chatType: 'group' })).toBeUndefined();
  });

  it('a press becomes the command as a message from the presser, answering in the prompt’s thread', () => {
    const tg = normaliseTelegramCallback('channel_e', {
      id: '42',
      from: { id: 1001, is_bot: false, first_name: 'Ada' },
      chat_instance: '1',
      data: '/deny k7m2x',
      message: { message_id: 7, date: 1, chat: { id: -100123, type: 'supergroup', title: 'G' } },
    });
    expect(tg).toMatchObject({ chatId: '-100123', chatType: 'group', senderId: '1001', text: '/deny k7m2x', mentioned: true, messageId: 'callback:42' });
    expect(tg?.replyTarget.messageId).toBe('-100123:7');
    expect(
      normaliseTelegramCallback('channel_e', { id: '43', from: { id: 1, is_bot: false, first_name: 'A' }, chat_instance: '1', data: '/allow x' }),
    ).toBeUndefined();

    const slack = normaliseSlackBlockAction('channel_d', {
      type: 'block_actions',
      user: { id: 'U0ALICE', name: 'alice' },
      container: { channel_id: 'C0GROUP', message_ts: '2.000200', thread_ts: '1.000100' },
      actions: [{ type: 'button', value: '/allow always k7m2x', action_ts: '3.1' }],
    });
    expect(slack).toMatchObject({ chatId: 'C0GROUP', chatType: 'group', threadId: '1.000100', senderId: 'U0ALICE', text: '/allow always k7m2x' });
    expect(normaliseSlackBlockAction('channel_d', { type: 'view_submission', user: { id: 'U1' } })).toBeUndefined();

    const discord = normaliseDiscordButtonPress('channel_f', {
      id: '9',
      customId: '/allow k7m2x',
      channelId: '300',
      parentId: '200',
      inGuild: true,
      user: { id: '100', username: 'ada' },
      messageId: '55',
    });
    expect(discord).toMatchObject({ chatId: '200', threadId: '300', chatType: 'group', text: '/allow k7m2x', messageId: 'interaction:9' });
  });
});
