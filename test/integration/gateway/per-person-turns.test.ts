import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { type ChannelGateway, replies, startChannelGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * maxTurnsPerPerson (issue 29): one approved member whose turns wait on approvals nobody answers
 * cannot hold every one of `maxConcurrent` slots, through the real gateway and a fake Telegram.
 * Alice starts turns in her direct chat and two groups, each asking for a tool she never answers;
 * with two slots and one turn per person, Bob is still answered, and Alice's third turn waits
 * (it is not refused: channel messages are durable) until one of hers ends.
 */
describe('maxTurnsPerPerson: one member cannot take every slot', () => {
  let tg: FakePlatform | undefined;
  let gw: ChannelGateway | undefined;
  afterEach(async () => {
    await gw?.stop();
    await tg?.close();
  });

  it("Alice's turns waiting on approvals hold one slot; Bob is answered meanwhile; an admin is not limited", async () => {
    tg = await startFakeTelegram();
    gw = await startChannelGateway(
      { channel_e: tg.channelConfig },
      [
        'skipPermissions: false',
        'approvalTimeoutSeconds: 45',
        'maxConcurrent: 2',
        'maxTurnsPerPerson: 1',
        'access: { dm: open, groups: open, admins: ["channel_e:1003"] }',
        '',
      ].join('\n'),
    );
    await tg.waitForConnection(HANG_MS);
    const f = tg;
    const count = (text: string) => replies(f).filter((o) => o.text.includes(text)).length;
    await f.deliver({ chatType: 'direct', userId: '1001', text: 'ASK:echo one' });
    await until(() => count('Approval needed') >= 1, HANG_MS, "Alice's first prompt");
    await f.deliver({ chatType: 'group', chatId: '-100200', userId: '1001', text: 'ASK:echo two', mentionBot: true });
    // Bob's turn gets the second slot (without the per-person limit Alice's second turn held it).
    await f.deliver({ chatType: 'direct', userId: '1002', text: 'SAY:hello bob' });
    await until(() => count('hello bob') >= 1, HANG_MS, "Bob's reply");
    expect(count('Approval needed')).toBe(1);
    // Alice answers her first request: her second turn is admitted and asks in turn.
    await f.deliver({ chatType: 'direct', userId: '1001', text: '/deny' });
    await until(() => count('Approval needed') >= 2, HANG_MS, "Alice's second prompt");
    await f.deliver({ chatType: 'group', chatId: '-100200', userId: '1001', text: '/deny', mentionBot: true });
    await until(() => count('DENIED') >= 2, HANG_MS, 'both of her turns ended');
    // An admin's turns are not counted per person: two at once ask two questions.
    await f.deliver({ chatType: 'direct', userId: '1003', text: 'ASK:echo three' });
    await f.deliver({ chatType: 'group', chatId: '-100200', userId: '1003', text: 'ASK:echo four', mentionBot: true });
    await until(() => count('Approval needed') >= 4, HANG_MS, "the admin's two prompts");
    await f.deliver({ chatType: 'direct', userId: '1003', text: '/deny' });
    await f.deliver({ chatType: 'group', chatId: '-100200', userId: '1003', text: '/deny', mentionBot: true });
    await until(() => count('DENIED') >= 4, HANG_MS, "the admin's turns ended");
  });
});
