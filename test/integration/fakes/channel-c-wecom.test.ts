/**
 * Self-test of the fake WeCom AI bot against the real `@wecom/aibot-node-sdk` 1.0.7, driven the way the channel_c
 * adapter will drive it: WSClient with `wsUrl`, silent logger, short reconnect delays, events for status.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  WSClient,
  type EventMessage,
  type FileMessage,
  type Logger,
  type TextMessage,
  type WSClientEventMap,
  type WSClientOptions,
  type WsFrame,
} from '@wecom/aibot-node-sdk';
import { startFakeWecom, type FakeWecom } from '../../fakes/platforms/channel-c-wecom.js';
import { openHandles } from '../../helpers/resources.js';
import { until } from '../../helpers/wait.js';

const silentLogger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

let fake: FakeWecom;
const clients: WSClient[] = [];

/** The options an adapter passes: wsUrl (NOT websocketUrl), a logger, and bounded retries. */
function newClient(extra: Partial<WSClientOptions> = {}): { client: WSClient; texts: Array<WsFrame<TextMessage>> } {
  const cfg = fake.channelConfig;
  const client = new WSClient({
    botId: String(cfg.botId),
    secret: String(cfg.secret),
    wsUrl: String(cfg.websocketUrl),
    logger: silentLogger,
    reconnectInterval: 20,
    maxReconnectAttempts: 5,
    maxAuthFailureAttempts: 2,
    ...extra,
  });
  const texts: Array<WsFrame<TextMessage>> = [];
  client.on('message.text', (f) => texts.push(f));
  client.on('error', () => undefined); // eventemitter3: an unhandled 'error' is silently dropped, not thrown
  clients.push(client);
  return { client, texts };
}

async function connected(extra: Partial<WSClientOptions> = {}) {
  const c = newClient(extra);
  const authenticated = once(c.client, 'authenticated');
  c.client.connect();
  await authenticated;
  return c;
}

/** Next emission of a WSClient event (an eventemitter3 emitter: node:events once() does not type-check). */
function once<K extends keyof WSClientEventMap>(client: WSClient, event: K): Promise<Parameters<WSClientEventMap[K]>> {
  const emitter = client as unknown as { once(e: string, fn: (...args: unknown[]) => void): unknown };
  return new Promise((resolve) => emitter.once(event, (...args) => resolve(args as Parameters<WSClientEventMap[K]>)));
}

beforeEach(async () => {
  fake = await startFakeWecom();
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.removeAllListeners().disconnect();
  await fake.close();
  vi.restoreAllMocks();
});

describe('fake WeCom AI bot (channel_c) with @wecom/aibot-node-sdk 1.0.7', () => {
  it('authenticates, delivers a DM, and takes a multi-frame stream reply with receipts; first frame = ack', async () => {
    const { client, texts } = await connected();
    expect(fake.connected()).toBe(true);
    expect(fake.frames[0]).toMatchObject({ cmd: 'aibot_subscribe', body: { bot_id: 'fake-bot-id', secret: 'fake-secret' } });
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'zhangsan', text: 'hello' });
    await until(() => texts.length === 1);
    const frame = texts[0]!;
    expect(frame.body).toMatchObject({
      msgid: messageId,
      chattype: 'single',
      from: { userid: 'zhangsan' },
      msgtype: 'text',
      text: { content: 'hello' },
      aibotid: fake.botUserId,
      response_url: expect.stringContaining('/cgi-bin/aibot/response'),
    });
    expect(frame.body?.chatid).toBeUndefined(); // DMs carry no chatid: key them by from.userid
    expect(fake.acks).toHaveLength(0);
    const first = await client.replyStream(frame, 'stream-1', 'Hel');
    expect(first).toMatchObject({ headers: { req_id: frame.headers.req_id }, errcode: 0 });
    await fake.waitForAck(messageId);
    await client.replyStream(frame, 'stream-1', 'Hello, wor');
    await client.replyStream(frame, 'stream-1', 'Hello, world!', true);
    const frames = fake.outbound.filter((o) => o.kind === 'stream');
    expect(frames.map((o) => [o.chatId, o.text, o.finished, o.messageId, o.replyTo])).toEqual([
      ['zhangsan', 'Hel', false, 'stream-1', messageId],
      ['zhangsan', 'Hello, wor', false, 'stream-1', messageId],
      ['zhangsan', 'Hello, world!', true, 'stream-1', messageId],
    ]);
    expect(fake.acks).toHaveLength(1);
    // A finished stream cannot be updated; the SDK rejects with the receipt frame itself, not an Error.
    await expect(client.replyStream(frame, 'stream-1', 'more')).rejects.toMatchObject({ errcode: 846608 });
  });

  it('delivers a group @mention with chatid and the "@BotName " prefix; drops group messages without one', async () => {
    const { client, texts } = await connected();
    const { messageId } = await fake.deliver({ chatType: 'group', chatId: 'wrkGroup1', userId: 'lisi', text: 'status?', mentionBot: true });
    await until(() => texts.length === 1);
    expect(texts[0]!.body).toMatchObject({
      msgid: messageId,
      chattype: 'group',
      chatid: 'wrkGroup1',
      from: { userid: 'lisi' },
      text: { content: `@${fake.botName} status?` },
    });
    await client.replyStream(texts[0]!, 's-group', 'all good', true);
    expect(await fake.waitForOutbound((o) => o.kind === 'stream')).toMatchObject({ chatId: 'wrkGroup1', finished: true });
    await fake.deliver({ chatType: 'group', chatId: 'wrkGroup1', userId: 'lisi', text: 'not for the bot' });
    // A later @mention arrives on the same socket after anything the unmentioned one would have pushed.
    await fake.deliver({ chatType: 'group', chatId: 'wrkGroup1', userId: 'lisi', text: 'marker', mentionBot: true });
    await until(() => texts.length === 2);
    expect(texts.map((t) => t.body?.text?.content)).toEqual([`@${fake.botName} status?`, `@${fake.botName} marker`]);
  });

  it('sends proactive markdown with aibot_send_msg and replies through response_url', async () => {
    const { client, texts } = await connected();
    const receipt = await client.sendMessage('zhangsan', { msgtype: 'markdown', markdown: { content: '**daily report**' } });
    expect(receipt.errcode).toBe(0);
    expect(await fake.waitForOutbound((o) => o.kind === 'send')).toMatchObject({ chatId: 'zhangsan', text: '**daily report**', format: 'markdown' });
    expect(fake.frames.at(-1)).toMatchObject({ cmd: 'aibot_send_msg', body: { chatid: 'zhangsan', msgtype: 'markdown' } });
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'wangwu', text: 'hi' });
    await until(() => texts.length === 1);
    const res = await fetch(String(texts[0]!.body?.response_url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ msgtype: 'markdown', markdown: { content: 'late answer' } }),
    });
    expect(await res.json()).toEqual({ errcode: 0, errmsg: 'ok' });
    expect(await fake.waitForOutbound((o) => o.kind === 'reply')).toMatchObject({ chatId: 'wangwu', text: 'late answer', replyTo: messageId });
  });

  it("serves a user's file encrypted with the message's aeskey: the SDK's downloadFile decrypts it and reads the name", async () => {
    const { client } = await connected();
    const files: Array<WsFrame<FileMessage>> = [];
    client.on('message.file', (f) => files.push(f));
    const data = Buffer.from('quarterly numbers\n'.repeat(7));
    await fake.deliver({ chatType: 'direct', userId: 'zhangsan', text: '', files: [{ mimeType: 'text/plain', data, fileName: '报告 Q3.txt' }] });
    await until(() => files.length === 1);
    const file = files[0]!.body!.file;
    expect(file).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/media\//), aeskey: expect.any(String) });
    const raw = Buffer.from(await (await fetch(file.url)).arrayBuffer());
    expect(raw.length % 32).toBe(0);
    expect(raw.includes(data)).toBe(false);
    expect(await client.downloadFile(file.url, file.aeskey)).toEqual({ buffer: data, filename: '报告 Q3.txt' });
  });

  it('takes uploads the way the SDK sends them (init, chunks counted from 0, finish with md5) and sends them as file and image', async () => {
    const { client } = await connected();
    const pdf = Buffer.alloc(1_200_000, 0x25); // three chunks of at most 512 KB
    const up = await client.uploadMedia(pdf, { type: 'file', filename: 'big.pdf' });
    expect(fake.frames.filter((f) => f.cmd === 'aibot_upload_media_chunk').map((f) => f.body?.chunk_index)).toEqual(expect.arrayContaining([0, 1, 2]));
    await client.sendMediaMessage('zhangsan', 'file', up.media_id);
    const png = await client.uploadMedia(Buffer.alloc(64, 0x89), { type: 'image', filename: 'chart.png' });
    await client.sendMediaMessage('zhangsan', 'image', png.media_id);
    const sent = fake.outbound.filter((o) => o.file).map((o) => ({ chatId: o.chatId, ...o.file, data: o.file?.data.length }));
    expect(sent).toEqual([
      { chatId: 'zhangsan', name: 'big.pdf', mimeType: 'application/pdf', data: pdf.length, as: 'file' },
      { chatId: 'zhangsan', name: 'chart.png', mimeType: 'image/png', data: 64, as: 'image' },
    ]);
    // WeCom's temporary-media rules: more than 5 bytes, pictures JPG/PNG, a media_id of the right type.
    await expect(client.uploadMedia(Buffer.from('tiny'), { type: 'file', filename: 'a.txt' })).rejects.toMatchObject({ errcode: 40005 });
    await expect(client.uploadMedia(Buffer.alloc(64), { type: 'image', filename: 'pic.webp' })).rejects.toMatchObject({ errcode: 40005 });
    await expect(client.sendMediaMessage('zhangsan', 'image', up.media_id)).rejects.toMatchObject({ errcode: 40007 });
    await expect(client.sendMediaMessage('zhangsan', 'file', 'media_unknown')).rejects.toMatchObject({ errcode: 40007 });
  });

  it('records a button card; a press is a template_card_event (documented nested form) whose req_id takes one update of that task', async () => {
    const { client } = await connected();
    const events: Array<WsFrame<EventMessage>> = [];
    client.on('event.template_card_event', (f) => events.push(f as WsFrame<EventMessage>));
    const card = {
      card_type: 'button_interaction',
      main_title: { title: 'Pick' },
      button_list: [
        { text: 'Yes', key: 'k-yes' },
        { text: 'No', key: 'k-no' },
      ],
      task_id: 'task_1',
    };
    await client.sendMessage('zhangsan', { msgtype: 'template_card', template_card: card });
    expect(await fake.waitForOutbound((o) => o.format === 'template_card')).toMatchObject({
      chatId: 'zhangsan',
      messageId: 'task_1',
      buttons: [
        { label: 'Yes', value: 'k-yes' },
        { label: 'No', value: 'k-no' },
      ],
    });
    await expect(client.sendMessage('zhangsan', { msgtype: 'template_card', template_card: card })).rejects.toMatchObject({ errcode: 40000 });
    await fake.press({ messageId: 'task_1', label: 'No', userId: 'lisi' });
    await until(() => events.length === 1);
    expect(events[0]!.body).toMatchObject({
      chattype: 'single',
      from: { userid: 'lisi' },
      msgtype: 'event',
      event: { eventtype: 'template_card_event', template_card_event: { card_type: 'button_interaction', event_key: 'k-no', task_id: 'task_1' } },
    });
    await expect(client.updateTemplateCard(events[0]!, { ...card, task_id: 'task_2' })).rejects.toMatchObject({ errcode: 40000 });
    await client.updateTemplateCard(events[0]!, { ...card, main_title: { title: 'Done' } }, ['lisi']);
    expect(fake.cardUpdates).toEqual([
      { taskId: 'task_1', userids: ['lisi'], card: expect.objectContaining({ main_title: { title: 'Done' } }), at: expect.any(Number) },
    ]);
    await expect(client.updateTemplateCard({ headers: { req_id: 'not-an-event' } }, card)).rejects.toMatchObject({ errcode: 846605 });
  });

  it('rejects CJK content over 20 480 UTF-8 bytes on streams and proactive markdown', async () => {
    const { client, texts } = await connected();
    await fake.deliver({ chatType: 'direct', userId: 'zhangsan', text: 'write a lot' });
    await until(() => texts.length === 1);
    const over = '中'.repeat(6_827); // 20 481 bytes but only 6 827 characters
    const err: unknown = await client.replyStream(texts[0]!, 's-big', over).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(Error); // an errcode rejection is the raw receipt frame
    expect(err).toMatchObject({ headers: { req_id: texts[0]!.headers.req_id }, errcode: 40058 });
    await expect(client.sendMessage('zhangsan', { msgtype: 'markdown', markdown: { content: over } })).rejects.toMatchObject({ errcode: 40058 });
    expect((await client.replyStream(texts[0]!, 's-big', over.slice(1), true)).errcode).toBe(0); // 20 478 bytes
    expect(fake.rejections.map((r) => [r.method, r.reason])).toEqual([
      ['aibot_respond_msg', 'content over 20480 bytes'],
      ['aibot_send_msg', 'content over 20480 bytes'],
    ]);
    expect(fake.outbound.map((o) => o.kind)).toEqual(['stream']);
  });

  it('redelivers the same msgid with a new req_id; replying to the redelivery acks it', async () => {
    const { client, texts } = await connected();
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'zhangsan', text: 'are you there?' });
    await until(() => texts.length === 1);
    await fake.redeliver(messageId);
    await until(() => texts.length === 2);
    expect(texts[1]!.body?.msgid).toBe(messageId);
    expect(texts[1]!.headers.req_id).not.toBe(texts[0]!.headers.req_id);
    await client.replyStream(texts[1]!, 's-1', 'yes', true);
    await fake.waitForAck(messageId);
    // A req_id the platform never issued is refused.
    await expect(client.replyStream({ headers: { req_id: 'made-up' } }, 's-2', 'x', true)).rejects.toMatchObject({ errcode: 846605 });
  });

  it('refused auth: error events, backoff, then WS_AUTH_FAILURE_EXHAUSTED; a retry needs disconnect() + connect()', async () => {
    fake.setRefuseConnections(true);
    const { client } = newClient();
    const errors: Array<Error & { code?: string }> = [];
    const attempts: number[] = [];
    client.on('error', (e) => errors.push(e));
    client.on('reconnecting', (n) => attempts.push(n));
    client.connect();
    await until(() => errors.some((e) => e.code === 'WS_AUTH_FAILURE_EXHAUSTED'));
    expect(errors[0]!.message).toBe('Authentication failed: invalid bot_id or secret (code: 853000)');
    expect(attempts).toEqual([1, 2]); // maxAuthFailureAttempts: 2 → 3 subscribes in all
    expect(fake.stats.refused).toBe(3);
    expect(client.isConnected).toBe(false);
    fake.setRefuseConnections(false);
    client.connect(); // ignored: WSClient still thinks it is started ("Client already connected")
    expect(attempts).toEqual([1, 2]); // nothing scheduled either
    const authenticated = once(client, 'authenticated');
    client.disconnect();
    client.connect();
    await authenticated;
    expect(fake.connected()).toBe(true);
    // The connection after disconnect() is the fourth subscribe: the ignored connect() made none.
    expect(fake.stats.subscribes).toBe(4);
  });

  it('a second subscriber gets the bot; the first receives disconnected_event and stays down', async () => {
    const first = await connected();
    const kicked = once(first.client, 'event.disconnected_event');
    const disconnected = once(first.client, 'disconnected');
    // A reconnect would be scheduled (and announced) when the socket closes: count the announcements.
    const reconnects: number[] = [];
    first.client.on('reconnecting', (n) => reconnects.push(n));
    const second = await connected();
    await kicked;
    expect(await disconnected).toEqual(['New connection established, server disconnected this connection']);
    expect(first.client.isConnected).toBe(false);
    await fake.deliver({ chatType: 'direct', userId: 'zhangsan', text: 'who gets this?' });
    await until(() => second.texts.length === 1);
    // By then the first socket had long closed: no reconnect was scheduled, none subscribed.
    expect(reconnects).toEqual([]);
    expect(fake.stats.subscribes).toBe(2);
    expect(first.texts).toHaveLength(0);
  });

  it('reconnects after a server drop, keeps heartbeats answered, and disconnect() leaves no handle behind', async () => {
    const { client, texts } = await connected({ heartbeatInterval: 30 });
    await fake.deliver({ chatType: 'direct', userId: 'zhangsan', text: 'before the drop' });
    await until(() => texts.length === 1);
    const reconnecting = once(client, 'reconnecting');
    fake.dropConnections();
    expect(await reconnecting).toEqual([1]);
    await once(client, 'authenticated');
    // The callback's req_id died with its connection: answer proactively instead.
    await expect(client.replyStream(texts[0]!, 's-old', 'late', true)).rejects.toMatchObject({ errcode: 846605 });
    await until(() => fake.stats.pings >= 3); // three 30 ms heartbeats answered: still connected
    expect(client.isConnected).toBe(true);
    await client.sendMessage('zhangsan', { msgtype: 'markdown', markdown: { content: 'back' } });
    const closed = once(client, 'disconnected');
    client.disconnect(); // terminate(): no close handshake, clears heartbeat, pending acks and reconnect timer
    await closed;
    await fake.close();
    // Nothing that keeps the event loop alive: no timer (heartbeat, reply-ack, reconnect) and no socket.
    expect(await openHandles({ servers: false })).toEqual([]);
  });
});
