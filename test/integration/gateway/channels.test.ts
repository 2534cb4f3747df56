import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { measure } from '../../../src/channels/split.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { PLATFORMS, replies, usePlatformGateway, type ChannelGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS } from '../../helpers/wait.js';

type Run = { prompt: string };

describe.each(Object.values(PLATFORMS))('$key through its real SDK and a fake platform', (spec) => {
  const setup = usePlatformGateway(spec);
  const [alice, bob, carol] = spec.users;
  const prompts = (g: ChannelGateway) => (g.standIn.runs() as Run[]).map((r) => r.prompt);
  const reply = (f: FakePlatform, text: string) => f.waitForOutbound((o) => o.kind !== 'typing' && o.text.includes(text), HANG_MS);

  it('connects; a direct message gets a reply; /api/status and /api/channels show it', async () => {
    const { fake: f, gw: g } = await setup();
    const status = (await (await g.api('/api/status')).json()) as { channels: Array<{ type: string; status: string }> };
    expect(status.channels.find((c) => c.type === spec.key)?.status).toBe('connected');
    expect(status.channels.filter((c) => c.status === 'not_configured')).toHaveLength(5);
    expect(((await (await g.api('/api/channels')).json()) as { channels: unknown[] }).channels).toEqual([{ name: spec.key, canSend: true }]);
    await f.deliver({ chatType: 'direct', userId: alice, text: 'hello from a DM' });
    await reply(f, 'ECHO: hello from a DM');
    expect((await g.store.listSessions()).map((s) => s.key)).toEqual([`${spec.key}:dm:${alice}`]);
  });

  it('a group mention is answered, with only the bot mention stripped from the prompt', async () => {
    const { fake: f, gw: g } = await setup();
    await f.deliver({ chatType: 'group', chatId: spec.group(f), userId: alice, text: 'what is new? write to a@b.com', mentionBot: true });
    await reply(f, 'ECHO:');
    const prompt = prompts(g)[0] ?? '';
    expect(prompt).toMatch(/in the group:\nwhat is new\? write to a@b\.com$/);
    expect(prompt).not.toContain(f.botName);
  });

  it.skipIf(!spec.deliversUnmentioned)('mention-only: a group message without a mention gets nothing', async () => {
    const { fake: f, gw: g } = await setup();
    await f.deliver({ chatType: 'group', chatId: spec.group(f), userId: alice, text: 'just chatting' });
    await g.processed(1);
    expect(g.standIn.runs()).toEqual([]);
    expect(replies(f)).toEqual([]);
  });

  it.skipIf(!spec.deliversUnmentioned)('always: every group message is answered; smart: [PASS] sends nothing', async () => {
    const { fake: f, gw: g } = await setup('groupChat:\n  groupPolicy: always\n');
    await f.deliver({ chatType: 'group', chatId: spec.group(f), userId: alice, text: 'no mention here' });
    await reply(f, 'ECHO:');
    g.config.edit((doc) => doc.setIn(['groupChat', 'groupPolicy'], 'smart'));
    const before = replies(f).length;
    await f.deliver({ chatType: 'group', chatId: spec.group(f), userId: bob, text: 'SAY:[PASS]' });
    await g.processed(2);
    expect(g.standIn.runs()).toHaveLength(2);
    expect(prompts(g)[1]).toContain('reply with exactly [PASS]');
    expect(replies(f)).toHaveLength(before);
  });

  it('smart mode with [PASS] on a mention sends nothing either', async () => {
    const { fake: f, gw: g } = await setup('groupChat:\n  groupPolicy: smart\n');
    await f.deliver({ chatType: 'group', chatId: spec.group(f), userId: alice, text: 'SAY:[PASS]', mentionBot: true });
    await g.processed(1);
    expect(replies(f).map((o) => o.text)).toEqual([]);
    expect(g.standIn.runs()).toHaveLength(1);
  });

  it('historyLimit: the last messages of the group are in the prompt, older ones are not', async () => {
    const { fake: f, gw } = await setup('groupChat:\n  historyLimit: 2\n');
    const g = spec.group(f);
    for (const [i, text] of ['SAY:one', 'SAY:two', 'SAY:three'].entries()) {
      await f.deliver({ chatType: 'group', chatId: g, userId: bob, text, mentionBot: true });
      await reply(f, text.slice(4));
      await gw.processed(i + 1); // the reply is in the group's history too
    }
    await f.deliver({ chatType: 'group', chatId: g, userId: carol, text: 'ECHO-PROMPT now', mentionBot: true });
    await reply(f, 'ECHO-PROMPT now');
    const prompt = prompts(gw).at(-1) ?? '';
    expect(prompt).toContain('Recent messages in this group chat');
    expect(prompt).toContain('SAY:three');
    expect(prompt).toMatch(/\(bot\): three/);
    expect(prompt).not.toContain('SAY:two');
    expect(prompt).not.toContain('SAY:one');
  });

  it.skipIf(!spec.botSenders)('maxTurns: after that many bot replies in a row the bot waits for a human', async () => {
    const { fake: f, gw: g } = await setup('groupChat:\n  groupPolicy: always\n  maxTurns: 2\n');
    const g0 = spec.group(f);
    for (const n of [1, 2, 3]) {
      await f.deliver({ chatType: 'group', chatId: g0, userId: bob, text: `bot says ${n}`, fromBot: true });
      await g.processed(n);
    }
    expect(g.standIn.runs()).toHaveLength(2);
    await f.deliver({ chatType: 'group', chatId: g0, userId: alice, text: 'a human speaks' });
    await g.processed(4);
    expect(g.standIn.runs()).toHaveLength(3);
    expect((g.standIn.runs().at(-1) as Run).prompt).toMatch(/a human speaks$/);
    expect(replies(f)).toHaveLength(3);
  });

  it('a reply over the platform limit arrives split, each part within the limit in its own unit (CJK where bytes count)', async () => {
    const { fake: f, gw: g } = await setup();
    // Byte-limited platforms get Chinese text (3 bytes a character): a character count would overflow them.
    const directive = f.limit.unit === 'bytes' ? `LONGCJK:${Math.ceil(spec.longChars / 3)}` : `LONG:${spec.longChars}`;
    await f.deliver({ chatType: 'direct', userId: alice, text: directive });
    await reply(f, 'END-OF-LONG-REPLY');
    await g.processed(1);
    const parts = replies(f).filter((o) => o.kind !== 'stream' || o.finished !== false);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const p of parts) expect(measure(p.text, f.limit.unit)).toBeLessThanOrEqual(f.limit.max);
    const all = parts.map((p) => p.text).join('\n');
    expect(all).toContain('Paragraph 0:');
    expect(all).toContain('END-OF-LONG-REPLY');
    expect(f.rejections).toEqual([]);
  });

  it('streaming: the reply grows in place through the flush points; its last version is the whole reply, without the tool status line', async () => {
    const { fake: f, gw: g } = await setup('streaming:\n  mode: streaming\n  showToolCalls: true\n');
    await f.deliver({ chatType: 'direct', userId: alice, text: 'PARAGRAPHS' });
    await reply(f, 'Third paragraph.');
    await g.processed(1);
    const texts = replies(f).map((o) => o.text.replace(/[*_`]/g, ''));
    // Every platform updates one message in place (Lark's card, WeCom's bubble, DingTalk's AI card,
    // Telegram's draft or edits, Slack's and Discord's edits): the first flush is seen on its own.
    expect(texts.findIndex((t) => t.includes('First paragraph.') && !t.includes('Second paragraph.'))).toBeGreaterThanOrEqual(0);
    expect(texts.at(-1)).toMatch(/^First paragraph\.\s+Second paragraph\.\s+Third paragraph\.$/);
    // (Lark's card opens with a placeholder.)
    for (const t of texts.slice(0, -1).filter((x) => x !== '…')) expect(t.replace(/\s*running: search.*$/s, '')).toMatch(/^First paragraph\./);
  });

  it('proactive send through POST /api/send; a redelivered message is processed once', async () => {
    const { fake: f, gw: g } = await setup();
    const res = await g.api('/api/send', { json: { channel: spec.key, chatId: alice, text: 'a *proactive* note' } });
    expect(await res.json()).toEqual({ ok: true });
    await f.waitForOutbound((o) => o.kind === 'send' && o.text.includes('proactive'), HANG_MS);
    const { messageId } = await f.deliver({ chatType: 'direct', userId: alice, text: 'only once please' });
    await reply(f, 'ECHO: only once please');
    await f.redeliver(messageId);
    await g.processed(2);
    expect(g.standIn.runs()).toHaveLength(1);
    expect(replies(f).filter((o) => o.text.includes('only once please'))).toHaveLength(1);
  });

  it.skipIf(!spec.images)('an incoming image is downloaded into the turn and removed afterwards', async () => {
    const { fake: f, gw: g } = await setup();
    const png = Buffer.from(
      '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a0e80000000049454e44ae426082',
      'hex',
    );
    await f.deliver({ chatType: 'direct', userId: alice, text: 'what is this', images: [{ mimeType: 'image/png', data: png, fileName: 'dot.png' }] });
    await reply(f, 'ECHO: what is this');
    const [run] = g.standIn.runs() as Array<{ images: Array<{ exists: boolean; bytes: number }> }>;
    expect(run?.images).toEqual([{ path: expect.any(String), exists: true, bytes: png.length }]);
    expect(fs.readdirSync(path.join(g.dir, '.service', 'images'))).toEqual([]);
  });

  it('config-changing slash commands are refused from the channel; read-only ones work', async () => {
    const { fake: f, gw: g } = await setup();
    await f.deliver({ chatType: 'direct', userId: alice, text: '/engine engine_d' });
    await reply(f, 'can only be run from the terminal or the HTTP API');
    expect(g.config.current().config.engine).toBe('engine_b');
    await f.deliver({ chatType: 'direct', userId: alice, text: '/status' });
    await reply(f, 'tester on engine_b');
  });
});
