import { describe, expect, it } from 'vitest';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { PLATFORMS, replies, usePlatformGateway, type ChannelGateway } from '../../helpers/channel-gateway.js';
import { TEST_TOKEN } from '../../helpers/server.js';

/**
 * The contract to the letter on each channel, through the real gateway, the platform's real SDK
 * and its fake server: buffered delivery sends the whole reply once; every processed message
 * (slash commands too) is an activity event; the activity shows what the person wrote.
 */
describe.each(Object.values(PLATFORMS))('$key: replies and activity', (spec) => {
  const setup = usePlatformGateway(spec);
  const [alice] = spec.users;
  /** After a reply to the last message delivered: every message has been taken in; wait until all are processed. */
  const settle = (g: ChannelGateway) => g.channels.bridge.idle();
  const reply = (f: FakePlatform, text: string) => f.waitForOutbound((o) => o.kind !== 'typing' && o.text.includes(text), 15_000);

  it('buffered (the default): text before and after a tool call arrives as one message holding all of it', async () => {
    const { fake: f, gw: g } = await setup();
    await f.deliver({ chatType: 'direct', userId: alice, text: 'PARAGRAPHS' });
    await reply(f, 'Third paragraph.');
    await settle(g);
    const sent = replies(f);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.text).toMatch(/First paragraph\.[\s\S]*Second paragraph\.[\s\S]*Third paragraph\./);
    expect(sent[0]?.text).not.toContain('search'); // no tool hint in buffered mode
  });

  it('slash commands are activity events under the channel; a group turn shows what the person wrote', async () => {
    const { fake: f, gw: g } = await setup();
    const feed = await fetch(`${g.url}/api/events?token=${TEST_TOKEN}`);
    await f.deliver({ chatType: 'direct', userId: alice, text: '/status' });
    await reply(f, 'tester on engine_b');
    await f.deliver({ chatType: 'direct', userId: alice, text: '/1abc' });
    await reply(f, 'Unknown command "/1abc"');
    await f.deliver({ chatType: 'group', chatId: spec.group(f), userId: alice, text: 'what is new today?', mentionBot: true });
    await reply(f, 'ECHO:');
    await settle(g);
    expect(g.standIn.runs()).toHaveLength(1); // neither command reached the engine

    const activity = (await g.assistant.recentActivity(10)).reverse();
    expect(activity.map((a) => [a.source, a.messagePreview, a.status])).toEqual([
      [spec.key, '/status', 'completed'],
      [spec.key, '/1abc', 'failed'],
      [spec.key, 'what is new today?', 'completed'],
    ]);
    for (const a of activity) expect(a.sender).not.toBe('');
    expect((await g.assistant.metrics()).messagesBySource).toEqual({ [spec.key]: 3 });

    // the same records went out on GET /api/events
    const reader = (feed.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    while ((text.match(/^data: /gm) ?? []).length < 3) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    const previews = [...text.matchAll(/^data: (.*)$/gm)].map((m) => (JSON.parse(m[1] ?? '{}') as { messagePreview: string }).messagePreview);
    expect(previews).toEqual(['/status', '/1abc', 'what is new today?']);
  });
});
