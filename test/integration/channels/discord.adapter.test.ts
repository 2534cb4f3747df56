/**
 * The Discord adapter (channel_f) driven through the ChannelAdapter interface, with the real
 * discord.js against the fake Discord on 127.0.0.1. Assertions are on what the adapter handed to
 * its context and on what the fake recorded.
 */
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSilentLogger } from '../../../src/core/logger.js';
import { discord } from '../../../src/channels/discord/index.js';
import { ChannelError, type ChannelAdapter } from '../../../src/channels/types.js';
import { startFakeDiscord } from '../../fakes/platforms/channel-f-discord.js';
import { createRecordingContext, type RecordingContext } from '../../helpers/recording-context.js';
import { releasedTo, resourceTally } from '../../helpers/resources.js';
import { sleep } from '../../helpers/wait.js';

type Fake = Awaited<ReturnType<typeof startFakeDiscord>>;

const ALICE = '2000000000000000001';
const BOB = '2000000000000000002';
const CAROL = '2000000000000000003';

async function createAdapter(fake: Fake): Promise<ChannelAdapter> {
  const options = discord.options.parse({ ...fake.channelConfig });
  return discord.create(options, { log: createSilentLogger(), dir: '/tmp', name: 'channel_f' });
}

describe('Discord adapter (channel_f) against the fake Discord', () => {
  let fake: Fake;
  let adapter: ChannelAdapter;
  let ctx: RecordingContext;

  beforeAll(async () => {
    fake = await startFakeDiscord();
    adapter = await createAdapter(fake);
    ctx = createRecordingContext();
    await adapter.start(ctx);
  });

  afterAll(async () => {
    await adapter?.stop();
    await fake?.close();
  });

  it('start resolves once connected, with the intents the adapter needs', () => {
    expect(fake.connected()).toBe(true);
    expect(fake.lastIntents()).toBe((1 << 0) | (1 << 9) | (1 << 12) | (1 << 15));
    expect(adapter.limit).toEqual({ max: 2000, unit: 'chars' });
    expect(ctx.statuses).toEqual([]);
  });

  it('a DM arrives as one direct message, mentioned', async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: ALICE, userName: 'alice', text: 'hi bot' });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg).toMatchObject({
      channel: 'channel_f',
      chatId: fake.dmChannelId(ALICE),
      chatType: 'direct',
      senderId: ALICE,
      senderName: 'alice',
      text: 'hi bot',
      mentioned: true,
      replyTarget: { chatId: fake.dmChannelId(ALICE), chatType: 'direct', messageId },
    });
    expect(msg.fromBot).toBeUndefined();
    // A later DM is handed over after any second copy of the first would have been.
    const later = await fake.deliver({ chatType: 'direct', userId: ALICE, userName: 'alice', text: 'marker' });
    await ctx.waitForMessage((m) => m.messageId === later.messageId);
    expect(ctx.messages.filter((m) => m.messageId === messageId)).toHaveLength(1);
  });

  it('a group @mention strips only the bot mention; others, @handles and e-mail addresses stay', async () => {
    const { messageId } = await fake.deliver({
      chatType: 'group',
      userId: BOB,
      userName: 'bob',
      text: 'ask @dave, mail me@example.com',
      mentionBot: true,
      mentionUsers: [{ userId: CAROL, userName: 'carol' }],
    });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg).toMatchObject({ chatId: fake.defaultChannelId, chatType: 'group', mentioned: true, text: 'ask @dave, mail me@example.com @carol' });
    expect(msg.threadId).toBeUndefined();
  });

  it('a group message without a mention is delivered with mentioned false', async () => {
    const { messageId } = await fake.deliver({ chatType: 'group', userId: BOB, text: 'just chatting' });
    expect(await ctx.waitForMessage((m) => m.messageId === messageId)).toMatchObject({ mentioned: false, text: 'just chatting', chatType: 'group' });
  });

  it("a redelivered message reaches the bridge again with the same id (dedup is the bridge's job)", async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: ALICE, text: 'once' });
    await ctx.waitForMessage((m) => m.messageId === messageId);
    await fake.redeliver(messageId);
    await expect.poll(() => ctx.messages.filter((m) => m.messageId === messageId).length).toBe(2);
  });

  it('replies in the DM with Discord formatting (a table becomes a code block)', async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: ALICE, text: 'table please' });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    const sent = await adapter.reply(msg.replyTarget, '## Result\n\n__done__\n\n| a | b |\n|---|---|\n| 1 | 2 |');
    const out = await fake.waitForOutbound((o) => o.kind === 'reply' && o.replyTo === messageId);
    expect(out).toMatchObject({ chatId: fake.dmChannelId(ALICE), recipientId: ALICE, messageId: sent?.messageId });
    expect(out.text).toBe('## Result\n\n**done**\n\n```\na | b\n--|--\n1 | 2\n```');
    expect((out.raw as { allowed_mentions?: unknown }).allowed_mentions).toMatchObject({ parse: ['users'] });
  });

  it('a message in a thread has the parent as chatId, the thread as threadId, and the reply lands in the thread', async () => {
    const threadId = '4000000000000000001';
    const { messageId } = await fake.deliver({ chatType: 'group', userId: BOB, text: 'in thread', threadId, mentionBot: true });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg).toMatchObject({ chatId: fake.defaultChannelId, threadId, text: 'in thread', replyTarget: { chatId: fake.defaultChannelId, threadId } });
    const sent = await adapter.reply(msg.replyTarget, 'thread answer');
    const out = await fake.waitForOutbound((o) => o.messageId === sent?.messageId);
    expect(out).toMatchObject({ kind: 'reply', chatId: fake.defaultChannelId, threadId, replyTo: messageId, text: 'thread answer' });
    await adapter.edit!(sent!, 'thread answer, edited');
    expect(await fake.waitForOutbound((o) => o.kind === 'edit' && o.messageId === sent?.messageId)).toMatchObject({ threadId });
  });

  it('an over-long reply is refused as too_long (Discord has no formatting refusal to retry as plain text)', async () => {
    const target = { chatId: fake.defaultChannelId, chatType: 'group' as const };
    const err = await adapter.reply(target, 'x'.repeat(2001)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelError);
    expect((err as ChannelError).kind).toBe('too_long');
    expect(fake.rejections.at(-1)?.reason).toMatch(/longer than 2000/);
  });

  it("sends to a channel and to a user (opening the DM); the bot's own echo arrives flagged fromBot", async () => {
    const toChannel = await adapter.send!(fake.defaultChannelId, 'to the channel');
    expect(await fake.waitForOutbound((o) => o.messageId === toChannel?.messageId)).toMatchObject({ kind: 'send', chatId: fake.defaultChannelId });
    const echo = await ctx.waitForMessage((m) => m.messageId === toChannel?.messageId);
    expect(echo).toMatchObject({ fromBot: true, senderId: fake.botUserId, mentioned: false });

    const carolDm = await adapter.send!(CAROL, 'to carol');
    expect(await fake.waitForOutbound((o) => o.messageId === carolDm?.messageId)).toMatchObject({ chatId: fake.dmChannelId(CAROL), recipientId: CAROL });
    const forced = await adapter.send!(`user:${BOB}`, 'to bob');
    expect(await fake.waitForOutbound((o) => o.messageId === forced?.messageId)).toMatchObject({ recipientId: BOB });
    await expect(adapter.send!('not-an-id', 'x')).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('edits a sent message and shows typing', async () => {
    const sent = await adapter.send!(fake.defaultChannelId, 'draft');
    await adapter.edit!(sent!, '**final**');
    expect(await fake.waitForOutbound((o) => o.kind === 'edit' && o.messageId === sent?.messageId)).toMatchObject({ text: '**final**' });
    expect(fake.getMessage(sent!.messageId)?.content).toBe('**final**');
    await adapter.typing!({ chatId: fake.defaultChannelId, chatType: 'group' });
    expect(fake.outbound.some((o) => o.kind === 'typing' && o.chatId === fake.defaultChannelId)).toBe(true);
  });

  it('reads history since a date, oldest first, bot messages flagged', async () => {
    const chatId = '3000000000000000001';
    const now = Date.now();
    fake.addHistory({ chatType: 'group', chatId, userId: BOB, text: 'too old', ts: now - 3_600_000 });
    const a = fake.addHistory({ chatType: 'group', chatId, userId: BOB, text: 'first', ts: now - 60_000 });
    const b = fake.addHistory({ chatType: 'group', chatId, userId: CAROL, text: 'second <@1300000000000000001>', ts: now - 30_000 });
    const mine = await adapter.send!(chatId, 'bot line');
    const history = await adapter.readHistory!(chatId, { since: new Date(now - 120_000), limit: 10 });
    expect(history.map((m) => [m.messageId, m.text, m.fromBot ?? false, m.mentioned])).toEqual([
      [a.messageId, 'first', false, false],
      [b.messageId, 'second', false, true],
      [mine?.messageId, 'bot line', true, false],
    ]);
    const newest = await adapter.readHistory!(chatId, { since: new Date(now - 120_000), limit: 2 });
    expect(newest.map((m) => m.messageId)).toEqual([b.messageId, mine?.messageId]);
  });

  it('downloads an image attached to an inbound message', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const { messageId } = await fake.deliver({
      chatType: 'direct',
      userId: ALICE,
      text: 'see',
      images: [{ mimeType: 'image/png', data: png, fileName: 'p.png' }],
    });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg.images).toHaveLength(1);
    expect(msg.images![0]).toMatchObject({ mimeType: 'image/png', fileName: 'p.png' });
    const img = await adapter.downloadImage!(msg.images![0]!);
    expect(img.mimeType).toBe('image/png');
    expect(img.data.equals(png)).toBe(true);
  });

  it('an attached document is a file (with its size), downloaded within the limit; too_long past it', async () => {
    const pdf = Buffer.from('%PDF-1.4 specs');
    const { messageId } = await fake.deliver({
      chatType: 'direct',
      userId: ALICE,
      text: '',
      files: [{ mimeType: 'application/pdf', data: pdf, fileName: 'spec.pdf' }],
    });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg.images).toBeUndefined();
    expect(msg.files).toEqual([{ ref: expect.stringContaining('/attachments/'), fileName: 'spec.pdf', mimeType: 'application/pdf', size: pdf.length }]);
    expect(await adapter.downloadFile!(msg.files![0]!, { maxBytes: 1000 })).toEqual({ data: pdf, mimeType: 'application/pdf' });
    await expect(adapter.downloadFile!(msg.files![0]!, { maxBytes: 3 })).rejects.toMatchObject({ kind: 'too_long' });
  });

  it('sends a file as one attachment (multipart files[0] + payload_json); pictures are attachments Discord shows inline', async () => {
    expect(adapter.maxFileBytes).toBe(10 * 1024 * 1024);
    const channel = fake.defaultChannelId;
    const png = Buffer.from('89504e470d0a1a0a00', 'hex');
    const sent = await adapter.sendFile!({ chatId: channel, chatType: 'group' }, { name: 'chart.png', mimeType: 'image/png', data: png });
    const out = await fake.waitForOutbound((o) => o.messageId === sent?.messageId);
    expect(out).toMatchObject({ kind: 'send', chatId: channel, file: { name: 'chart.png', mimeType: 'image/png', data: png, as: 'image' } });
    const csv = Buffer.from('a,b\n');
    const doc = await adapter.sendFile!({ chatId: channel, chatType: 'group' }, { name: 'data.csv', mimeType: 'text/csv', data: csv });
    expect((await fake.waitForOutbound((o) => o.messageId === doc?.messageId)).file).toEqual({ name: 'data.csv', mimeType: 'text/csv', data: csv, as: 'file' });
    // Over Discord's cap the platform refuses (the bridge checks maxFileBytes first and never sends it).
    await expect(
      adapter.sendFile!(
        { chatId: channel, chatType: 'group' },
        { name: 'big.bin', mimeType: 'application/octet-stream', data: Buffer.alloc(10 * 1024 * 1024 + 1) },
      ),
    ).rejects.toMatchObject({ name: 'ChannelError' });
  });

  it("a file goes out when the process-wide undici dispatcher is Slack's undici 7 (its SDK loaded first)", async () => {
    // undici 7 makes itself every undici copy's global dispatcher when it loads before the others,
    // and that dispatcher refuses discord.js's FormData ("action is not a function").
    const slackUndici = createRequire(createRequire(import.meta.url).resolve('@slack/socket-mode'))('undici') as {
      Agent: new () => { close(): Promise<void> };
      getGlobalDispatcher(): unknown;
    };
    const symbols = [Symbol.for('undici.globalDispatcher.1'), Symbol.for('undici.globalDispatcher.2')];
    const global = globalThis as unknown as Record<symbol, unknown>;
    const before = symbols.map((s) => global[s]);
    const seven = new slackUndici.Agent();
    for (const s of symbols) global[s] = seven;
    try {
      expect(slackUndici.getGlobalDispatcher()).toBe(seven);
      const data = Buffer.from('a,b\n');
      const sent = await adapter.sendFile!({ chatId: fake.defaultChannelId, chatType: 'group' }, { name: 'after-slack.csv', mimeType: 'text/csv', data });
      expect((await fake.waitForOutbound((o) => o.messageId === sent?.messageId)).file).toMatchObject({ name: 'after-slack.csv', data });
    } finally {
      symbols.forEach((s, i) => {
        global[s] = before[i];
      });
      await seven.close();
    }
  });

  it('a server-side drop is reported as disconnected, then connected after the resume', async () => {
    const before = ctx.statuses.length;
    fake.dropConnections();
    await ctx.waitForStatus((s) => s.state === 'connected' && ctx.statuses.indexOf(s) >= before);
    expect(ctx.statuses.slice(before).map((s) => s.state)).toEqual(['disconnected', 'connected']);
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: ALICE, text: 'after resume' });
    await ctx.waitForMessage((m) => m.messageId === messageId);
  });
});

describe('Discord adapter: refusal and shutdown', () => {
  it('a refused token makes start reject with a clear reason, without crashing', async () => {
    const fake = await startFakeDiscord();
    try {
      fake.setRefuseConnections(true);
      const adapter = await createAdapter(fake);
      const err = await adapter.start(createRecordingContext()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChannelError);
      expect(err).toMatchObject({ kind: 'auth', message: expect.stringMatching(/channel_f: .*invalid token/i) });
      await adapter.stop();
    } finally {
      await fake.close();
    }
  });

  it('a close code discord.js gives up on (4004) is reported as failed with the reason', async () => {
    const fake = await startFakeDiscord();
    const adapter = await createAdapter(fake);
    try {
      const ctx = createRecordingContext();
      await adapter.start(ctx);
      fake.setRefuseConnections(true);
      fake.dropConnections();
      const failed = await ctx.waitForStatus((s) => s.state === 'failed');
      expect(failed.reason).toMatch(/4004.*token/);
    } finally {
      await adapter.stop();
      await fake.close();
    }
  });

  it('stop releases every socket and timer', async () => {
    await sleep(50);
    const before = resourceTally();
    const fake = await startFakeDiscord();
    const adapter = await createAdapter(fake);
    await adapter.start(createRecordingContext());
    await adapter.send!(fake.defaultChannelId, 'bye');
    expect(resourceTally().tcp).toBeGreaterThan(before.tcp);
    await adapter.stop();
    await fake.close();
    await releasedTo(before);
  });
});
