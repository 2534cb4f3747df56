/**
 * The Feishu/Lark adapter (channel_a) driven through the ChannelAdapter interface, with the real
 * @larksuiteoapi/node-sdk against the fake Lark on 127.0.0.1. Assertions are on what the adapter
 * handed to its context and on what the fake recorded (messages, cards, acks, requests).
 */
// First, before the fake: the SDK sets protobufjs' shared `util.Long` to undefined when it loads,
// and the fake's frame type (channel-a-lark-proto.ts) must be built after that, or its decoder
// calls Long.fromNumber on undefined. The adapter itself loads the SDK lazily, too late for that.
import '@larksuiteoapi/node-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSilentLogger } from '../../../src/core/logger.js';
import { lark } from '../../../src/channels/lark/index.js';
import { ChannelError, type ChannelAdapter } from '../../../src/channels/types.js';
import { startFakeLark, type LarkExtras } from '../../fakes/platforms/channel-a-lark.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { createRecordingContext, type RecordingContext } from '../../helpers/recording-context.js';
import { releasedTo, resourceTally } from '../../helpers/resources.js';
import { HANG_MS, sleep, until } from '../../helpers/wait.js';

type Fake = FakePlatform & LarkExtras;

async function createAdapter(fake: Fake): Promise<ChannelAdapter> {
  const options = lark.options.parse({ ...fake.channelConfig });
  return lark.create(options, { log: createSilentLogger(), dir: '/tmp', name: 'channel_a' });
}

describe('Lark adapter (channel_a) against the fake Lark', () => {
  let fake: Fake;
  let adapter: ChannelAdapter;
  let ctx: RecordingContext;

  beforeAll(async () => {
    fake = await startFakeLark();
    adapter = await createAdapter(fake);
    ctx = createRecordingContext();
    await adapter.start(ctx);
    // The fake counts a connection from the client's first ping, which follows the handshake by a tick.
    await fake.waitForConnection();
  });

  afterAll(async () => {
    await adapter?.stop();
    await fake?.close();
  });

  it('start resolves once the long connection is up, having read the bot identity', () => {
    expect(fake.connected()).toBe(true);
    expect(fake.connectionCount()).toBe(1);
    expect(fake.requests.some((r) => r.path === '/open-apis/bot/v3/info' && r.auth?.startsWith('Bearer t-'))).toBe(true);
    expect(adapter.limit).toEqual({ max: 14_900, unit: 'bytes' });
    expect(ctx.statuses).toEqual([]);
  });

  it('a DM arrives as one direct message, mentioned, and is acknowledged', async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', userName: 'Alice', text: 'hi there' });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg).toMatchObject({
      channel: 'channel_a',
      chatId: fake.dmChatId('ou_alice'),
      chatType: 'direct',
      senderId: 'ou_alice',
      text: 'hi there',
      mentioned: true,
      replyTarget: { chatId: fake.dmChatId('ou_alice'), chatType: 'direct', messageId },
    });
    await fake.waitForAck(messageId);
    expect(fake.ackLog.find((a) => a.messageId === messageId)?.code).toBe(200);
    expect(ctx.messages.filter((m) => m.messageId === messageId)).toHaveLength(1);
  });

  it('a group @mention removes only the bot placeholder; other people become @Name, handles and e-mails stay', async () => {
    const { messageId } = await fake.deliver({
      chatType: 'group',
      chatId: 'oc_group1',
      userId: 'ou_bob',
      text: 'ask @dave, mail me@example.com',
      mentionBot: true,
      mentionUsers: [{ userId: 'ou_carol', userName: 'Carol' }],
    });
    expect(await ctx.waitForMessage((m) => m.messageId === messageId)).toMatchObject({
      chatId: 'oc_group1',
      chatType: 'group',
      mentioned: true,
      text: 'ask @dave, mail me@example.com @Carol',
    });
  });

  it('a group message without a mention has mentioned false', async () => {
    const { messageId } = await fake.deliver({ chatType: 'group', chatId: 'oc_group1', userId: 'ou_bob', text: 'just chatting' });
    expect(await ctx.waitForMessage((m) => m.messageId === messageId)).toMatchObject({ mentioned: false, text: 'just chatting' });
  });

  it('a redelivered event reaches the bridge again with the same message id', async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'again' });
    await fake.waitForAck(messageId);
    await fake.redeliver(messageId);
    await expect.poll(() => ctx.messages.filter((m) => m.messageId === messageId).length).toBe(2);
  });

  it('acknowledges right after onMessage resolves, never before; a failing hand-over acks 500 (redelivery)', async () => {
    // The hand-over is held until the test lets it end: an ack before it would carry an earlier time.
    let handOver: (() => void) | undefined;
    ctx.onMessageHook = () => new Promise<void>((resolve) => (handOver = resolve));
    const slow = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'slow hand-over' });
    await until(() => handOver !== undefined, HANG_MS, 'the hand-over to begin');
    expect(fake.acks.some((a) => a.messageId === slow.messageId)).toBe(false);
    handOver?.();
    const ack = await fake.waitForAck(slow.messageId);
    expect(ack.at).toBeGreaterThanOrEqual(ctx.handedOverAt.get(slow.messageId)!);
    ctx.onMessageHook = () => {
      throw new Error('inbox full');
    };
    const bad = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'not stored' });
    await fake.waitForAck(bad.messageId);
    expect(fake.ackLog.find((a) => a.messageId === bad.messageId)?.code).toBe(500);
    ctx.onMessageHook = undefined;
  });

  it('replies with a post (md tag, Lark formatting) in the chat and in the thread', async () => {
    const { messageId } = await fake.deliver({ chatType: 'group', chatId: 'oc_group1', userId: 'ou_bob', text: 'q', mentionBot: true });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    const sent = await adapter.reply(msg.replyTarget, '## Result\n\n__done__, see <at user_id="all"></at>');
    const out = await fake.waitForOutbound((o) => o.messageId === sent?.messageId);
    expect(out).toMatchObject({
      kind: 'reply',
      chatId: 'oc_group1',
      format: 'post',
      replyTo: messageId,
      text: '**Result**\n\n**done**, see ＜at user_id="all">＜/at>',
    });
    const body = JSON.parse((out.raw as { content: string }).content) as { zh_cn: { content: Array<Array<{ tag: string }>> } };
    expect(body.zh_cn.content[0]?.[0]?.tag).toBe('md');

    const inThread = await fake.deliver({ chatType: 'group', chatId: 'oc_group1', userId: 'ou_bob', text: 'topic', threadId: 'omt_1', mentionBot: true });
    const threadMsg = await ctx.waitForMessage((m) => m.messageId === inThread.messageId);
    expect(threadMsg).toMatchObject({ threadId: 'omt_1', replyTarget: { threadId: 'omt_1' } });
    const threadReply = await adapter.reply(threadMsg.replyTarget, 'in the topic');
    expect(await fake.waitForOutbound((o) => o.messageId === threadReply?.messageId)).toMatchObject({ threadId: 'omt_1', chatId: 'oc_group1' });
  });

  it('a post the platform refuses is sent again as plain text', async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'long one' });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    const n = fake.rejections.length;
    const big = `**big** ${'x'.repeat(40_000)}`; // over the post cap (30,000 B), under the text cap (150,000 B)
    const sent = await adapter.reply(msg.replyTarget, big);
    expect(fake.rejections.slice(n).map((r) => r.reason)).toEqual([expect.stringMatching(/^230025/)]);
    expect(await fake.waitForOutbound((o) => o.messageId === sent?.messageId)).toMatchObject({ kind: 'reply', format: 'text', text: big });
  });

  it('logs SDK errors without the tenant token or the app secret', () => {
    const tokens = new Set(fake.requests.map((r) => r.auth?.replace(/^Bearer /, '')).filter((t): t is string => !!t));
    const sdkLines = ctx.logLines.filter((l) => l.includes('sdk:'));
    expect(sdkLines.some((l) => l.includes('230025'))).toBe(true); // the refused post above was logged by the SDK
    for (const line of ctx.logLines) {
      for (const t of tokens) expect(line).not.toContain(t);
      expect(line).not.toContain(fake.appSecret);
    }
  });

  it('sends to a chat id and to an open_id, and edits a sent message', async () => {
    const toChat = await adapter.send!('oc_group1', 'to the group');
    expect(await fake.waitForOutbound((o) => o.messageId === toChat?.messageId)).toMatchObject({ kind: 'send', chatId: 'oc_group1', format: 'post' });
    const toUser = await adapter.send!('ou_erin', 'to erin');
    expect(toUser?.chatId).toBe(fake.dmChatId('ou_erin'));
    expect(fake.requests.find((r) => r.method === 'POST' && (r.body as { receive_id?: string }).receive_id === 'ou_erin')?.query.receive_id_type).toBe(
      'open_id',
    );
    await adapter.edit!(toUser!, '~~to erin~~ edited');
    expect(await fake.waitForOutbound((o) => o.kind === 'edit' && o.messageId === toUser?.messageId)).toMatchObject({
      text: '~~to erin~~ edited',
      format: 'post',
    });
  });

  it('streams into a CardKit card: full text each time, strictly increasing sequence, then finishes', async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'stream please' });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    const stream = await adapter.openStream!(msg.replyTarget);
    for (const t of ['Hel', 'Hello', 'Hello **world**']) await stream.update(t);
    await stream.finish('Hello **world**!');
    const card = [...fake.cards.values()].find((c) => c.chatId === fake.dmChatId('ou_alice'))!;
    const frames = fake.outbound.filter((o) => o.kind === 'stream' && o.messageId === card.messageId);
    expect(frames.map((f) => [f.text, f.finished])).toEqual([
      ['Hel', false],
      ['Hello', false],
      ['Hello **world**', false],
      ['Hello **world**!', false],
      ['Hello **world**!', true],
    ]);
    expect(card.streaming).toBe(false);
    const seqs = fake.requests
      .filter((r) => r.path.startsWith(`/open-apis/cardkit/v1/cards/${card.cardId}/`))
      .map((r) => (r.body as { sequence: number }).sequence);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(fake.outbound.find((o) => o.messageId === card.messageId && o.kind === 'reply')).toMatchObject({ replyTo: messageId, format: 'interactive' });
  });

  it('a card whose streaming mode closed (CardKit does so after 10 minutes) is switched back on', async () => {
    const stream = await adapter.openStream!({ chatId: 'oc_slow', chatType: 'group' });
    await stream.update('part one');
    const card = [...fake.cards.values()].find((c) => c.chatId === 'oc_slow')!;
    // Close it the way the platform's timer would, through the fake's own API.
    const auth = (await (
      await fetch(`${fake.domain}/open-apis/auth/v3/tenant_access_token/internal`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ app_id: fake.appId, app_secret: fake.appSecret }),
      })
    ).json()) as { tenant_access_token: string };
    const res = await fetch(`${fake.domain}/open-apis/cardkit/v1/cards/${card.cardId}/settings`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${auth.tenant_access_token}` },
      body: JSON.stringify({ settings: JSON.stringify({ config: { streaming_mode: false } }), sequence: card.sequence + 1 }),
    });
    expect(res.status).toBe(200);
    await stream.update('part one, part two');
    await stream.finish('part one, part two, done');
    expect(fake.rejections.some((r) => r.reason.startsWith('300309'))).toBe(true);
    expect((card.card.body as { elements: Array<{ content: string }> }).elements[0]?.content).toBe('part one, part two, done');
    expect(card.streaming).toBe(false);
  });

  it('a stream longer than one card continues in a new card at a paragraph break', async () => {
    const stream = await adapter.openStream!({ chatId: 'oc_long', chatType: 'group' });
    const paragraphs = ['a', 'b', 'c'].map((ch) => ch.repeat(8000));
    await stream.update(paragraphs.slice(0, 2).join('\n\n'));
    await stream.finish(paragraphs.join('\n\n'));
    const cards = [...fake.cards.values()].filter((c) => c.chatId === 'oc_long');
    const shown = cards.map((c) => (c.card.body as { elements: Array<{ content: string }> }).elements[0]?.content);
    expect(shown).toEqual([paragraphs[0], paragraphs[1], paragraphs[2]]);
    expect(cards.every((c) => !c.streaming)).toBe(true);
  });

  it('reads history since a date, oldest first, bot messages flagged', async () => {
    const now = Date.now();
    fake.addHistory({ chatType: 'group', chatId: 'oc_hist', userId: 'ou_dave', text: 'too old', ts: now - 3_600_000 });
    const a = fake.addHistory({ chatType: 'group', chatId: 'oc_hist', userId: 'ou_dave', text: 'first', ts: now - 60_000 });
    const b = fake.addHistory({ chatType: 'group', chatId: 'oc_hist', userId: 'ou_dave', text: 'second', ts: now - 30_000, mentionBot: true });
    const mine = await adapter.send!('oc_hist', 'bot line');
    const history = await adapter.readHistory!('oc_hist', { since: new Date(now - 120_000), limit: 10 });
    expect(history.map((m) => [m.messageId, m.text, m.fromBot ?? false, m.mentioned, m.chatType])).toEqual([
      [a.messageId, 'first', false, false, 'group'],
      [b.messageId, 'second', false, true, 'group'],
      [mine?.messageId, 'bot line', true, false, 'group'],
    ]);
    const newest = await adapter.readHistory!('oc_hist', { since: new Date(now - 120_000), limit: 2 });
    expect(newest.map((m) => m.messageId)).toEqual([b.messageId, mine?.messageId]);
  });

  it('downloads an image of an inbound message (message id and image key in the ref)', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'look', images: [{ mimeType: 'image/png', data: png }] });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg.text).toBe('look');
    expect(msg.images?.[0]?.ref).toMatch(new RegExp(`^${messageId}/img_`));
    const img = await adapter.downloadImage!(msg.images![0]!);
    expect(img).toEqual({ data: png, mimeType: 'image/png' });
  });

  it('a file message is a file (message id and file key in the ref), downloaded as a resource of type file within the limit', async () => {
    const pdf = Buffer.from('%PDF-1.4 plan');
    const { messageId } = await fake.deliver({
      chatType: 'direct',
      userId: 'ou_alice',
      text: '',
      files: [{ mimeType: 'application/pdf', data: pdf, fileName: 'plan.pdf' }],
    });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg).toMatchObject({ text: '', files: [{ ref: expect.stringMatching(new RegExp(`^${messageId}/file_`)), fileName: 'plan.pdf' }] });
    expect(await adapter.downloadFile!(msg.files![0]!, { maxBytes: 1000 })).toEqual({ data: pdf, mimeType: 'application/pdf' });
    expect(fake.requests.at(-1)).toMatchObject({ path: expect.stringContaining('/resources/'), query: { type: 'file' } });
    await expect(adapter.downloadFile!(msg.files![0]!, { maxBytes: 4 })).rejects.toMatchObject({ kind: 'too_long' });
  });

  it('sends a picture through im/v1/images as an image message and anything else through im/v1/files as a file message', async () => {
    expect(adapter.maxFileBytes).toBe(30 * 1024 * 1024);
    const { messageId } = await fake.deliver({ chatType: 'group', chatId: 'oc_files', userId: 'ou_alice', text: 'send them', mentionBot: true });
    await ctx.waitForMessage((m) => m.messageId === messageId);
    const to = { chatId: 'oc_files', chatType: 'group' as const, messageId };
    const png = Buffer.from('89504e470d0a1a0a0000000d', 'hex');
    const img = await adapter.sendFile!(to, { name: 'chart.png', mimeType: 'image/png', data: png });
    const csv = Buffer.from('a,b\n1,2\n');
    const doc = await adapter.sendFile!(to, { name: 'data.csv', mimeType: 'text/csv', data: csv });
    const [i, d] = [img, doc].map((sent) => fake.outbound.find((o) => o.messageId === sent?.messageId));
    expect(i).toMatchObject({ kind: 'reply', replyTo: messageId, format: 'image', file: { mimeType: 'image/png', data: png, as: 'image' } }); // a Lark image has no name
    expect(d).toMatchObject({ kind: 'reply', replyTo: messageId, format: 'file', file: { name: 'data.csv', mimeType: 'text/csv', data: csv, as: 'file' } });
    const uploads = fake.requests.filter((r) => r.path === '/open-apis/im/v1/images' || r.path === '/open-apis/im/v1/files');
    const field = (r: (typeof uploads)[number], k: string) => (r.body as Record<string, unknown> | undefined)?.[k];
    expect(uploads.map((r) => [r.path, field(r, 'image_type') ?? field(r, 'file_type'), field(r, 'file_name')])).toEqual([
      ['/open-apis/im/v1/images', 'message', undefined],
      ['/open-apis/im/v1/files', 'stream', 'data.csv'],
    ]);
    // A proactive target (no message to reply to) gets a new message in the chat.
    const sent = await adapter.sendFile!({ chatId: 'oc_files', chatType: 'group' }, { name: 'r.pdf', mimeType: 'application/pdf', data: Buffer.from('%PDF') });
    expect(fake.outbound.find((o) => o.messageId === sent?.messageId)).toMatchObject({ kind: 'send', format: 'file', file: { name: 'r.pdf', as: 'file' } });
  });

  it('a server-side drop is reported as disconnected, then connected', async () => {
    const before = ctx.statuses.length;
    fake.dropConnections();
    await ctx.waitForStatus((s) => s.state === 'connected' && ctx.statuses.indexOf(s) >= before);
    expect(ctx.statuses.slice(before).map((s) => s.state)).toEqual(['disconnected', 'connected']);
    await fake.waitForConnection();
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'after reconnect' });
    await ctx.waitForMessage((m) => m.messageId === messageId);
  });

  it('a refused reconnect (final for the SDK) is retried by the adapter with backoff', async () => {
    const before = ctx.statuses.length;
    fake.setRefuseConnections(true);
    fake.dropConnections();
    const refused = await ctx.waitForStatus((s) => /code=514/.test(s.reason ?? '') && ctx.statuses.indexOf(s) >= before);
    expect(refused).toMatchObject({ state: 'disconnected', reason: expect.stringMatching(/again in 1 s/) });
    fake.setRefuseConnections(false);
    await ctx.waitForStatus((s) => s.state === 'connected' && ctx.statuses.indexOf(s) > ctx.statuses.indexOf(refused));
    await fake.waitForConnection();
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'back again' });
    await ctx.waitForMessage((m) => m.messageId === messageId);
  });
});

describe('Lark adapter: refusal and shutdown', () => {
  it('refused credentials make start reject with a clear reason, without crashing', async () => {
    const fake = await startFakeLark();
    try {
      fake.setRefuseConnections(true);
      const adapter = await createAdapter(fake);
      const err = await adapter.start(createRecordingContext()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChannelError);
      expect(err).toMatchObject({ kind: 'auth', message: expect.stringMatching(/channel_a: cannot use the bot API .*app secret invalid \(code 10014\)/) });
      await adapter.stop();
      expect(fake.connectionCount()).toBe(0);
    } finally {
      await fake.close();
    }
  });

  it('stop releases every socket and timer', async () => {
    await sleep(50);
    const before = resourceTally();
    const fake = await startFakeLark();
    const adapter = await createAdapter(fake);
    await adapter.start(createRecordingContext());
    await adapter.send!('oc_bye', 'bye');
    expect(resourceTally().tcp).toBeGreaterThan(before.tcp);
    await adapter.stop();
    await fake.close();
    await releasedTo(before);
  });
});
