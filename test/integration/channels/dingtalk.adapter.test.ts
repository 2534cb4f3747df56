/**
 * The DingTalk adapter (channel_b) driven through the ChannelAdapter interface: the real
 * dingtalk-stream 2.1.5 inside the adapter, the fake DingTalk (stream gateway + OpenAPI) on
 * 127.0.0.1. Assertions are on what the adapter handed to its context and what the fake recorded.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { dingtalk } from '../../../src/channels/dingtalk/index.js';
import { createDingtalkAdapter, DINGTALK_MAX_BYTES } from '../../../src/channels/dingtalk/adapter.js';
import type { DingtalkTuning } from '../../../src/channels/dingtalk/connection.js';
import { ChannelError, type ChannelAdapter, type InboundMessage } from '../../../src/channels/types.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { startFakeDingtalk, type FakeDingtalk } from '../../fakes/platforms/channel-b-dingtalk.js';
import { splitMessage } from '../../../src/channels/split.js';
import { createRecordingContext, type RecordingContext } from '../../helpers/recording-context.js';
import { openHandles } from '../../helpers/resources.js';
import { HANG_MS, until } from '../../helpers/wait.js';

const FAST: DingtalkTuning = { reconnectMs: 50, maxReconnectMs: 400, heartbeatMs: 0, requestTimeoutMs: 2_000 };

let fake: FakeDingtalk;
let adapter: ChannelAdapter;
let ctx: RecordingContext;

async function make(tuning: DingtalkTuning = FAST): Promise<ChannelAdapter> {
  const options = dingtalk.options.parse({ ...fake.channelConfig });
  return createDingtalkAdapter(options, { log: ctx.log, dir: '/tmp', name: 'channel_b' }, tuning);
}

async function startAdapter(tuning?: DingtalkTuning): Promise<void> {
  adapter = await make(tuning);
  await adapter.start(ctx);
}

async function dm(text: string, userId = 'staff-1'): Promise<InboundMessage> {
  const { messageId } = await fake.deliver({ chatType: 'direct', userId, userName: 'Alice', text });
  return ctx.waitForMessage((m) => m.messageId === messageId);
}

beforeEach(async () => {
  fake = await startFakeDingtalk();
  ctx = createRecordingContext();
});

afterEach(async () => {
  await adapter?.stop();
  await fake.close();
  vi.restoreAllMocks();
});

describe('DingTalk adapter (channel_b) against the fake DingTalk', () => {
  it('start resolves when connected; a DM becomes one direct message, acked only after onMessage resolved', async () => {
    const consoleCalls = (['log', 'info', 'warn', 'error'] as const).map((m) => vi.spyOn(console, m));
    await startAdapter();
    expect(fake.connected()).toBe(true);
    expect(adapter.limit).toEqual({ max: DINGTALK_MAX_BYTES, unit: 'bytes' });
    const msg = await dm('hello');
    expect(msg).toMatchObject({
      channel: 'channel_b',
      chatType: 'direct',
      chatId: 'staff-1',
      senderId: 'staff-1',
      senderName: 'Alice',
      text: 'hello',
      mentioned: true,
      replyTarget: { chatId: 'staff-1', chatType: 'direct', messageId: msg.messageId },
    });
    expect(JSON.parse(JSON.stringify(msg.replyTarget))).toEqual(msg.replyTarget); // the inbox can store it
    const ack = await fake.waitForAck(msg.messageId);
    expect(ack.at).toBeGreaterThanOrEqual([...ctx.handedOverAt.values()][0]!);
    expect(ctx.statuses).toEqual([]);
    // The SDK's unconditional console output ("connect success") went to our logger instead.
    for (const spy of consoleCalls) expect(spy).not.toHaveBeenCalled();
    expect(ctx.logLines.some((l) => l.includes('sdk:') && l.includes('connect success'))).toBe(true);
  });

  it('acks right after onMessage resolves, long before a slow turn replies', async () => {
    await startAdapter();
    const msg = await dm('think hard');
    const ack = await fake.waitForAck(msg.messageId);
    expect(fake.outbound).toEqual([]); // acked while the turn has not replied
    await adapter.reply(msg.replyTarget, 'done');
    const reply = await fake.waitForOutbound((o) => o.kind === 'reply' && o.replyTo === msg.messageId);
    expect(reply.at).toBeGreaterThanOrEqual(ack.at);
  });

  it('leaves a message unacknowledged when onMessage fails, so DingTalk pushes it again', async () => {
    let fail = true;
    ctx = createRecordingContext({
      onMessage: async () => {
        if (fail) throw new Error('inbox full');
      },
    });
    await startAdapter();
    const msg = await dm('once');
    // The adapter says it leaves the message unacknowledged once onMessage failed: no ack can follow.
    await until(() => ctx.logLines.some((l) => l.includes(`message ${msg.messageId} not accepted`)), HANG_MS, 'the failed hand-over');
    expect(fake.acks).toEqual([]);
    fail = false;
    await fake.redeliver(msg.messageId);
    await fake.waitForAck(msg.messageId);
  });

  it('a group @message is mentioned, keyed by openConversationId, with the mention and its space removed', async () => {
    await startAdapter();
    const { messageId } = await fake.deliver({
      chatType: 'group',
      chatId: 'cidGroup1==',
      userId: 'staff-2',
      userName: 'Bo',
      text: 'status? @Bob',
      mentionBot: true,
      mentionUsers: [{ userId: 'staff-9', userName: 'Bob' }],
    });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg).toMatchObject({ chatType: 'group', chatId: 'cidGroup1==', senderId: 'staff-2', text: 'status? @Bob', mentioned: true });
    await adapter.reply(msg.replyTarget, '**ok**');
    expect(await fake.waitForOutbound((o) => o.kind === 'reply')).toMatchObject({ chatId: 'cidGroup1==', format: 'markdown', text: '**ok**' });
  });

  it("a redelivery arrives again with the same messageId (dedup is the bridge's job) and is acked again", async () => {
    await startAdapter();
    const msg = await dm('are you there?');
    await fake.waitForAck(msg.messageId);
    await fake.redeliver(msg.messageId);
    await until(() => ctx.messages.length === 2);
    expect(ctx.messages.map((m) => m.messageId)).toEqual([msg.messageId, msg.messageId]);
    await until(() => fake.acks.length === 2);
  });

  it('replies through the sessionWebhook, and through the OpenAPI once the webhook expired', async () => {
    await startAdapter();
    const msg = await dm('hi');
    expect(await adapter.reply(msg.replyTarget, '# Title\n\nbody')).toBeUndefined();
    const viaHook = await fake.waitForOutbound((o) => o.kind === 'reply');
    expect(viaHook).toMatchObject({ chatId: 'staff-1', format: 'markdown', text: '# Title\n\nbody', replyTo: msg.messageId });
    expect(viaHook.raw).toMatchObject({ msgtype: 'markdown', markdown: { title: 'Title' } });

    fake.expireSessionWebhooks(); // server-side: the next POST gets errcode 300001
    const sent = await adapter.reply(msg.replyTarget, 'late answer');
    expect(sent).toMatchObject({ chatId: 'staff-1', messageId: expect.any(String) });
    expect(await fake.waitForOutbound((o) => o.kind === 'send')).toMatchObject({ chatId: 'staff-1', text: 'late answer', format: 'sampleMarkdown' });
    expect(fake.rejections.map((r) => r.reason)).toEqual(['sessionWebhook expired or unknown']);

    // Expired by its own timestamp: straight to the OpenAPI, no failed webhook call.
    const stale = { ...msg.replyTarget, extra: { ...msg.replyTarget.extra, sessionWebhookExpiredTime: Date.now() - 1 } };
    await adapter.reply(stale, 'later still');
    await fake.waitForOutbound((o) => o.kind === 'send' && o.text === 'later still');
    expect(fake.rejections).toHaveLength(1);
  });

  it('a long CJK reply split by render + limit: every part within the byte limit, all accepted', async () => {
    await startAdapter();
    const msg = await dm('write a lot');
    const long = Array.from({ length: 60 }, (_, i) => `第${i}段：${'中文内容'.repeat(40)}`).join('\n\n');
    const parts = splitMessage(long, adapter.limit, (md) => adapter.render(md));
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) await adapter.reply(msg.replyTarget, p);
    const replies = fake.outbound.filter((o) => o.kind === 'reply');
    expect(replies).toHaveLength(parts.length);
    for (const r of replies) expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(DINGTALK_MAX_BYTES);
    expect(fake.rejections).toEqual([]);
  });

  it('a part exactly at the limit is accepted by the webhook and the OpenAPI; worst-case escaping fits msgParam', async () => {
    await startAdapter();
    const msg = await dm('edge');
    const exact = `${'中'.repeat((DINGTALK_MAX_BYTES - 1) / 3)}a`;
    expect(Buffer.byteLength(adapter.render(exact))).toBe(DINGTALK_MAX_BYTES);
    await adapter.reply(msg.replyTarget, exact);
    await adapter.send!('staff-1', exact);
    // Quotes double under JSON escaping: the OpenAPI's msgParam must still be under 15 000 bytes.
    const quotes = '"'.repeat(DINGTALK_MAX_BYTES);
    expect(Buffer.byteLength(adapter.render(quotes))).toBe(DINGTALK_MAX_BYTES);
    await adapter.send!('staff-1', quotes);
    const sends = fake.outbound.filter((o) => o.kind === 'send');
    expect(sends).toHaveLength(2);
    expect(Buffer.byteLength(String((sends[1]!.raw as { msgParam: string }).msgParam))).toBeLessThan(15_000);
    expect(fake.outbound.filter((o) => o.kind === 'reply')).toHaveLength(1);
    expect(fake.rejections).toEqual([]);
  });

  it('sends proactively to a user (staffId) and to a group (cid…); user: / group: prefixes force the kind', async () => {
    await startAdapter();
    await adapter.send!('staff-9', 'to a user');
    await adapter.send!('cidGroup2==', 'to a group');
    await adapter.send!('user:cidLikeStaffId', 'forced user');
    expect(fake.outbound.map((o) => [o.kind, o.chatId, o.text])).toEqual([
      ['send', 'staff-9', 'to a user'],
      ['send', 'cidGroup2==', 'to a group'],
      ['send', 'cidLikeStaffId', 'forced user'],
    ]);
    expect(fake.outbound[1]!.raw).toMatchObject({ openConversationId: 'cidGroup2==', robotCode: 'ding-fake-client' });
    expect(fake.outbound[2]!.raw).toMatchObject({ userIds: ['cidLikeStaffId'] });
    expect(fake.stats.tokens).toBe(1); // one access token, cached
  });

  it('openStream: an AI card updated with the full text, then finished', async () => {
    await startAdapter();
    const msg = await dm('stream please');
    const stream = await adapter.openStream!(msg.replyTarget);
    await stream.update('Hel');
    await stream.update('Hello, wor');
    await stream.finish('Hello, **world**');
    const frames = fake.outbound.filter((o) => o.kind === 'stream');
    expect(frames.map((o) => [o.chatId, o.text, o.finished])).toEqual([
      ['staff-1', 'Hel', false],
      ['staff-1', 'Hello, wor', false],
      ['staff-1', 'Hello, **world**', true],
    ]);
    const card = fake.cards.get(String(frames[0]!.messageId));
    expect(card?.params).toMatchObject({ flowStatus: '3', msgContent: 'Hello, **world**' });
    expect(frames[0]!.raw).toMatchObject({ key: 'msgContent', isFull: true });

    // In a group the card goes to the openConversationId, delivered by the robot.
    const { messageId } = await fake.deliver({ chatType: 'group', chatId: 'cidGroup1==', userId: 'staff-2', text: 'go', mentionBot: true });
    const inGroup = await adapter.openStream!((await ctx.waitForMessage((m) => m.messageId === messageId)).replyTarget);
    await inGroup.finish('group answer');
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'stream', chatId: 'cidGroup1==', text: 'group answer', finished: true });
  });

  it('openStream degrades to one buffered reply when no AI card can be created', async () => {
    await startAdapter();
    const msg = await dm('stream please');
    fake.setRefuseConnections(true); // the access token is refused now: no card
    const stream = await adapter.openStream!(msg.replyTarget);
    await stream.update('partial');
    await stream.finish('the whole answer');
    expect(fake.outbound.map((o) => [o.kind, o.text])).toEqual([['reply', 'the whole answer']]);
    expect(ctx.logLines.some((l) => l.includes('AI card unavailable'))).toBe(true);
  });

  it('a refused connection rejects start with the reason, without a crash or a reconnect storm; recovery is reported', async () => {
    fake.setRefuseConnections(true);
    adapter = await make();
    const err = await adapter.start(ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelError);
    expect(err).toMatchObject({ kind: 'auth', message: expect.stringContaining('HTTP 401 InvalidAuthentication') });
    // …retried in the background with backoff (50, 100, 200 ms), not a storm: each wait at least as
    // long as the schedule says (a loaded machine only makes the waits longer).
    await until(() => fake.refusedOpenTimes.length >= 4, HANG_MS, 'three retries in the background');
    const gaps = fake.refusedOpenTimes.slice(1, 4).map((t, i) => t - (fake.refusedOpenTimes[i] ?? 0));
    for (const [i, gap] of gaps.entries()) expect(gap).toBeGreaterThanOrEqual(50 * 2 ** i - 2);
    fake.setRefuseConnections(false);
    await ctx.waitForStatus((s) => s.state === 'connected');
    expect(ctx.statuses).toEqual([{ state: 'connected' }]);
    await dm('finally');
  });

  it('a server drop is reported as disconnected, then connected; messages flow on the new connection', async () => {
    await startAdapter();
    fake.dropConnections();
    await ctx.waitForStatus((s) => s.state === 'connected');
    expect(ctx.statuses.map((s) => s.state)).toEqual(['disconnected', 'connected']);
    expect(ctx.statuses[0]!.reason).toEqual(expect.any(String));
    expect(fake.stats.opens).toBe(2);
    await dm('after the drop');
  });

  it('stop leaves no timer or socket behind, after a reconnect and with keep-alive pings running', async () => {
    await startAdapter({ ...FAST, heartbeatMs: 30 });
    fake.dropConnections();
    await ctx.waitForStatus((s) => s.state === 'connected');
    await until(() => fake.clientPings() >= 2, HANG_MS, 'keep-alive rounds on the new socket');
    expect(fake.connected()).toBe(true);
    await adapter.stop();
    expect(fake.connected()).toBe(false);
    await fake.close();
    expect(await openHandles({ servers: false })).toEqual([]);
  });

  it('downloads a file message through messageFiles/download within maxBytes; pictures of rich text go to downloadImage', async () => {
    await startAdapter();
    const data = Buffer.from('%PDF-1.4 spec');
    const { messageId } = await fake.deliver({
      chatType: 'direct',
      userId: 'staff-1',
      text: '',
      files: [{ mimeType: 'application/pdf', data, fileName: 'spec.pdf' }],
    });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg).toMatchObject({ text: '', files: [{ ref: expect.any(String), fileName: 'spec.pdf' }] });
    const file = msg.files?.[0] as NonNullable<InboundMessage['files']>[number];
    expect(await adapter.downloadFile?.(file, { maxBytes: 1024 })).toEqual({ data, mimeType: 'application/pdf' });
    await expect(adapter.downloadFile?.(file, { maxBytes: 4 })).rejects.toMatchObject({ kind: 'too_long' });
    const png = Buffer.from('89504e470d0a1a0a', 'hex');
    const pic = await fake.deliver({
      chatType: 'group',
      chatId: 'cidG1==',
      userId: 'staff-1',
      text: 'look',
      mentionBot: true,
      images: [{ mimeType: 'image/png', data: png }],
    });
    const withPicture = await ctx.waitForMessage((m) => m.messageId === pic.messageId);
    expect(withPicture.text).toBe('look');
    expect(await adapter.downloadImage?.(withPicture.images?.[0] as NonNullable<InboundMessage['images']>[number])).toEqual({
      data: png,
      mimeType: 'image/png',
    });
  });

  it('sendFile: uploads to /media/upload, then a picture as sampleImageMsg into a group, a PDF (and a WebP) as sampleFile to a user', async () => {
    await startAdapter();
    const group = { chatId: 'cidG1==', chatType: 'group' as const };
    const user = { chatId: 'staff-1', chatType: 'direct' as const };
    await adapter.sendFile?.(group, { name: 'chart.png', mimeType: 'image/png', data: Buffer.alloc(64, 1) });
    await adapter.sendFile?.(user, { name: 'report.pdf', mimeType: 'application/pdf', data: Buffer.alloc(32, 2) });
    await adapter.sendFile?.(user, { name: 'pic.webp', mimeType: 'image/webp', data: Buffer.alloc(16, 3) });
    expect(fake.outbound.map((o) => [o.chatId, o.format, o.file?.name, o.file?.as, JSON.parse(String((o.raw as { msgParam: string }).msgParam))])).toEqual([
      ['cidG1==', 'sampleImageMsg', 'chart.png', 'image', { photoURL: expect.stringMatching(/^@/) }],
      ['staff-1', 'sampleFile', 'report.pdf', 'file', { mediaId: expect.any(String), fileName: 'report.pdf', fileType: 'pdf' }],
      ['staff-1', 'sampleFile', 'pic.webp', 'file', { mediaId: expect.any(String), fileName: 'pic.webp', fileType: 'webp' }],
    ]);
    expect(adapter.maxFileBytes).toBe(20 * 1024 * 1024);
  });

  it('approval buttons only with approvalCardTemplateId; a press becomes the command from the presser in the card’s chat, acked', async () => {
    const { approvalCardTemplateId: _, ...plain } = fake.channelConfig;
    const without = await createDingtalkAdapter(dingtalk.options.parse(plain), { log: ctx.log, dir: '/tmp', name: 'channel_b' }, FAST);
    expect(without.askApproval).toBeUndefined();
    await startAdapter();
    expect(fake.subscriptions).toContainEqual({ type: 'CALLBACK', topic: '/v1.0/card/instances/callback' });
    const to = { chatId: 'cidG1==', chatType: 'group' as const, extra: { robotCode: fake.channelConfig.clientId } };
    const prompt = {
      id: 'k7m2x',
      tool: 'Bash',
      summary: 'ls',
      text: '**Approval needed:** `ls`',
      actions: [
        { label: 'Allow', command: '/allow k7m2x' },
        { label: 'Deny', command: '/deny k7m2x' },
        { label: 'Always allow Bash', command: '/allow always k7m2x' },
      ],
    };
    const sent = await adapter.askApproval?.(to, prompt);
    expect(sent).toEqual({ chatId: 'cidG1==', messageId: expect.stringMatching(/^approval_k7m2x_/) });
    await fake.press({ messageId: sent?.messageId as string, label: 'Always allow Bash', userId: 'staff-2' });
    const press = await ctx.waitForMessage((m) => m.text.startsWith('/allow'));
    expect(press).toMatchObject({ chatId: 'cidG1==', chatType: 'group', senderId: 'staff-2', text: '/allow always k7m2x', mentioned: true });
    await until(() => fake.acks.some((a) => a.messageId.startsWith('press:')), HANG_MS, 'the press acked');
  });

  it('is created through the channel definition with the SDK imported lazily', async () => {
    const a = await dingtalk.create(dingtalk.options.parse({ ...fake.channelConfig }), { log: createSilentLogger(), dir: '/tmp', name: 'channel_b' });
    expect(a.name).toBe('channel_b');
    expect(a.openStream).toBeTypeOf('function');
    await a.stop(); // stop before start is harmless
  });
});
