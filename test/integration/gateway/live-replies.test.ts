/**
 * `streaming` mode end to end: a real turn (the stand-in engine writing three paragraphs, each
 * after the test opens its gate) through the gateway, the platform's real SDK and its fake. On
 * Telegram, Slack and Discord the reply is one message shown growing; its last version is the
 * whole reply, without the tool status line it showed meanwhile.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FakeOutbound, FakePlatform } from '../../fakes/platforms/types.js';
import { type ChannelGateway, PLATFORMS, type PlatformSpec, replies, usePlatformGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS } from '../../helpers/wait.js';

const seen = (o: FakeOutbound) => o.text.replace(/[*_`]/g, '');
const FINAL = 'Paragraph one.\n\nParagraph two.\n\nParagraph three.';

const CASES: Array<{ spec: PlatformSpec; chat: 'direct' | 'group' }> = [
  { spec: PLATFORMS.channel_e as PlatformSpec, chat: 'group' },
  { spec: PLATFORMS.channel_e as PlatformSpec, chat: 'direct' },
  { spec: PLATFORMS.channel_d as PlatformSpec, chat: 'direct' },
  { spec: PLATFORMS.channel_f as PlatformSpec, chat: 'direct' },
];

describe.each(CASES)('$spec.key ($chat): streaming replies grow in one message', ({ spec, chat }) => {
  const setup = usePlatformGateway(spec, 'streaming:\n  mode: streaming\n  showToolCalls: true\n');
  const gate = (g: ChannelGateway, n: number) => {
    fs.mkdirSync(path.join(g.dir, 'gates'), { recursive: true });
    fs.writeFileSync(path.join(g.dir, 'gates', String(n)), '');
  };
  const send = (f: FakePlatform, text: string) =>
    f.deliver({
      chatType: chat,
      userId: spec.users[0],
      text,
      ...(chat === 'group' ? { chatId: spec.group(f), mentionBot: true } : {}),
    });

  it('three paragraphs with pauses: one message, shown growing at least twice, its last version the whole reply', async () => {
    const { fake: f, gw: g } = await setup();
    await send(f, 'PAUSED-PARAGRAPHS:gates');
    await f.waitForOutbound((o) => seen(o) === 'Paragraph one.', HANG_MS);
    gate(g, 1);
    await f.waitForOutbound((o) => seen(o) === 'Paragraph one.\n\nParagraph two.', HANG_MS);
    gate(g, 2);
    await f.waitForOutbound((o) => o.kind !== 'stream' && seen(o) === FINAL, HANG_MS);
    await g.channels.bridge.idle();

    const shown = replies(f);
    expect(shown.map(seen)).toEqual(['Paragraph one.', 'Paragraph one.\n\nParagraph two.', FINAL]);
    const kinds = shown.map((o) => o.kind);
    // Telegram's private chats grow a draft and send the message once; elsewhere one message is edited.
    if (spec.key === 'channel_e' && chat === 'direct') expect(kinds).toEqual(['stream', 'stream', 'reply']);
    else {
      expect(kinds.slice(1)).toEqual(['edit', 'edit']);
      expect(new Set(shown.map((o) => o.messageId)).size).toBe(1);
    }
  });

  it('a tool call shows as a status line while it runs; the final version has none', async () => {
    const { fake: f, gw: g } = await setup();
    await send(f, 'TOOL:Bash\nSAY:All done.');
    const status = await f.waitForOutbound((o) => seen(o).includes('running: Bash echo hi'), HANG_MS);
    expect(seen(status)).toBe('running: Bash echo hi');
    await f.waitForOutbound((o) => o.kind !== 'stream' && seen(o) === 'All done.', HANG_MS);
    await g.channels.bridge.idle();
    expect(replies(f).at(-1)?.text).toBe('All done.');
  });
});
