import { afterEach, describe, expect, it } from 'vitest';
import { startFakeLark } from '../../fakes/platforms/channel-a-lark.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { type ChannelGateway, startChannelGateway } from '../../helpers/channel-gateway.js';

/**
 * channel_a `domain` given as a URL, as people paste it (trailing slash), through service.yaml,
 * the real gateway and the real SDK against the fake Lark. The named domains (`feishu`, `lark`)
 * resolve to the platforms' own hosts, which no test may reach: their mapping is checked in
 * test/unit/channels/lark-domain.test.ts.
 */
describe('channel_a domain against the fake Lark', () => {
  let fake: FakePlatform | undefined;
  let gw: ChannelGateway | undefined;
  afterEach(async () => {
    await gw?.stop();
    await fake?.close();
  });

  it('a base URL with a trailing slash connects and answers', async () => {
    fake = await startFakeLark();
    const domain = `${String(fake.channelConfig.domain)}/`;
    gw = await startChannelGateway({ channel_a: { ...fake.channelConfig, domain } });
    await fake.waitForConnection(10_000);
    const status = (await (await gw.api('/api/status')).json()) as { channels: Array<{ type: string; status: string }> };
    expect(status.channels.find((c) => c.type === 'channel_a')?.status).toBe('connected');
    await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'hello over the configured domain' });
    await fake.waitForOutbound((o) => o.text.includes('ECHO: hello over the configured domain'), 15_000);
  });
});
