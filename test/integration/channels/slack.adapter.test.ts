/**
 * channel_d (Slack) adapter against the fake Slack: the real @slack/bolt SocketModeReceiver and
 * WebClient inside the adapter, driven through the ChannelAdapter interface only.
 */
import { describe, expect, it } from 'vitest';
import { slack } from '../../../src/channels/slack/index.js';
import { ChannelError, type ChannelAdapter } from '../../../src/channels/types.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { startFakeSlack } from '../../fakes/platforms/channel-d-slack.js';
import { createRecordingContext, type RecordingContext } from '../../helpers/recording-context.js';
import { cleanupAfterEach, failOnLeaksAfterAll, releasedTo, resourceTally } from '../../helpers/resources.js';
import { HANG_MS, until } from '../../helpers/wait.js';

type Fake = Awaited<ReturnType<typeof startFakeSlack>>;

const defer = cleanupAfterEach();
failOnLeaksAfterAll();

async function setup(opts: Parameters<typeof startFakeSlack>[0] = {}, config: Record<string, string> = {}) {
  const fake = await startFakeSlack(opts);
  defer(() => fake.close());
  const adapter = await slack.create({ ...fake.channelConfig, ...config }, { log: createSilentLogger(), dir: '/tmp', name: 'channel_d' });
  const rec = createRecordingContext();
  return { fake, adapter, rec };
}

async function started(opts: Parameters<typeof startFakeSlack>[0] = {}): Promise<{ fake: Fake; adapter: ChannelAdapter; rec: RecordingContext }> {
  const s = await setup(opts);
  await s.adapter.start(s.rec);
  defer(() => s.adapter.stop());
  return s;
}

describe('channel_d Slack adapter (bolt 5.1.0 Socket Mode) against the fake', () => {
  it('connects, normalises a DM, acknowledges it only after the hand-over, and replies without a thread', async () => {
    const { fake, adapter, rec } = await started();
    expect(fake.connected()).toBe(true);
    expect(fake.calls.map((c) => c.method).slice(0, 2)).toEqual(['auth.test', 'apps.connections.open']);
    expect(rec.statuses).toEqual([]);

    const before = Date.now();
    const { messageId: ts } = await fake.deliver({ chatType: 'direct', userId: 'U1', userName: 'alice', text: 'hi &lt;there&gt;' });
    const m = await rec.waitForMessage(() => true);
    expect(m).toEqual({
      channel: 'channel_d',
      messageId: `DU1:${ts}`,
      chatId: 'DU1',
      chatType: 'direct',
      senderId: 'U1',
      senderName: 'alice',
      text: 'hi <there>',
      mentioned: true,
      ts: expect.any(Number),
      replyTarget: { chatId: 'DU1', chatType: 'direct', messageId: `DU1:${ts}` },
    });
    expect(Math.abs(m.ts - before)).toBeLessThan(5000);
    const ack = await fake.waitForAck(ts);
    expect(ack.at).toBeGreaterThanOrEqual(rec.handedOverAt.get(m.messageId) ?? Infinity);

    const sent = await adapter.reply(m.replyTarget, 'Hello **there** & _you_ <b>');
    const out = await fake.waitForOutbound((o) => o.messageId === sent?.messageId);
    expect(out).toMatchObject({ kind: 'send', chatId: 'DU1', format: 'mrkdwn', text: 'Hello *there* & _you_ <b>' });
    expect((out.raw as { text: string }).text).toBe('Hello *there* &amp; _you_ &lt;b&gt;');
    expect(out.threadId).toBeUndefined();
  });

  it('a group mention (two envelopes) is one message with only the bot mention stripped; the reply goes to its thread', async () => {
    const { fake, adapter, rec } = await started();
    const { messageId: ts } = await fake.deliver({
      chatType: 'group',
      chatId: 'C0GENERAL',
      userId: 'U2',
      userName: 'bob',
      mentionBot: true,
      text: 'hey <@U3>, mail a@b.com',
      mentionUsers: [{ userId: 'U3', userName: 'carol' }],
    });
    // Each envelope is acked once its handling ended: after both, nothing more is handed over.
    await until(() => fake.acks.filter((a) => a.messageId === ts).length === 2);
    expect(rec.messages).toHaveLength(1);
    const m = rec.messages[0];
    expect(m).toMatchObject({ chatId: 'C0GENERAL', chatType: 'group', mentioned: true, text: 'hey <@U3>, mail a@b.com', senderName: 'bob' });
    expect(m?.replyTarget).toEqual({ chatId: 'C0GENERAL', chatType: 'group', messageId: `C0GENERAL:${ts}`, threadId: ts });

    await adapter.reply(m!.replyTarget, '# Title\n\n- one\n- `two`\n\nSee [docs](https://x.test/a?b=1&c=2)');
    const out = await fake.waitForOutbound((o) => o.kind === 'reply');
    expect(out).toMatchObject({ chatId: 'C0GENERAL', threadId: ts, replyTo: ts, format: 'mrkdwn' });
    expect((out.raw as { text: string }).text).toBe('*Title*\n\n• one\n• `two`\n\nSee <https://x.test/a?b=1&amp;c=2|docs>');
  });

  it('group messages without a mention are delivered with mentioned false; thread replies keep their thread', async () => {
    const { fake, rec } = await started();
    const { messageId: ts } = await fake.deliver({ chatType: 'group', chatId: 'C0GENERAL', userId: 'U2', text: 'just chatting' });
    const m = await rec.waitForMessage(() => true);
    expect(m).toMatchObject({ mentioned: false, text: 'just chatting', replyTarget: { threadId: ts } });
    expect(m.threadId).toBeUndefined();
    await fake.deliver({ chatType: 'group', chatId: 'C0GENERAL', userId: 'U2', text: 'in a thread', threadId: ts });
    const t = await rec.waitForMessage((x) => x.text === 'in a thread');
    expect(t).toMatchObject({ threadId: ts, replyTarget: { threadId: ts } });
  });

  it('a redelivery is handed over again under the same message id; a failed hand-over is not acknowledged', async () => {
    const { fake, rec } = await started();
    const { messageId: ts } = await fake.deliver({ chatType: 'direct', userId: 'U1', text: 'once' });
    await fake.waitForAck(ts);
    await fake.redeliver(ts);
    await until(() => rec.messages.length === 2);
    expect(rec.messages[1]?.messageId).toBe(rec.messages[0]?.messageId);

    let refused = 0;
    rec.onMessageHook = () => {
      refused++;
      throw new Error('inbox is full');
    };
    const { messageId: ts2 } = await fake.deliver({ chatType: 'direct', userId: 'U1', text: 'twice' });
    await until(() => refused === 1, HANG_MS, 'the failed hand-over');
    rec.onMessageHook = undefined;
    await fake.redeliver(ts2);
    await until(() => rec.messages.length === 4, HANG_MS, 'the redelivery handed over');
    // Acks go out on the one socket in order: once a later message's is in, the failed hand-over's would be too.
    const { messageId: ts3 } = await fake.deliver({ chatType: 'direct', userId: 'U1', text: 'later' });
    await fake.waitForAck(ts3);
    expect(fake.acks.filter((a) => a.messageId === ts2)).toHaveLength(1); // the redelivery's alone
    expect(rec.messages[3]).toMatchObject({ messageId: `DU1:${ts2}`, text: 'twice' });
  });

  it('ignores its own echoed posts and edits/deletions; other bots are flagged fromBot', async () => {
    const { fake, adapter, rec } = await started({ echoBotMessages: true });
    const sent = await adapter.send?.('C0GENERAL', 'from the bot');
    await fake.waitForAck(sent?.messageId ?? '');
    await fake.deliver({ chatType: 'group', chatId: 'C0GENERAL', userId: 'U1', text: 'from a user' });
    await rec.waitForMessage(() => true);
    expect(rec.messages.map((m) => m.text)).toEqual(['from a user']);
  });

  it('sends to a channel and to a user id, edits, and shows typing in a thread', async () => {
    const { fake, adapter } = await started();
    const a = await adapter.send?.('C0GENERAL', 'to the *channel*');
    expect(a).toMatchObject({ chatId: 'C0GENERAL' });
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'send', chatId: 'C0GENERAL', text: 'to the _channel_' });
    const b = await adapter.send?.('U9', 'to a user');
    expect(b?.chatId).toBe('DU9');
    await adapter.edit?.(a!, 'edited **now**');
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'edit', chatId: 'C0GENERAL', messageId: a?.messageId, text: 'edited *now*' });
    await adapter.typing?.({ chatId: 'C0GENERAL', chatType: 'group', threadId: a?.messageId ?? '' });
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'typing', chatId: 'C0GENERAL', threadId: a?.messageId });
    expect(await adapter.reply({ chatId: 'C0GENERAL', chatType: 'group' }, '   ')).toBeUndefined();
    const err = await adapter.send?.('bogus', 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelError);
    expect(err).toMatchObject({ kind: 'not_found', message: expect.stringContaining('channel_not_found') });
  });

  it('reads history since a date, oldest first, normalised, with bot messages flagged', async () => {
    const { fake, adapter } = await started();
    const base = Date.now() - 60_000;
    fake.addHistory({ chatType: 'group', chatId: 'C0HIST', userId: 'U1', userName: 'alice', text: 'too old', ts: base - 60_000 });
    const ids = [0, 1, 2].map(
      (i) => fake.addHistory({ chatType: 'group', chatId: 'C0HIST', userId: 'U1', userName: 'alice', text: `old ${i} <@UBOT>`, ts: base + i * 1000 }).messageId,
    );
    await adapter.send?.('C0HIST', 'bot **says**');
    const got = await adapter.readHistory?.('C0HIST', { since: new Date(base), limit: 50 });
    expect(got?.map((m) => m.text)).toEqual(['old 0', 'old 1', 'old 2', 'bot *says*']);
    expect(got?.[0]).toMatchObject({ messageId: `C0HIST:${ids[0]}`, chatType: 'group', senderName: 'alice', mentioned: true, ts: base });
    expect(got?.[0]?.fromBot).toBeUndefined();
    expect(got?.[3]).toMatchObject({ fromBot: true, senderId: 'UBOT' });
    const two = await adapter.readHistory?.('C0HIST', { since: new Date(base), limit: 2 });
    expect(two?.map((m) => m.text)).toEqual(['old 2', 'bot *says*']);
  });

  it('downloads an attached image with the bot token, and sends the token nowhere else', async () => {
    const { fake, adapter, rec } = await started();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    await fake.deliver({ chatType: 'direct', userId: 'U1', text: 'look', images: [{ mimeType: 'image/png', data: png, fileName: 'cat.png' }] });
    const m = await rec.waitForMessage(() => true);
    expect(m.images).toEqual([{ ref: expect.stringContaining('/files-pri/'), mimeType: 'image/png', fileName: 'cat.png' }]);
    expect(await adapter.downloadImage?.(m.images![0]!)).toEqual({ data: png, mimeType: 'image/png' });
    await expect(adapter.downloadImage?.({ ref: 'http://127.0.0.2:1/x.png' })).rejects.toThrow(/refusing to send the bot token/);
    fake.setRefuseConnections(true);
    await expect(adapter.downloadImage?.(m.images![0]!)).rejects.toMatchObject({ kind: 'auth' });
    fake.setRefuseConnections(false);
  });

  it('an attached document is a file, downloaded with the bot token within the limit (too_long past it)', async () => {
    const { fake, adapter, rec } = await started();
    const pdf = Buffer.from('%PDF-1.4 minutes');
    await fake.deliver({ chatType: 'direct', userId: 'U1', text: '', files: [{ mimeType: 'application/pdf', data: pdf, fileName: 'minutes.pdf' }] });
    const m = await rec.waitForMessage(() => true);
    expect(m.files).toEqual([{ ref: expect.stringContaining('/files-pri/'), fileName: 'minutes.pdf', mimeType: 'application/pdf', size: pdf.length }]);
    expect(m.images).toBeUndefined();
    expect(await adapter.downloadFile?.(m.files![0]!, { maxBytes: 1000 })).toEqual({ data: pdf, mimeType: 'application/pdf' });
    await expect(adapter.downloadFile?.(m.files![0]!, { maxBytes: 5 })).rejects.toMatchObject({ kind: 'too_long' });
  });

  it('sends files through files.uploadV2 (upload URL, bytes, completeUploadExternal) into the reply thread', async () => {
    const { fake, adapter } = await started();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 7, 7]);
    await adapter.sendFile?.({ chatId: 'C0GROUP', chatType: 'group', threadId: '1700000000.000100' }, { name: 'chart.png', mimeType: 'image/png', data: png });
    const csv = Buffer.from('a,b\n1,2\n');
    await adapter.sendFile?.({ chatId: 'D0U1', chatType: 'direct' }, { name: 'data.csv', mimeType: 'text/csv', data: csv });
    expect(fake.calls.map((c) => c.method).filter((m) => m.startsWith('files.'))).toEqual([
      'files.getUploadURLExternal',
      'files.completeUploadExternal',
      'files.getUploadURLExternal',
      'files.completeUploadExternal',
    ]);
    const sent = fake.outbound.filter((o) => o.file);
    expect(sent).toEqual([
      expect.objectContaining({
        kind: 'reply',
        chatId: 'C0GROUP',
        threadId: '1700000000.000100',
        file: { name: 'chart.png', mimeType: 'image/png', data: png, as: 'image' },
      }),
      expect.objectContaining({ kind: 'send', chatId: 'D0U1', file: { name: 'data.csv', mimeType: 'text/csv', data: csv, as: 'file' } }),
    ]);
    await expect(
      adapter.sendFile?.({ chatId: 'nope', chatType: 'group' }, { name: 'x.txt', mimeType: 'text/plain', data: Buffer.from('x') }),
    ).rejects.toMatchObject({
      name: 'ChannelError',
      message: expect.stringContaining('channel_not_found'),
    });
  });

  it('start rejects with a clear reason when the platform refuses or cannot be reached', async () => {
    const { fake, adapter, rec } = await setup();
    fake.setRefuseConnections(true);
    const err = await adapter.start(rec).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelError);
    expect(err).toMatchObject({ kind: 'auth', message: expect.stringMatching(/auth\.test.*invalid_auth/) });
    await adapter.stop();

    const wrongApp = await setup({}, { appToken: 'xoxb-not-an-app-token' });
    const app = await wrongApp.adapter.start(wrongApp.rec).catch((e: unknown) => e);
    expect(app).toMatchObject({ kind: 'auth', message: expect.stringMatching(/Socket Mode.*invalid_auth/) });
    expect(wrongApp.fake.connected()).toBe(false);
    await wrongApp.adapter.stop();

    const closed = await setup({}, { apiUrl: 'http://127.0.0.1:9/api/' });
    const down = await closed.adapter.start(closed.rec).catch((e: unknown) => e);
    expect(down).toMatchObject({ kind: 'network', message: expect.stringMatching(/auth\.test/) });
    await closed.adapter.stop();
  });

  it('reports a server-side drop and a refresh request as disconnected, then connected again', async () => {
    const { fake, rec } = await started();
    fake.dropConnections();
    await rec.waitForStatus('connected');
    expect(rec.statuses.map((s) => s.state)).toEqual(['disconnected', 'connected']);
    fake.sendDisconnect();
    await until(() => rec.statuses.length === 4);
    expect(rec.statuses.map((s) => s.state)).toEqual(['disconnected', 'connected', 'disconnected', 'connected']);
    expect(fake.connectionsOpened()).toBe(3);
    await fake.deliver({ chatType: 'direct', userId: 'U1', text: 'after reconnect' });
    await rec.waitForMessage((m) => m.text === 'after reconnect');
  });

  it('a token revoked during the reconnect is reported as failed, without crashing', async () => {
    const { fake, adapter, rec } = await setup();
    await adapter.start(rec);
    fake.setRefuseConnections(true);
    fake.dropConnections();
    const failed = await rec.waitForStatus('failed');
    expect(failed.reason).toMatch(/invalid_auth/);
    expect(rec.statuses.map((s) => s.state)).toEqual(['disconnected', 'failed']);
    await adapter.stop();
  });

  it('stops cleanly while a reconnect is pending, and stop is idempotent', async () => {
    const { fake, adapter, rec } = await setup();
    const before = resourceTally();
    await adapter.start(rec);
    fake.dropConnections();
    await rec.waitForStatus('disconnected');
    await adapter.stop();
    await adapter.stop();
    // Nothing is left that could reconnect: no timer and no socket beyond those from before the start.
    await releasedTo(before);
    expect(fake.connected()).toBe(false);
    expect(rec.statuses.map((s) => s.state)).toEqual(['disconnected']);

    const again = await setup();
    const beforeAgain = resourceTally();
    await again.adapter.start(again.rec);
    again.fake.dropConnections();
    // Stopped inside the first reconnect attempt: its request for a new socket has reached the platform.
    const opens = () => again.fake.calls.filter((c) => c.method === 'apps.connections.open').length;
    await until(() => opens() === 2, HANG_MS, 'the reconnect attempt');
    await again.adapter.stop();
    await releasedTo(beforeAgain);
    expect(again.fake.connected()).toBe(false);
  });
});
