import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { type ChannelGateway, PLATFORMS, replies, usePlatformGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * Issue 30: a reply goes out through the adapter running when the reply is ready, not the one
 * that took the message in. Here the channel's adapter is restarted while the turn runs (the
 * platform refuses the bot token, so the adapter fails, and the hub builds a new one once the
 * token works again): the old adapter is stopped, and a reply sent through it would be lost.
 */
const spec = PLATFORMS.channel_e;
if (!spec) throw new Error('no channel_e platform spec');
const setup = usePlatformGateway(spec);
const [alice] = spec.users;
const statusOf = (g: ChannelGateway) => g.channels.hub.statuses().find((s) => s.type === 'channel_e')?.status;

/** The channel's adapter is replaced: the running one fails, and a new one connects. */
async function restartAdapter(f: FakePlatform, g: ChannelGateway): Promise<void> {
  f.setRefuseConnections(true);
  await until(() => statusOf(g) === 'failed', HANG_MS, 'the adapter to fail');
  f.setRefuseConnections(false);
  await until(() => statusOf(g) === 'connected', HANG_MS, 'a new adapter to connect');
}

describe('a channel adapter restarted while a turn runs', () => {
  for (const mode of ['buffered', 'streaming'] as const) {
    it(`${mode}: the reply goes out through the new adapter`, async () => {
      const { fake, gw: g } = await setup(`streaming:\n  mode: ${mode}\n`);

      await fake.deliver({ chatType: 'direct', userId: alice ?? '', text: 'GATE:restart-gate SAY:the answer after the restart' });
      await until(() => g.standIn.runs().length === 1, HANG_MS, 'the turn to start');
      await restartAdapter(fake, g);
      fs.writeFileSync(path.join(g.dir, 'restart-gate'), '');
      // The message has been processed (its reply sent, or lost): then the reply is looked for.
      await g.channels.idle();
      expect(replies(fake).map((o) => o.text)).toEqual([expect.stringContaining('the answer after the restart')]);
      expect(await g.store.pendingMessages()).toEqual([]);
    });
  }
});
