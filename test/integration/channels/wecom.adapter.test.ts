/**
 * The WeCom AI-bot adapter (channel_c) driven through the ChannelAdapter interface: the real
 * @wecom/aibot-node-sdk 1.0.7 inside the adapter, the fake WeCom long-connection server on
 * 127.0.0.1. Assertions are on what the adapter handed to its context and what the fake recorded.
 */
import { createServer } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WSClient } from '@wecom/aibot-node-sdk';
import { wecom } from '../../../src/channels/wecom/index.js';
import { createWecomAdapter, WECOM_MAX_BYTES } from '../../../src/channels/wecom/adapter.js';
import type { WecomTuning } from '../../../src/channels/wecom/connection.js';
import { ChannelError, type ChannelAdapter, type InboundMessage } from '../../../src/channels/types.js';
import { startFakeWecom, type FakeWecom } from '../../fakes/platforms/channel-c-wecom.js';
import { splitMessage } from '../../../src/channels/split.js';
import { createRecordingContext, type RecordingContext } from '../../helpers/recording-context.js';
import { openHandles } from '../../helpers/resources.js';
import { until } from '../../helpers/wait.js';

const FAST: WecomTuning = { reconnectMs: 20, maxAuthFailureAttempts: 2 };

let fake: FakeWecom;
let adapter: ChannelAdapter | undefined;
let ctx: RecordingContext;

async function make(config: Record<string, unknown> = fake.channelConfig, tuning: WecomTuning = FAST): Promise<ChannelAdapter> {
  adapter = await createWecomAdapter(wecom.options.parse({ ...config }), { log: ctx.log, dir: '/tmp', name: 'channel_c' }, tuning);
  return adapter;
}

async function started(tuning?: WecomTuning): Promise<ChannelAdapter> {
  const a = await make(fake.channelConfig, tuning);
  await a.start(ctx);
  return a;
}

async function dm(text: string, userId = 'zhangsan'): Promise<InboundMessage> {
  const { messageId } = await fake.deliver({ chatType: 'direct', userId, text });
  return ctx.waitForMessage((m) => m.messageId === messageId);
}

const streams = (messageId: string) => fake.outbound.filter((o) => o.kind === 'stream' && o.replyTo === messageId);

beforeEach(async () => {
  fake = await startFakeWecom();
  ctx = createRecordingContext();
});

afterEach(async () => {
  await adapter?.stop();
  adapter = undefined;
  await fake.close();
  vi.restoreAllMocks();
});

describe('WeCom AI-bot adapter (channel_c) against the fake WeCom', () => {
  it('start resolves once authenticated; a DM becomes one direct message keyed by userid', async () => {
    const consoleCalls = (['log', 'info', 'warn', 'error', 'debug'] as const).map((m) => vi.spyOn(console, m));
    const a = await started();
    expect(fake.connected()).toBe(true);
    expect(a.limit).toEqual({ max: WECOM_MAX_BYTES, unit: 'bytes' });
    const msg = await dm('hello');
    expect(msg).toMatchObject({
      channel: 'channel_c',
      chatType: 'direct',
      chatId: 'zhangsan',
      senderId: 'zhangsan',
      text: 'hello',
      mentioned: true,
      replyTarget: { chatId: 'zhangsan', chatType: 'direct', messageId: msg.messageId, extra: { reqId: expect.any(String) } },
    });
    // A later DM is handed over after any second copy of the first would have been.
    const later = await dm('marker');
    expect(ctx.messages.map((m) => m.messageId)).toEqual([msg.messageId, later.messageId]);
    expect(ctx.statuses).toEqual([]);
    for (const spy of consoleCalls) expect(spy).not.toHaveBeenCalled(); // the SDK logs through our logger
    expect(ctx.logLines.some((l) => l.includes('sdk: Authentication successful'))).toBe(true);
  });

  it('a group @message is mentioned; only the leading @BotName is removed', async () => {
    await started();
    const { messageId } = await fake.deliver({ chatType: 'group', chatId: 'wrkGroup1', userId: 'lisi', text: 'ping @wangwu a@b.c', mentionBot: true });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg).toMatchObject({ chatType: 'group', chatId: 'wrkGroup1', senderId: 'lisi', text: 'ping @wangwu a@b.c', mentioned: true });
    await adapter!.reply(msg.replyTarget, 'pong');
    expect(streams(messageId)).toMatchObject([{ chatId: 'wrkGroup1', text: 'pong', finished: true }]);
  });

  it("a redelivery arrives again with the same messageId and a new req_id (dedup is the bridge's job)", async () => {
    await started();
    const msg = await dm('are you there?');
    await fake.redeliver(msg.messageId);
    await until(() => ctx.messages.length === 2);
    const [first, second] = ctx.messages;
    expect(second!.messageId).toBe(first!.messageId);
    expect(second!.replyTarget.extra?.reqId).not.toBe(first!.replyTarget.extra?.reqId);
  });

  it('a buffered reply is one stream bubble with finish', async () => {
    await started();
    const msg = await dm('hi');
    const sent = await adapter!.reply(msg.replyTarget, '**hi** there');
    const frames = streams(msg.messageId);
    expect(frames).toMatchObject([{ chatId: 'zhangsan', text: '**hi** there', finished: true }]);
    expect(sent).toEqual({ chatId: 'zhangsan', messageId: frames[0]!.messageId });
    await fake.waitForAck(msg.messageId); // the first reply frame is what WeCom counts as the answer
  });

  it('typing() answers the callback at once (no re-push) and the reply later fills the same bubble', async () => {
    await started();
    const msg = await dm('think hard');
    await adapter!.typing!(msg.replyTarget); // what the bridge does once it takes the message
    const ack = await fake.waitForAck(msg.messageId);
    expect(streams(msg.messageId).map((f) => [f.text, f.finished])).toEqual([['', false]]); // answered before the turn ends
    await adapter!.reply(msg.replyTarget, 'done');
    const frames = streams(msg.messageId);
    expect(frames.map((f) => [f.text, f.finished])).toEqual([
      ['', false],
      ['done', true],
    ]);
    expect(new Set(frames.map((f) => f.messageId)).size).toBe(1);
    expect(frames[1]!.at).toBeGreaterThanOrEqual(ack.at);
  });

  it('a long CJK reply split by render + limit: first part in the bubble, the rest as separate messages, all within the limit', async () => {
    await started();
    const msg = await dm('write a lot');
    const long = Array.from({ length: 40 }, (_, i) => `## 第${i}节\n\n${'企业微信长文本'.repeat(150)}`).join('\n\n');
    const parts = splitMessage(long, adapter!.limit, (md) => adapter!.render(md));
    expect(parts.length).toBeGreaterThan(2);
    for (const p of parts) await adapter!.reply(msg.replyTarget, p);
    const visible = fake.outbound.filter((o) => o.kind === 'stream' || o.kind === 'send');
    expect(visible.map((o) => o.kind)).toEqual(['stream', ...parts.slice(1).map(() => 'send')]);
    for (const o of visible) expect(Buffer.byteLength(o.text)).toBeLessThanOrEqual(WECOM_MAX_BYTES);
    expect(visible.every((o) => o.chatId === 'zhangsan')).toBe(true);
    expect(fake.rejections).toEqual([]);
  });

  it('a part exactly at the limit is accepted as a stream and as a proactive message', async () => {
    await started();
    const msg = await dm('edge');
    const exact = `${'中'.repeat((WECOM_MAX_BYTES - 2) / 3)}ab`;
    expect(Buffer.byteLength(adapter!.render(exact))).toBe(WECOM_MAX_BYTES);
    await adapter!.reply(msg.replyTarget, exact);
    await adapter!.reply(msg.replyTarget, exact);
    expect(fake.outbound.map((o) => o.kind)).toEqual(['stream', 'send']);
    expect(fake.rejections).toEqual([]);
  });

  it('sends proactively to a user and to a group', async () => {
    await started();
    expect(await adapter!.send!('zhangsan', 'daily report')).toMatchObject({ chatId: 'zhangsan', messageId: expect.any(String) });
    await adapter!.send!('wrkGroup1', '# team\n\n- a\n- b');
    expect(fake.outbound.map((o) => [o.kind, o.chatId, o.text, o.format])).toEqual([
      ['send', 'zhangsan', 'daily report', 'markdown'],
      ['send', 'wrkGroup1', '# team\n\n- a\n- b', 'markdown'],
    ]);
  });

  it('openStream updates one bubble and finishes it; a second stream for the same message becomes a separate message', async () => {
    await started();
    const msg = await dm('stream please');
    const s = await adapter!.openStream!(msg.replyTarget);
    await s.update('Hel');
    await s.update('Hello, wor');
    await s.finish('Hello, world!');
    const frames = streams(msg.messageId);
    expect(frames.map((f) => [f.text, f.finished])).toEqual([
      ['Hel', false],
      ['Hello, wor', false],
      ['Hello, world!', true],
    ]);
    expect(new Set(frames.map((f) => f.messageId)).size).toBe(1);
    const again = await adapter!.openStream!(msg.replyTarget);
    await again.update('ignored');
    await again.finish('second message');
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'send', chatId: 'zhangsan', text: 'second message' });
    expect(fake.rejections).toEqual([]);
  });

  it('refused auth: start rejects with the reason, then a bounded retry ends in failed; no storm, no crash', async () => {
    fake.setRefuseConnections(true);
    const a = await make();
    const err = await a.start(ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelError);
    expect(err).toMatchObject({ kind: 'auth', message: 'channel_c: Authentication failed: invalid bot_id or secret (code: 853000)' });
    const failed = await ctx.waitForStatus((s) => s.state === 'failed');
    expect(failed.reason).toContain('gave up');
    expect(fake.stats.refused).toBe(3); // first try + maxAuthFailureAttempts (2)
    // The SDK announces each retry as it schedules it, and gave up instead of scheduling a third:
    // two announced, two made, none pending.
    expect(ctx.logLines.filter((l) => l.includes('reconnecting (attempt')).length).toBe(2);
    expect(fake.stats.subscribes).toBe(3);
  });

  it('an unreachable server rejects start with a clear network reason; stop ends the retries', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const a = await make({ ...fake.channelConfig, websocketUrl: `ws://127.0.0.1:${port}` });
    const err = await a.start(ctx).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'network', message: expect.stringContaining('ECONNREFUSED') });
    await a.stop();
    adapter = undefined;
    expect(await openHandles({ servers: false })).toEqual([]);
  });

  it('a server drop is reported disconnected then connected; a reply to a pre-drop message goes out proactively', async () => {
    await started();
    const msg = await dm('before the drop');
    fake.dropConnections();
    await ctx.waitForStatus((s) => s.state === 'connected');
    expect(ctx.statuses.map((s) => s.state)).toEqual(['disconnected', 'connected']);
    await adapter!.reply(msg.replyTarget, 'late answer');
    expect(fake.rejections.map((r) => r.reason)).toEqual(['invalid req_id']); // 846605 on the new connection
    expect(fake.outbound).toMatchObject([{ kind: 'send', chatId: 'zhangsan', text: 'late answer' }]);
    await dm('after the drop');
  });

  it('another connection taking over the bot is reported as failed with that reason', async () => {
    await started();
    const other = new WSClient({
      botId: 'fake-bot-id',
      secret: 'fake-secret',
      wsUrl: String(fake.channelConfig.websocketUrl),
      logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    });
    other.on('error', () => undefined);
    other.connect();
    try {
      const failed = await ctx.waitForStatus((s) => s.state === 'failed');
      expect(failed.reason).toContain('another connection took over this bot');
      // The adapter did not fight back: no retry announced (one would be as it is scheduled), and a
      // message sent now goes to the other connection, which still holds the bot.
      const toOther = new Promise<void>((resolve) => other.on('message.text', () => resolve()));
      await fake.deliver({ chatType: 'direct', userId: 'zhangsan', text: 'who has the bot?' });
      await toOther;
      expect(ctx.logLines.filter((l) => l.includes('reconnecting'))).toEqual([]);
      expect(fake.stats.subscribes).toBe(2);
      expect(ctx.messages).toEqual([]);
    } finally {
      other.disconnect();
    }
  });

  it('downloadFile decrypts through the SDK and names the file from the download, also when it is over maxBytes', async () => {
    const a = await started();
    const data = Buffer.from('minutes of the meeting\n');
    const { messageId } = await fake.deliver({
      chatType: 'direct',
      userId: 'zhangsan',
      text: '',
      files: [{ mimeType: 'text/plain', data, fileName: 'minutes.txt' }],
    });
    const msg = await ctx.waitForMessage((m) => m.messageId === messageId);
    expect(msg).toMatchObject({ text: '', files: [{ ref: expect.any(String) }] });
    const file = { ...(msg.files?.[0] as NonNullable<InboundMessage['files']>[number]) };
    expect(file.fileName).toBeUndefined(); // WeCom's callback carries no name
    expect(await a.downloadFile?.(file, { maxBytes: 1024 })).toEqual({ data, mimeType: 'text/plain' });
    expect(file.fileName).toBe('minutes.txt');
    const again = { ...(msg.files?.[0] as NonNullable<InboundMessage['files']>[number]) };
    await expect(a.downloadFile?.(again, { maxBytes: 8 })).rejects.toMatchObject({ kind: 'too_long' });
    expect(again.fileName).toBe('minutes.txt');
  });

  it('sendFile uploads over the socket: a PNG as a picture, a PDF and a PNG over 10 MB as files', async () => {
    const a = await started();
    const to = { chatId: 'zhangsan', chatType: 'direct' as const };
    await a.sendFile?.(to, { name: 'chart.png', mimeType: 'image/png', data: Buffer.alloc(64, 1) });
    await a.sendFile?.(to, { name: 'report.pdf', mimeType: 'application/pdf', data: Buffer.alloc(600 * 1024, 2) });
    await a.sendFile?.(to, { name: 'huge.png', mimeType: 'image/png', data: Buffer.alloc(10 * 1024 * 1024 + 1, 3) });
    expect(fake.outbound.map((o) => [o.chatId, o.format, o.file?.name, o.file?.data.length])).toEqual([
      ['zhangsan', 'image', 'chart.png', 64],
      ['zhangsan', 'file', 'report.pdf', 600 * 1024],
      ['zhangsan', 'file', 'huge.png', 10 * 1024 * 1024 + 1],
    ]);
    expect(a.maxFileBytes).toBe(20 * 1024 * 1024);
  });

  it('stop leaves no timer or socket behind, with heartbeats running', async () => {
    await started({ ...FAST, heartbeatMs: 20 });
    await until(() => fake.stats.pings >= 2);
    await adapter!.stop();
    adapter = undefined;
    expect(fake.connected()).toBe(false);
    await fake.close();
    expect(await openHandles({ servers: false })).toEqual([]);
  });
});
