import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { APPROVAL_CARD_TEMPLATE, startFakeDingtalk, type FakeDingtalk } from '../../fakes/platforms/channel-b-dingtalk.js';
import { startFakeWecom, type FakeWecom } from '../../fakes/platforms/channel-c-wecom.js';
import { type ChannelGateway, replies, startChannelGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * What only DingTalk's and WeCom's approval cards do (the shared behaviour is in approval-buttons.test.ts):
 * DingTalk needs the operator's card template (without it: text, and typed answers), and remembers a card's chat
 * only while it runs; WeCom's card is updated for the presser within the event's 5 s, buttons kept.
 */
const APPROVALS = 'skipPermissions: false\napprovalTimeoutSeconds: 30\n';
const has = (f: { outbound: Array<{ kind: string; text: string }> }, text: string) =>
  until(() => replies(f as never).some((o) => o.text.includes(text)), HANG_MS, `"${text}" in the chat`);

let gateways: ChannelGateway[] = [];
let fakes: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const g of gateways) await g.stop();
  for (const f of fakes) await f.close();
  gateways = [];
  fakes = [];
});
async function gateway(channels: Record<string, Record<string, unknown>>): Promise<ChannelGateway> {
  const g = await startChannelGateway(channels, APPROVALS);
  gateways.push(g);
  return g;
}

describe('channel_b: DingTalk approval card', () => {
  it('without approvalCardTemplateId the request is text and a typed /allow answers it; no card is created', async () => {
    const f = await startFakeDingtalk();
    fakes.push(f);
    const { approvalCardTemplateId: _, ...config } = f.channelConfig;
    const g = await gateway({ channel_b: config });
    await f.waitForConnection(HANG_MS);
    await f.deliver({ chatType: 'direct', userId: 'staff-alice', text: 'ASK:echo done > CHAT-SIDE-EFFECT.txt' });
    await has(f, 'Approval needed');
    const prompt = replies(f).find((o) => o.text.includes('Approval needed'));
    expect(prompt?.buttons).toBeUndefined();
    expect([...f.cards.values()].some((c) => c.params.markdown !== undefined)).toBe(false);
    expect(f.subscriptions.map((s) => s.topic)).not.toContain('/v1.0/card/instances/callback');
    await f.deliver({ chatType: 'direct', userId: 'staff-alice', text: '/allow' });
    await has(f, 'ALLOWED');
    expect(fs.readFileSync(path.join(g.dir, 'CHAT-SIDE-EFFECT.txt'), 'utf8')).toBe('done\n');
  });

  it('the card is delivered with stream callbacks; a press on a card sent before a restart is told in a direct chat that nothing waits', async () => {
    const f: FakeDingtalk = await startFakeDingtalk();
    fakes.push(f);
    const first = await gateway({ channel_b: f.channelConfig });
    await f.waitForConnection(HANG_MS);
    await f.deliver({ chatType: 'group', chatId: 'cidGroupOne==', userId: 'staff-alice', text: 'ASK:echo done > X.txt', mentionBot: true });
    await has(f, 'Approval needed');
    const card = f.outbound.find((o) => o.buttons);
    const raw = card?.raw as { cardTemplateId?: string; callbackType?: string; openSpaceId?: string };
    expect(raw).toMatchObject({ cardTemplateId: APPROVAL_CARD_TEMPLATE, callbackType: 'STREAM', openSpaceId: 'dtv1.card//IM_GROUP.cidGroupOne==' });
    expect(f.subscriptions).toContainEqual({ type: 'CALLBACK', topic: '/v1.0/card/instances/callback' });
    await f.deliver({ chatType: 'group', chatId: 'cidGroupOne==', userId: 'staff-alice', text: '/deny', mentionBot: true });
    await has(f, 'DENIED');

    await first.stop();
    gateways = [];
    await gateway({ channel_b: f.channelConfig });
    await until(() => f.connected(), HANG_MS, 'the second gateway connected');
    await f.press({ messageId: card?.messageId as string, label: 'Allow', userId: 'staff-alice' });
    await has(f, 'is waiting in this session');
    const answer = replies(f).find((o) => o.text.includes('is waiting in this session'));
    expect(answer?.chatId).toBe('staff-alice');
    await until(() => f.acks.some((a) => a.messageId.startsWith('press:')), HANG_MS, 'the press acknowledged');
  });
});

describe('channel_c: WeCom approval card', () => {
  it('a press updates the card for the presser only, same task_id and buttons, on the event’s req_id', async () => {
    const f: FakeWecom = await startFakeWecom();
    fakes.push(f);
    await gateway({ channel_c: f.channelConfig });
    await f.waitForConnection(HANG_MS);
    await f.deliver({ chatType: 'group', chatId: 'wrgroupone', userId: 'alice', text: 'ASK:echo done > X.txt', mentionBot: true });
    await has(f, 'Approval needed');
    const card = f.outbound.find((o) => o.buttons);
    expect(card).toMatchObject({ kind: 'send', chatId: 'wrgroupone', format: 'template_card' });
    await f.press({ messageId: card?.messageId as string, label: 'Deny', userId: 'bob' });
    await has(f, 'Only the person who started this turn');
    await until(() => f.cardUpdates.length > 0, HANG_MS, 'the card update');
    const sent = (card?.raw as { body: { template_card: { button_list: unknown } } }).body.template_card;
    expect(f.cardUpdates[0]).toMatchObject({ taskId: card?.messageId, userids: ['bob'], card: { task_id: card?.messageId, button_list: sent.button_list } });
    expect(f.rejections).toEqual([]);
    await f.press({ messageId: card?.messageId as string, label: 'Allow', userId: 'alice' });
    await has(f, 'ALLOWED');
    await until(() => f.cardUpdates.length === 2, HANG_MS, 'the second card update');
    expect(f.cardUpdates[1]?.userids).toEqual(['alice']);
  });
});
