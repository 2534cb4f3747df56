import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { repoRoot } from '../../helpers/cli.js';
import { PLATFORMS, startChannelGateway, type ChannelGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS, until } from '../../helpers/wait.js';

let gw: ChannelGateway | undefined;
let fakes: FakePlatform[] = [];
afterEach(async () => {
  await gw?.stop();
  for (const f of fakes) await f.close();
  gw = undefined;
  fakes = [];
});

const statusOf = async (g: ChannelGateway) =>
  Object.fromEntries(
    ((await (await g.api('/api/status')).json()) as { channels: Array<{ type: string; status: string }> }).channels.map((c) => [c.type, c.status]),
  );

describe.each([
  ['part 1', 'channel_d', ['channel_e', 'channel_f']],
  ['part 2', 'channel_a', ['channel_b', 'channel_c']],
] as const)('failure isolation (%s)', (_part, refusing, working) => {
  it(`${refusing} refusing to connect affects neither the others nor the HTTP API; it reconnects with backoff`, async () => {
    const bad = await PLATFORMS[refusing]!.start();
    bad.setRefuseConnections(true);
    const good = await Promise.all(working.map((k) => PLATFORMS[k]!.start()));
    fakes = [bad, ...good];
    gw = await startChannelGateway({ [refusing]: bad.channelConfig, ...Object.fromEntries(working.map((k, i) => [k, good[i]!.channelConfig])) });
    expect((await fetch(`${gw.url}/health`)).status).toBe(200);
    const status = await statusOf(gw);
    expect(status[refusing]).toBe('failed');
    for (const k of working) expect(status[k]).toBe('connected');
    for (const [i, k] of working.entries()) {
      const f = good[i]!;
      await f.waitForConnection(10_000);
      await f.deliver({ chatType: 'direct', userId: PLATFORMS[k]!.users[0], text: `still working on ${k}` });
      await f.waitForOutbound((o) => o.text.includes(`ECHO: still working on ${k}`), HANG_MS);
    }
    bad.setRefuseConnections(false);
    const g = gw;
    await until(async () => (await statusOf(g))[refusing] === 'connected', HANG_MS, 'the refusing platform to connect', 100);
  });
});

describe('channels that cannot start', () => {
  it('a channel disabled by a missing variable is failed with the reason; the others run', async () => {
    const tg = await PLATFORMS.channel_e!.start();
    fakes = [tg];
    gw = await startChannelGateway({ channel_e: tg.channelConfig, channel_f: { botToken: '${DISCORD_TOKEN_NOT_SET}' } });
    const res = (await (await gw.api('/api/status')).json()) as { channels: Array<{ type: string; status: string; reason?: string }> };
    expect(res.channels.find((c) => c.type === 'channel_f')).toMatchObject({ status: 'failed', reason: expect.stringContaining('DISCORD_TOKEN_NOT_SET') });
    expect(res.channels.find((c) => c.type === 'channel_e')?.status).toBe('connected');
  });
});

describe('custom adapters', () => {
  it('a local _adapter file is loaded and used end to end: messages, replies, /api/channels, /api/send', async () => {
    // The adapter file lives in the assistant directory, as a user would keep it.
    const source = fs.readFileSync(path.join(repoRoot, 'examples', 'adapters', 'folder-adapter.mjs'), 'utf8');
    gw = await startChannelGateway({ folder: { _adapter: './folder-adapter.mjs', inbox: 'chat/in', outbox: 'chat/out', pollMs: 50 } }, '', {
      'folder-adapter.mjs': source,
    });
    expect((await statusOf(gw)).folder).toBe('connected');
    fs.writeFileSync(path.join(gw.dir, 'chat/in/001.json'), JSON.stringify({ id: 'm1', chatId: 'room', userId: 'ada', text: 'hello folder' }));
    const out = path.join(gw.dir, 'chat/out/room.jsonl');
    await until(() => fs.existsSync(out) && fs.readFileSync(out, 'utf8').includes('ECHO: hello folder'), HANG_MS, 'the folder adapter reply', 100);
    expect(await (await gw.api('/api/channels')).json()).toEqual({ channels: [{ name: 'folder', canSend: true }] });
    expect(await (await gw.api('/api/send', { json: { channel: 'folder', chatId: 'room', text: 'pushed' } })).json()).toEqual({ ok: true });
    expect(fs.readFileSync(out, 'utf8')).toContain('"text":"pushed"');
  });

  it('a missing or malformed custom adapter is failed with a clear reason', async () => {
    gw = await startChannelGateway({ nowhere: { _adapter: './does-not-exist.mjs' } });
    const res = (await (await gw.api('/api/status')).json()) as { channels: Array<{ type: string; status: string; reason?: string }> };
    expect(res.channels.find((c) => c.type === 'nowhere')).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('cannot load custom adapter ./does-not-exist.mjs'),
    });
  });
});
