import { describe, expect, it } from 'vitest';
import type { TelegramExtras } from '../../fakes/platforms/channel-e-telegram.js';
import { PLATFORMS, replies, usePlatformGateway } from '../../helpers/channel-gateway.js';
import { parsePrometheusText, valueOf } from '../../helpers/prometheus-text.js';
import { poll } from '../../helpers/wait.js';

/**
 * Issue 35, item 3: each channel's connection state and its messages in and out on GET /metrics,
 * through the real gateway, the platform's real SDK and its fake server; /api/status reads the same.
 */
const telegram = PLATFORMS.channel_e;
if (!telegram) throw new Error('channel_e is a platform of the channel tests');

describe('channel metrics (channel_e through its fake)', () => {
  const setup = usePlatformGateway(telegram);

  it('a message in and its reply out are counted for the channel, which reads as connected', async () => {
    const { fake, gw } = await setup();
    await fake.deliver({ chatType: 'direct', userId: '1001', text: 'SAY:hello from the channel' });
    await fake.waitForOutbound((o) => o.kind !== 'typing' && o.text.includes('hello from the channel'), 30_000);
    await gw.channels.idle();
    const m = await poll(async () => {
      const now = parsePrometheusText(await (await gw.api('/metrics')).text());
      return valueOf(now, 'service_turns_total', { engine: 'engine_b', source: 'channel_e', outcome: 'completed' }) === 1 ? now : undefined;
    });
    expect(valueOf(m, 'service_channel_connected', { channel: 'channel_e' })).toBe(1);
    expect(valueOf(m, 'service_channel_connected', { channel: 'channel_a' })).toBeUndefined(); // not configured
    expect(valueOf(m, 'service_channel_messages_total', { channel: 'channel_e', direction: 'in' })).toBe(1);
    const sent = replies(fake).length;
    expect(sent).toBeGreaterThan(0);
    expect(valueOf(m, 'service_channel_messages_total', { channel: 'channel_e', direction: 'out' })).toBe(sent);
    const status = (await (await gw.api('/api/status')).json()) as { live: { channels: Record<string, { in: number; out: number }> } };
    expect(status.live.channels).toEqual({ channel_e: { in: 1, out: sent } });
  });

  it('a reply the platform refused is counted once, when the reply outbox delivers it (not when it is kept)', async () => {
    const { fake, gw } = await setup();
    await fake.waitForConnection(30_000);
    const tg = fake as typeof fake & TelegramExtras;
    tg.failNext('sendMessage', { error_code: 429, description: 'Too Many Requests: retry after 1', retry_after: 1 });
    await fake.deliver({ chatType: 'direct', userId: '1001', text: 'SAY:kept, then delivered' });
    await fake.waitForOutbound((o) => o.kind !== 'typing' && o.text.includes('kept, then delivered'), 30_000);
    expect(tg.rejections.filter((r) => r.method === 'sendmessage')).toHaveLength(1); // it was refused first
    await gw.channels.idle();
    // A later message's reply is the marker: the kept one has been counted (or not) by then.
    await fake.deliver({ chatType: 'direct', userId: '1001', text: 'SAY:marker' });
    await fake.waitForOutbound((o) => o.kind !== 'typing' && o.text === 'marker', 30_000);
    await gw.channels.idle();
    const m = await poll(async () => {
      const now = parsePrometheusText(await (await gw.api('/metrics')).text());
      return valueOf(now, 'service_turns_total', { engine: 'engine_b', source: 'channel_e', outcome: 'completed' }) === 2 ? now : undefined;
    });
    const sent = replies(fake).length;
    expect(sent).toBe(2);
    expect(valueOf(m, 'service_channel_messages_total', { channel: 'channel_e', direction: 'in' })).toBe(2);
    expect(valueOf(m, 'service_channel_messages_total', { channel: 'channel_e', direction: 'out' })).toBe(sent);
  });
});

const wecom = PLATFORMS.channel_c;
if (!wecom) throw new Error('channel_c is a platform of the channel tests');

describe('channel metrics (channel_c, a reply updated in place)', () => {
  const setup = usePlatformGateway(wecom, 'streaming:\n  mode: streaming\n');

  it('a streamed reply is one message out, however many times it is updated', async () => {
    const { fake, gw } = await setup();
    await fake.deliver({ chatType: 'direct', userId: 'alice', text: 'PARAGRAPHS' });
    await fake.waitForOutbound((o) => o.kind === 'stream' && o.finished === true, 30_000);
    await gw.channels.idle();
    const m = await poll(async () => {
      const now = parsePrometheusText(await (await gw.api('/metrics')).text());
      return valueOf(now, 'service_turns_total', { engine: 'engine_b', source: 'channel_c', outcome: 'completed' }) === 1 ? now : undefined;
    });
    const frames = fake.outbound.filter((o) => o.kind === 'stream');
    expect(frames.length).toBeGreaterThan(1);
    expect(new Set(frames.map((o) => o.messageId)).size).toBe(1);
    expect(valueOf(m, 'service_channel_messages_total', { channel: 'channel_c', direction: 'in' })).toBe(1);
    expect(valueOf(m, 'service_channel_messages_total', { channel: 'channel_c', direction: 'out' })).toBe(1);
  });
});

describe('channel metrics (channel_e, a growing reply)', () => {
  const setup = usePlatformGateway(telegram, 'streaming:\n  mode: streaming\n');

  it('each message the bot posted is one out, however many times it was shown growing', async () => {
    const { fake, gw } = await setup();
    await fake.deliver({ chatType: 'direct', userId: '1001', text: 'PARAGRAPHS' });
    await fake.waitForOutbound((o) => (o.kind === 'reply' || o.kind === 'send') && o.text.includes('Third paragraph.'), 30_000);
    await gw.channels.idle();
    const m = await poll(async () => {
      const now = parsePrometheusText(await (await gw.api('/metrics')).text());
      return valueOf(now, 'service_turns_total', { engine: 'engine_b', source: 'channel_e', outcome: 'completed' }) === 1 ? now : undefined;
    });
    const posted = fake.outbound.filter((o) => o.kind === 'reply' || o.kind === 'send');
    expect(posted.length).toBeGreaterThan(0);
    expect(valueOf(m, 'service_channel_messages_total', { channel: 'channel_e', direction: 'out' })).toBe(posted.length);
  });
});
