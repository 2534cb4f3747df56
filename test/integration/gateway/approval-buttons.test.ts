import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LarkExtras } from '../../fakes/platforms/channel-a-lark.js';
import type { DingtalkExtras } from '../../fakes/platforms/channel-b-dingtalk.js';
import type { WecomExtras } from '../../fakes/platforms/channel-c-wecom.js';
import type { SlackExtras } from '../../fakes/platforms/channel-d-slack.js';
import type { TelegramExtras } from '../../fakes/platforms/channel-e-telegram.js';
import type { DiscordExtras } from '../../fakes/platforms/channel-f-discord.js';
import type { FakeOutbound, FakePlatform } from '../../fakes/platforms/types.js';
import { PLATFORMS, type PlatformSpec, replies, usePlatformGateway, type ChannelGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * Approval buttons (askApproval) where the platform has them, through the real gateway, the
 * platform's real SDK and its fake server: the request arrives with Allow / Deny / Always allow
 * buttons, and a press answers it as the person who pressed (the same path as a typed /allow:
 * in a group only the person who started the turn may answer).
 */
interface ButtonPlatform {
  spec: PlatformSpec;
  /** Press the button labelled `label` on `prompt` as `userId`; resolves once the platform delivered the press. */
  press(f: FakePlatform, prompt: FakeOutbound, label: string, userId: string): Promise<void>;
  /** How many presses the bot has acknowledged to the platform (the client's spinner stops). */
  acknowledged(f: FakePlatform): number;
}

const BUTTON_PLATFORMS: ButtonPlatform[] = [
  {
    spec: PLATFORMS.channel_a!,
    async press(f, prompt, label, userId) {
      await (f as FakePlatform & LarkExtras).press({ messageId: prompt.messageId!, label, userId });
    },
    // The callback is answered with a toast (else the client shows an error).
    acknowledged: (f) =>
      (f as FakePlatform & LarkExtras).cardAnswers.filter((a) => typeof (a.answer as { toast?: { content?: unknown } }).toast?.content === 'string').length,
  },
  {
    spec: PLATFORMS.channel_b!,
    async press(f, prompt, label, userId) {
      await (f as FakePlatform & DingtalkExtras).press({ messageId: prompt.messageId!, label, userId });
    },
    // The card callback is answered on the stream (else DingTalk pushes it again).
    acknowledged: (f) => f.acks.filter((a) => a.messageId.startsWith('press:')).length,
  },
  {
    spec: PLATFORMS.channel_c!,
    async press(f, prompt, label, userId) {
      await (f as FakePlatform & WecomExtras).press({ messageId: prompt.messageId!, label, userId });
    },
    // WeCom wants the card updated within 5 s of the press; the bot does it for the presser only.
    acknowledged: (f) => (f as FakePlatform & WecomExtras).cardUpdates.filter((u) => u.userids?.length === 1).length,
  },
  {
    spec: PLATFORMS.channel_d!,
    async press(f, prompt, label, userId) {
      await (f as FakePlatform & SlackExtras).press({ chatId: prompt.chatId, messageId: prompt.messageId!, label, userId });
    },
    acknowledged: (f) => f.acks.filter((a) => a.messageId.startsWith('press:')).length,
  },
  {
    spec: PLATFORMS.channel_e!,
    async press(f, prompt, label, userId) {
      const { delivered } = await (f as FakePlatform & TelegramExtras).press({ chatId: prompt.chatId, messageId: prompt.messageId!, label, userId });
      expect(delivered, 'the bot polls for callback queries').toBe(true);
    },
    acknowledged: (f) => (f as FakePlatform & TelegramExtras).callbackAnswers.length,
  },
  {
    spec: PLATFORMS.channel_f!,
    async press(f, prompt, label, userId) {
      await (f as FakePlatform & DiscordExtras).press({ messageId: prompt.messageId!, label, userId });
    },
    acknowledged: (f) => (f as FakePlatform & DiscordExtras).interactionAnswers.filter((a) => a.type === 6).length,
  },
];

describe.each(BUTTON_PLATFORMS.map((p) => ({ ...p, key: p.spec.key })))('$key: approval buttons', (platform) => {
  const { spec } = platform;
  // A short approval timeout only so that a failing test does not hold its gateway for 5 min.
  const setup = usePlatformGateway(spec, 'skipPermissions: false\napprovalTimeoutSeconds: 30\n');
  const [alice, bob] = spec.users;
  const nth = (f: FakePlatform, text: string, n: number) =>
    until(() => replies(f).filter((o) => o.text.includes(text)).length >= n, HANG_MS, `${n}× "${text}" in the chat`);
  const prompts = (f: FakePlatform) => replies(f).filter((o) => o.text.includes('Approval needed'));
  const file = (g: ChannelGateway) => path.join(g.dir, 'CHAT-SIDE-EFFECT.txt');

  it('the request shows Allow, Deny and Always buttons; Deny: the command does not run; Allow: it runs', async () => {
    const { fake: f, gw: g } = await setup();
    await f.deliver({ chatType: 'direct', userId: alice, text: 'ASK:echo done > CHAT-SIDE-EFFECT.txt' });
    await nth(f, 'Approval needed', 1);
    const first = prompts(f)[0]!;
    const id = /\(request (\w+)\)/.exec(first.text)?.[1];
    expect(id).toBeTruthy();
    expect(first.buttons).toEqual([
      { label: 'Allow', value: `/allow ${id}` },
      { label: 'Deny', value: `/deny ${id}` },
      { label: 'Always allow Bash', value: `/allow always ${id}` },
    ]);

    await platform.press(f, first, 'Deny', alice);
    await nth(f, 'DENIED: The person denied this Bash call.', 1);
    expect(replies(f).some((o) => o.text.startsWith('Denied Bash'))).toBe(true);
    expect(fs.existsSync(file(g))).toBe(false);
    await until(() => platform.acknowledged(f) >= 1, HANG_MS, 'the press acknowledged');

    await f.deliver({ chatType: 'direct', userId: alice, text: 'ASK:echo done > CHAT-SIDE-EFFECT.txt' });
    await nth(f, 'Approval needed', 2);
    await platform.press(f, prompts(f)[1]!, 'Allow', alice);
    await nth(f, 'ALLOWED', 1);
    expect(fs.readFileSync(file(g), 'utf8')).toBe('done\n');
    await until(() => platform.acknowledged(f) >= 2, HANG_MS, 'both presses acknowledged');
  });

  it('a press on an answered request is told nothing is waiting, and the turn is not asked again', async () => {
    const { fake: f, gw: g } = await setup();
    await f.deliver({ chatType: 'direct', userId: alice, text: 'ASK:echo done > CHAT-SIDE-EFFECT.txt' });
    await nth(f, 'Approval needed', 1);
    const prompt = prompts(f)[0]!;
    await platform.press(f, prompt, 'Allow', alice);
    await nth(f, 'ALLOWED', 1);
    await platform.press(f, prompt, 'Deny', alice);
    await nth(f, 'is waiting in this session', 1);
    expect(fs.readFileSync(file(g), 'utf8')).toBe('done\n');
  });

  it('in a group a press by another member is refused like their typed /allow; the requester’s press allows', async () => {
    const { fake: f, gw: g } = await setup();
    const chatId = spec.group(f);
    await f.deliver({ chatType: 'group', chatId, userId: alice, text: 'ASK:echo done > CHAT-SIDE-EFFECT.txt', mentionBot: true });
    await nth(f, 'Approval needed', 1);
    const prompt = prompts(f)[0]!;
    expect(prompt.text).toMatch(/Only .+ or an admin can answer/);
    await platform.press(f, prompt, 'Allow', bob);
    await nth(f, 'Only the person who started this turn', 1);
    expect(fs.existsSync(file(g))).toBe(false);
    await platform.press(f, prompt, 'Allow', alice);
    await nth(f, 'ALLOWED', 1);
    expect(fs.existsSync(file(g))).toBe(true);
  });
});
