/**
 * channel_e (Telegram) adapter against the fake Bot API: the real grammy Bot (long polling)
 * inside the adapter, driven through the ChannelAdapter interface only.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { telegram } from '../../../src/channels/telegram/index.js';
import { ChannelError, type ChannelAdapter } from '../../../src/channels/types.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import { createRecordingContext, type RecordingContext } from '../../helpers/recording-context.js';
import { cleanupAfterEach, failOnLeaksAfterAll } from '../../helpers/resources.js';
import { HANG_MS, until } from '../../helpers/wait.js';

type Fake = Awaited<ReturnType<typeof startFakeTelegram>>;
const GROUP = '-1001234567890';

const defer = cleanupAfterEach();
failOnLeaksAfterAll();

async function create(config: Record<string, unknown>) {
  const adapter = await telegram.create(telegram.options.parse(config), { log: createSilentLogger(), dir: '/tmp', name: 'channel_e' });
  return { adapter, rec: createRecordingContext() };
}

async function started(): Promise<{ fake: Fake; adapter: ChannelAdapter; rec: RecordingContext }> {
  const fake = await startFakeTelegram();
  defer(() => fake.close());
  // A trailing slash is accepted in the config and dropped (grammy throws on one).
  const { adapter, rec } = await create({ ...fake.channelConfig, apiRoot: `${fake.channelConfig.apiRoot}/` });
  await adapter.start(rec);
  defer(() => adapter.stop());
  return { fake, adapter, rec };
}

const rawText = (o: { raw: unknown }) => (o.raw as { text: string }).text;

describe('channel_e Telegram adapter (grammy 1.46.0 long polling) against the fake', () => {
  it('connects, normalises a DM, confirms it only after the hand-over, and replies to it', async () => {
    const { fake, adapter, rec } = await started();
    expect(fake.calls.slice(0, 3).map((c) => c.method)).toEqual(['getme', 'deletewebhook', 'getupdates']);
    expect(fake.connected()).toBe(true);

    const { messageId } = await fake.deliver({ chatType: 'direct', userId: '1001', userName: 'alice', text: 'hi there', ts: 1_700_000_000_000 });
    const m = await rec.waitForMessage(() => true);
    expect(m).toEqual({
      channel: 'channel_e',
      messageId: `1001:${messageId}`,
      chatId: '1001',
      chatType: 'direct',
      senderId: '1001',
      senderName: 'alice',
      text: 'hi there',
      mentioned: true,
      ts: 1_700_000_000_000,
      replyTarget: { chatId: '1001', chatType: 'direct', messageId: `1001:${messageId}` },
    });
    const ack = await fake.waitForAck(messageId);
    expect(ack.at).toBeGreaterThanOrEqual(rec.handedOverAt.get(m.messageId) ?? Infinity);

    const sent = await adapter.reply(m.replyTarget, 'Version 1.2 (beta) - costs $5! **bold** `a_b` [x](https://e.x/a_(b)) #tag');
    const out = await fake.waitForOutbound((o) => o.messageId === sent?.messageId);
    expect(out).toMatchObject({
      kind: 'reply',
      chatId: '1001',
      replyTo: messageId,
      format: 'MarkdownV2',
      text: 'Version 1.2 (beta) - costs $5! bold a_b x #tag',
    });
    expect(rawText(out)).toBe('Version 1\\.2 \\(beta\\) \\- costs $5\\! *bold* `a_b` [x](https://e.x/a_(b\\)) \\#tag');
    expect(fake.rejections).toEqual([]);
  });

  it('a group mention is delivered with only the bot mention stripped; other mentions and addresses stay', async () => {
    const { fake, rec } = await started();
    await fake.deliver({
      chatType: 'group',
      chatId: GROUP,
      userId: '1002',
      userName: 'bob',
      mentionBot: true,
      text: 'hey @carol, mail a@b.com',
      mentionUsers: [{ userId: '1003', userName: 'carol' }],
    });
    await fake.deliver({ chatType: 'group', chatId: GROUP, userId: '1002', text: 'so @service_bot what now', mentionBot: true });
    await fake.deliver({ chatType: 'group', chatId: GROUP, userId: '1002', text: 'just chatting about @service_botanist' });
    await until(() => rec.messages.length === 3);
    expect(rec.messages.map((m) => [m.text, m.mentioned, m.chatType, m.chatId])).toEqual([
      ['hey @carol, mail a@b.com', true, 'group', GROUP],
      ['so what now', true, 'group', GROUP],
      ['just chatting about @service_botanist', false, 'group', GROUP],
    ]);
  });

  it('a redelivered update is handed over again under the same message id', async () => {
    const { fake, rec } = await started();
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: '1001', text: 'once' });
    await fake.redeliver(messageId);
    await until(() => rec.messages.length === 2);
    expect(rec.messages[1]?.messageId).toBe(rec.messages[0]?.messageId);
  });

  it('falls back to plain text when Telegram refuses the formatting, for replies and edits', async () => {
    const { fake, adapter } = await started();
    const { messageId } = await fake.deliver({ chatType: 'group', chatId: GROUP, userId: '1002', text: 'q', mentionBot: true });
    fake.failNext('sendMessage', {
      error_code: 400,
      description: "Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\\'",
    });
    const sent = await adapter.reply({ chatId: GROUP, chatType: 'group', messageId: `${GROUP}:${messageId}` }, 'Use **v1.2** and [docs](https://d.x)');
    expect(fake.rejections).toHaveLength(1);
    expect(fake.outbound.at(-1)).toMatchObject({
      kind: 'reply',
      replyTo: messageId,
      format: 'plain',
      text: 'Use v1.2 and docs (https://d.x)',
      messageId: sent?.messageId,
    });

    fake.failNext('editMessageText', { error_code: 400, description: "Bad Request: can't parse entities: Can't find end of the entity" });
    await adapter.edit?.(sent!, 'now **v1.3**');
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'edit', format: 'plain', text: 'now v1.3' });
  });

  it('sends to a chat id, edits (an unchanged edit is fine), shows typing, and maps refusals', async () => {
    const { fake, adapter } = await started();
    const sent = await adapter.send?.(GROUP, 'hello _world_');
    expect(sent).toMatchObject({ chatId: GROUP });
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'send', chatId: GROUP, format: 'MarkdownV2', text: 'hello world' });
    await adapter.edit?.(sent!, 'hello **again**');
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'edit', messageId: sent?.messageId, text: 'hello again' });
    await adapter.edit?.(sent!, 'hello **again**');
    expect(fake.rejections.at(-1)?.reason).toMatch(/message is not modified/);
    await adapter.typing?.({ chatId: '1001', chatType: 'direct' });
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'typing', chatId: '1001', format: 'typing' });
    expect(await adapter.send?.('1001', '  \n ')).toBeUndefined();
    await expect(adapter.send?.('@nobody', 'x')).rejects.toMatchObject({ kind: 'not_found' });
    fake.failNext('sendMessage', { error_code: 429, description: 'Too Many Requests: retry after 7', retry_after: 7 });
    const limited = await adapter.send?.('1001', 'x').catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(ChannelError);
    expect(limited).toMatchObject({ kind: 'rate_limited', message: expect.stringContaining('retry after 7 s') });
  });

  it('delivers a photo as an image (largest size) and downloads it through getFile', async () => {
    const { fake, adapter, rec } = await started();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 9, 9]);
    await fake.deliver({ chatType: 'direct', userId: '1001', text: 'look', images: [{ mimeType: 'image/png', data: png }] });
    const m = await rec.waitForMessage(() => true);
    expect(m.text).toBe('look');
    expect(m.images).toHaveLength(1);
    expect(await adapter.downloadImage?.(m.images![0]!)).toEqual({ data: png, mimeType: 'image/png' });
    await expect(adapter.downloadImage?.({ ref: 'nope' })).rejects.toMatchObject({ kind: 'other', message: expect.stringContaining('invalid file_id') });
  });

  it('a document is a file (with its size) downloaded through getFile within the limit; past it the call is too_long', async () => {
    const { fake, adapter, rec } = await started();
    const pdf = Buffer.from('%PDF-1.4 fake');
    await fake.deliver({ chatType: 'direct', userId: '1001', text: 'read this', files: [{ mimeType: 'application/pdf', data: pdf, fileName: 'r.pdf' }] });
    const m = await rec.waitForMessage(() => true);
    expect(m).toMatchObject({ text: 'read this', files: [{ ref: expect.any(String), fileName: 'r.pdf', mimeType: 'application/pdf', size: pdf.length }] });
    expect(m.images).toBeUndefined();
    const file = m.files?.[0] ?? { ref: '' };
    expect(await adapter.downloadFile?.(file, { maxBytes: 1000 })).toEqual({ data: pdf, mimeType: 'application/pdf' });
    await expect(adapter.downloadFile?.(file, { maxBytes: 4 })).rejects.toMatchObject({ kind: 'too_long' });
    // Over the Bot API's 20 MB, getFile itself refuses.
    await fake.deliver({
      chatType: 'direct',
      userId: '1001',
      text: '',
      files: [{ mimeType: 'application/zip', data: Buffer.alloc(21 * 1024 * 1024), fileName: 'big.zip' }],
    });
    const big = await rec.waitForMessage((x) => x.files?.[0]?.fileName === 'big.zip');
    await expect(adapter.downloadFile?.(big.files?.[0] ?? { ref: '' }, { maxBytes: 100 * 1024 * 1024 })).rejects.toMatchObject({
      kind: 'too_long',
      message: expect.stringContaining('file is too big'),
    });
  });

  it('sends a picture as a photo and anything else as a document, in reply to the message and its topic', async () => {
    const { fake, adapter } = await started();
    expect(adapter.maxFileBytes).toBe(50 * 1024 * 1024);
    const to = { chatId: GROUP, chatType: 'group' as const, messageId: `${GROUP}:77`, threadId: '9' };
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const photo = await adapter.sendFile?.(to, { name: 'chart.png', mimeType: 'image/png', data: png });
    const pdf = Buffer.from('%PDF report');
    const doc = await adapter.sendFile?.(to, { name: 'report.pdf', mimeType: 'application/pdf', data: pdf });
    const [p, d] = [photo, doc].map((sent) => fake.outbound.find((o) => o.messageId === sent?.messageId));
    expect(p).toMatchObject({
      kind: 'reply',
      replyTo: '77',
      chatId: GROUP,
      threadId: '9',
      file: { name: 'chart.png', mimeType: 'image/png', data: png, as: 'image' },
    });
    expect(d).toMatchObject({
      kind: 'reply',
      replyTo: '77',
      chatId: GROUP,
      threadId: '9',
      file: { name: 'report.pdf', mimeType: 'application/pdf', data: pdf, as: 'file' },
    });
    expect(fake.calls.filter((c) => c.method.startsWith('send')).map((c) => [c.method, JSON.parse(String(c.params.reply_parameters)).message_id])).toEqual([
      ['sendphoto', 77],
      ['senddocument', 77],
    ]);
  });

  it('start rejects with a clear reason on a refused token, and stop aborts a start against an unreachable API', async () => {
    const fake = await startFakeTelegram();
    defer(() => fake.close());
    fake.setRefuseConnections(true);
    const refused = await create(fake.channelConfig);
    const err = await refused.adapter.start(refused.rec).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelError);
    expect(err).toMatchObject({ kind: 'auth', message: expect.stringMatching(/getMe.*401 Unauthorized/) });
    await refused.adapter.stop();

    // An API whose every connection is cut: getMe fails and is retried, and start goes on waiting.
    let attempts = 0;
    const cutting = createServer((req) => {
      attempts++;
      req.socket.destroy();
    });
    await new Promise<void>((resolve) => cutting.listen(0, '127.0.0.1', resolve));
    defer(() => new Promise<void>((resolve) => cutting.close(() => resolve())));
    const down = await create({ botToken: fake.channelConfig.botToken, apiRoot: `http://127.0.0.1:${(cutting.address() as AddressInfo).port}` });
    const starting = down.adapter.start(down.rec).catch((e: unknown) => e);
    await until(() => attempts >= 2, HANG_MS, 'getMe failing and being retried');
    await down.adapter.stop();
    expect(await starting).toMatchObject({ message: expect.stringContaining('stopped while starting') });
  });

  it('reports a dropped poll as disconnected, then connected again', async () => {
    const { fake, rec } = await started();
    fake.dropConnections();
    const down = await rec.waitForStatus('disconnected');
    expect(down.reason).toMatch(/getUpdates failed/);
    await rec.waitForStatus('connected', HANG_MS);
    expect(rec.statuses.map((s) => s.state)).toEqual(['disconnected', 'connected']);
    await fake.deliver({ chatType: 'direct', userId: '1001', text: 'after the drop' });
    await rec.waitForMessage((m) => m.text === 'after the drop');
  });

  it('a token revoked while polling, or a second poller, is reported as failed without crashing', async () => {
    const { fake, adapter, rec } = await started();
    fake.setRefuseConnections(true);
    const failed = await rec.waitForStatus('failed');
    expect(failed.reason).toMatch(/401 Unauthorized/);
    await adapter.stop();
    fake.setRefuseConnections(false);

    const first = await create(fake.channelConfig);
    await first.adapter.start(first.rec);
    defer(() => first.adapter.stop());
    const second = await create(fake.channelConfig);
    await second.adapter.start(second.rec);
    defer(() => second.adapter.stop());
    const conflict = await first.rec.waitForStatus('failed');
    expect(conflict.reason).toMatch(/another process is polling.*409/);
  });

  it('stops promptly: the held poll is aborted and the offset confirmed', async () => {
    const { fake, adapter, rec } = await started();
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: '1001', text: 'last' });
    await rec.waitForMessage(() => true);
    await until(() => fake.calls.filter((c) => c.method === 'getupdates').length >= 2);
    const expiredBefore = fake.expiredPolls();
    await adapter.stop();
    await adapter.stop();
    expect(fake.expiredPolls(), 'stop() waited for the held poll to run out').toBe(expiredBefore);
    await fake.waitForAck(messageId);
    expect(fake.pendingUpdates()).toBe(0);
  });
});
