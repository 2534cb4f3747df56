/**
 * Self-test of the fake Lark platform against the real @larksuiteoapi/node-sdk 1.74.0, driven the way an
 * adapter would drive it (WSClient + EventDispatcher for events, Client for REST).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as lark from '@larksuiteoapi/node-sdk';
import { startFakeLark, type LarkExtras } from '../../fakes/platforms/channel-a-lark.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { releasedTo, resourceTally, type ResourceTally } from '../../helpers/resources.js';
import { poll, until } from '../../helpers/wait.js';

type Fake = FakePlatform & LarkExtras;
type ReceiveEvent = Parameters<NonNullable<Parameters<lark.EventDispatcher['register']>[0]['im.message.receive_v1']>>[0];

const sdkErrors: unknown[][] = [];
const logger = { error: (...a: unknown[]) => void sdkErrors.push(a), warn: () => {}, info: () => {}, debug: () => {}, trace: () => {} };

/** The Lark error code of a failed SDK call (axios error: response.data.code). */
async function larkCode(p: Promise<unknown>): Promise<number | undefined> {
  try {
    await p;
  } catch (e) {
    return (e as { response?: { data?: { code?: number } } }).response?.data?.code;
  }
  throw new Error('expected the call to fail');
}

describe('fake Lark (channel_a) against @larksuiteoapi/node-sdk', () => {
  let fake: Fake;
  let ws: lark.WSClient;
  let client: lark.Client;
  const received: ReceiveEvent[] = [];
  const cardActions: Array<Record<string, unknown>> = [];
  let handlerDelayMs = 0;
  let handlerThrows = false;
  let before: ResourceTally;
  let reconnected = 0;

  beforeAll(async () => {
    before = resourceTally();
    fake = await startFakeLark();
    const { appId, appSecret, domain } = fake;
    const dispatcher = new lark.EventDispatcher({ loggerLevel: lark.LoggerLevel.error, logger }).register({
      'im.message.receive_v1': async (data) => {
        received.push(data);
        if (handlerDelayMs) await new Promise((r) => setTimeout(r, handlerDelayMs));
        if (handlerThrows) throw new Error('handler failed');
      },
      'card.action.trigger': async (data: Record<string, unknown>) => {
        cardActions.push(data);
        return { toast: { type: 'info', content: 'got it' } };
      },
    });
    let ready!: () => void;
    const isReady = new Promise<void>((r) => (ready = r));
    ws = new lark.WSClient({
      appId,
      appSecret,
      domain,
      loggerLevel: lark.LoggerLevel.error,
      logger,
      onReady: () => ready(),
      onReconnected: () => void reconnected++,
    });
    await ws.start({ eventDispatcher: dispatcher }); // resolves before the connection exists
    await isReady;
    await fake.waitForConnection();
    client = new lark.Client({ appId, appSecret, domain, cache: new lark.DefaultCache(), loggerLevel: lark.LoggerLevel.error, logger });
  });

  afterAll(async () => {
    ws?.close({ force: true });
    await fake?.close();
  });

  it('connects: endpoint discovery, websocket, ping answered with pong', async () => {
    expect(fake.connected()).toBe(true);
    expect(fake.connectionCount()).toBe(1);
    await poll(() => fake.pingCount() >= 1); // the SDK pings as soon as the socket opens (pong errors would be logged)
    expect(fake.badFrames).toEqual([]);
  });

  it('delivers a DM in 3 fragments and records the ack', async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', userName: 'Alice', text: 'hi there' });
    const ev = await poll(() => received.find((e) => e.message.message_id === messageId));
    expect(ev.message.chat_type).toBe('p2p');
    expect(ev.message.chat_id).toBe(fake.dmChatId('ou_alice'));
    expect(ev.message.message_type).toBe('text');
    expect(JSON.parse(ev.message.content)).toEqual({ text: 'hi there' });
    expect(ev.sender.sender_id?.open_id).toBe('ou_alice');
    expect(ev.event_type).toBe('im.message.receive_v1');
    expect(fake.deliveries.at(-1)?.fragments).toBe(3);
    const ack = await fake.waitForAck(messageId);
    expect(fake.ackLog.find((a) => a === ack)?.code).toBe(200);
  });

  it('delivers a group @mention with mentions[] and placeholder keys', async () => {
    const info = (await client.request({ url: '/open-apis/bot/v3/info', method: 'GET' })) as { bot: { open_id: string; app_name: string } };
    expect(info.bot.open_id).toBe(fake.botUserId);
    const { messageId } = await fake.deliver({
      chatType: 'group',
      chatId: 'oc_group1',
      userId: 'ou_bob',
      userName: 'Bob',
      text: 'hello',
      mentionBot: true,
      mentionUsers: [{ userId: 'ou_carol', userName: 'Carol' }],
    });
    const ev = await poll(() => received.find((e) => e.message.message_id === messageId));
    expect(ev.message.chat_type).toBe('group');
    expect(JSON.parse(ev.message.content)).toEqual({ text: '@_user_1 hello @_user_2' });
    const bot = ev.message.mentions?.find((m) => m.id.open_id === info.bot.open_id);
    expect(bot?.key).toBe('@_user_1');
    expect(ev.message.mentions?.[1]?.name).toBe('Carol');
    await fake.waitForAck(messageId);
  });

  it('acks only after the handler resolves; a throwing handler acks with code 500', async () => {
    handlerDelayMs = 300;
    const t0 = Date.now();
    const slow = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'slow' });
    const ack = await fake.waitForAck(slow.messageId);
    expect(ack.at - t0).toBeGreaterThanOrEqual(290);
    handlerDelayMs = 0;
    handlerThrows = true;
    const bad = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'boom' });
    await fake.waitForAck(bad.messageId);
    handlerThrows = false;
    expect(fake.ackLog.find((a) => a.messageId === bad.messageId)?.code).toBe(500);
  });

  it('replies, sends proactively (chat_id and open_id), edits text and patches a card', async () => {
    const target = fake.messages.get([...fake.messages.keys()].find((k) => fake.messages.get(k)?.chatId === 'oc_group1') ?? '');
    const r = await client.im.v1.message.reply({
      path: { message_id: target!.messageId },
      data: { msg_type: 'text', content: JSON.stringify({ text: 'pong' }) },
    });
    const reply = await fake.waitForOutbound((o) => o.kind === 'reply' && o.messageId === r.data?.message_id);
    expect(reply).toMatchObject({ chatId: 'oc_group1', text: 'pong', format: 'text', replyTo: target!.messageId });

    const post = { zh_cn: { title: '', content: [[{ tag: 'md', text: '**bold** and `code`' }]] } };
    const s1 = await client.im.v1.message.create({
      params: { receive_id_type: 'chat_id' },
      data: { receive_id: 'oc_group1', msg_type: 'post', content: JSON.stringify(post) },
    });
    expect(await fake.waitForOutbound((o) => o.messageId === s1.data?.message_id)).toMatchObject({ kind: 'send', text: '**bold** and `code`', format: 'post' });

    const s2 = await client.im.v1.message.create({
      params: { receive_id_type: 'open_id' },
      data: { receive_id: 'ou_alice', msg_type: 'text', content: JSON.stringify({ text: 'proactive' }) },
    });
    expect(s2.data?.chat_id).toBe(fake.dmChatId('ou_alice'));
    expect(s2.data?.sender?.sender_type).toBe('app');

    await client.im.v1.message.update({
      path: { message_id: s2.data!.message_id! },
      data: { msg_type: 'text', content: JSON.stringify({ text: 'proactive, edited' }) },
    });
    expect(await fake.waitForOutbound((o) => o.kind === 'edit' && o.messageId === s2.data?.message_id)).toMatchObject({
      text: 'proactive, edited',
      chatId: fake.dmChatId('ou_alice'),
    });
    // a card cannot be edited with PUT; the user's message cannot be edited at all
    expect(await larkCode(client.im.v1.message.update({ path: { message_id: target!.messageId }, data: { msg_type: 'text', content: '{"text":"x"}' } }))).toBe(
      230027,
    );

    const card = (md: string) => JSON.stringify({ schema: '2.0', config: { update_multi: true }, body: { elements: [{ tag: 'markdown', content: md }] } });
    const c = await client.im.v1.message.create({
      params: { receive_id_type: 'chat_id' },
      data: { receive_id: 'oc_group1', msg_type: 'interactive', content: card('v1') },
    });
    await client.im.v1.message.patch({ path: { message_id: c.data!.message_id! }, data: { content: card('v2') } });
    expect(await fake.waitForOutbound((o) => o.kind === 'edit' && o.messageId === c.data?.message_id)).toMatchObject({ text: 'v2', format: 'interactive' });
  });

  it('records a card’s buttons; press() sends card.action.trigger over the WS and records the answer', async () => {
    const chatId = fake.dmChatId('ou_alice');
    const card = {
      elements: [
        { tag: 'markdown', content: 'Allow?' },
        {
          tag: 'action',
          actions: [
            { tag: 'button', text: { tag: 'plain_text', content: 'Yes' }, value: { command: '/allow x' } },
            { tag: 'button', text: { tag: 'plain_text', content: 'No' }, value: 'no' },
          ],
        },
      ],
    };
    const res = await client.im.v1.message.create({
      params: { receive_id_type: 'chat_id' },
      data: { receive_id: chatId, msg_type: 'interactive', content: JSON.stringify(card) },
    });
    const messageId = res.data?.message_id ?? '';
    const sent = fake.outbound.find((o) => o.messageId === messageId);
    expect(sent?.text).toBe('Allow?');
    expect(sent?.buttons).toEqual([
      { label: 'Yes', value: '/allow x' },
      { label: 'No', value: 'no' },
    ]);

    const { eventId } = await fake.press({ messageId, label: 'Yes', userId: 'ou_bob' });
    const got = await poll(() => cardActions.find((a) => a.event_id === eventId));
    expect(got.event_type).toBe('card.action.trigger');
    expect(got.operator).toMatchObject({ open_id: 'ou_bob' });
    expect(got.action).toEqual({ tag: 'button', value: { command: '/allow x' } });
    expect(got.context).toEqual({ open_message_id: messageId, open_chat_id: chatId });
    expect(String(got.token)).toMatch(/^c-/);
    await poll(() => fake.cardAnswers.find((a) => a.eventId === eventId));
    expect(fake.cardAnswers.find((a) => a.eventId === eventId)?.answer).toEqual({ toast: { type: 'info', content: 'got it' } });
    await expect(fake.press({ messageId, label: 'Maybe', userId: 'ou_bob' })).rejects.toThrow(/no button/);
  });

  it('limits edits to 20 per message (230072)', async () => {
    const s = await client.im.v1.message.create({
      params: { receive_id_type: 'chat_id' },
      data: { receive_id: 'oc_group1', msg_type: 'text', content: '{"text":"e0"}' },
    });
    const edit = (i: number) =>
      client.im.v1.message.update({ path: { message_id: s.data!.message_id! }, data: { msg_type: 'text', content: JSON.stringify({ text: `e${i}` }) } });
    for (let i = 1; i <= 20; i++) await edit(i);
    expect(await larkCode(edit(21))).toBe(230072);
  });

  it('reads history with seconds timestamps and page tokens', async () => {
    const hourAgo = Date.now() - 3600_000;
    const h1 = fake.addHistory({ chatType: 'group', chatId: 'oc_hist', userId: 'ou_dave', text: 'while you were away', ts: hourAgo });
    fake.addHistory({ chatType: 'group', chatId: 'oc_hist', userId: 'ou_dave', text: 'second', ts: hourAgo + 1000 });
    fake.addHistory({ chatType: 'group', chatId: 'oc_hist', userId: 'ou_dave', text: 'too old', ts: hourAgo - 7200_000 });
    await client.im.v1.message.create({
      params: { receive_id_type: 'chat_id' },
      data: { receive_id: 'oc_hist', msg_type: 'text', content: '{"text":"bot says"}' },
    });
    const texts: string[] = [];
    let pageToken: string | undefined;
    let pages = 0;
    do {
      const r = await client.im.v1.message.list({
        params: {
          container_id_type: 'chat',
          container_id: 'oc_hist',
          start_time: String(Math.floor((hourAgo - 60_000) / 1000)),
          end_time: String(Math.ceil(Date.now() / 1000)),
          sort_type: 'ByCreateTimeAsc',
          page_size: 2,
          page_token: pageToken,
        },
      });
      for (const it of r.data?.items ?? []) texts.push((JSON.parse(it.body!.content) as { text: string }).text);
      if (pages === 0) expect(r.data?.items?.[0]?.message_id).toBe(h1.messageId);
      pageToken = r.data?.has_more ? r.data.page_token : undefined;
      pages++;
    } while (pageToken);
    expect(texts).toEqual(['while you were away', 'second', 'bot says']);
    expect(pages).toBe(2);
  });

  it('delivers an image message and serves the image download', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'look', images: [{ mimeType: 'image/png', data: png }] });
    const ev = await poll(() => received.find((e) => e.message.message_id === messageId));
    expect(ev.message.message_type).toBe('post');
    const content = JSON.parse(ev.message.content) as { content: Array<Array<{ tag: string; image_key?: string }>> };
    const key = content.content.flat().find((e) => e.tag === 'img')!.image_key!;
    const res = await client.im.v1.messageResource.get({ path: { message_id: messageId, file_key: key }, params: { type: 'image' } });
    const chunks: Buffer[] = [];
    for await (const c of res.getReadableStream()) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(png)).toBe(true);
  });

  it('creates and streams a CardKit card with strictly increasing sequence', async () => {
    const spec = {
      schema: '2.0',
      config: { streaming_mode: true },
      body: { elements: [{ tag: 'markdown', element_id: 'stream_md', content: 'Thinking...' }] },
    };
    const created = await client.cardkit.v1.card.create({ data: { type: 'card_json', data: JSON.stringify(spec) } });
    const cardId = created.data!.card_id!;
    const parent = [...fake.messages.values()].find((m) => m.chatId === 'oc_group1' && m.sender.senderType === 'user')!;
    const ref = JSON.stringify({ type: 'card', data: { card_id: cardId } });
    const sent = await client.im.v1.message.reply({ path: { message_id: parent.messageId }, data: { msg_type: 'interactive', content: ref } });
    expect(await fake.waitForOutbound((o) => o.messageId === sent.data?.message_id)).toMatchObject({ kind: 'reply', text: 'Thinking...' });
    const steps = ['Hel', 'Hello', 'Hello world'];
    for (const [i, content] of steps.entries()) {
      await client.cardkit.v1.cardElement.content({
        path: { card_id: cardId, element_id: 'stream_md' },
        data: { content, sequence: i + 1, uuid: `c_${cardId}_${i + 1}` },
      });
    }
    const frames = fake.outbound.filter((o) => o.kind === 'stream' && o.messageId === sent.data?.message_id);
    expect(frames.map((f) => f.text)).toEqual(steps);
    expect(frames[0]?.chatId).toBe('oc_group1');
    const stale = client.cardkit.v1.cardElement.content({ path: { card_id: cardId, element_id: 'stream_md' }, data: { content: 'x', sequence: 2 } });
    expect(await larkCode(stale)).toBe(300317);
    await client.cardkit.v1.card.settings({
      path: { card_id: cardId },
      data: { settings: JSON.stringify({ config: { streaming_mode: false } }), sequence: 4 },
    });
    expect(await fake.waitForOutbound((o) => o.kind === 'stream' && !!o.finished)).toMatchObject({ text: 'Hello world' });
    const late = client.cardkit.v1.cardElement.content({ path: { card_id: cardId, element_id: 'stream_md' }, data: { content: 'late', sequence: 5 } });
    expect(await larkCode(late)).toBe(300309);
    expect(await larkCode(client.im.v1.message.reply({ path: { message_id: parent.messageId }, data: { msg_type: 'interactive', content: ref } }))).toBe(
      230099,
    );
  });

  it('rejects over-limit text (150,000 B) and post (30,000 B) with 230025', async () => {
    const send = (msg_type: string, content: string) =>
      client.im.v1.message.create({ params: { receive_id_type: 'chat_id' }, data: { receive_id: 'oc_group1', msg_type, content } });
    const n = fake.rejections.length;
    expect(await larkCode(send('text', JSON.stringify({ text: 'a'.repeat(150_000) })))).toBe(230025);
    await send('text', JSON.stringify({ text: 'a'.repeat(149_000) }));
    const post = (len: number) => JSON.stringify({ zh_cn: { title: '', content: [[{ tag: 'md', text: 'b'.repeat(len) }]] } });
    expect(await larkCode(send('post', post(30_000)))).toBe(230025);
    await send('post', post(29_900));
    expect(fake.rejections.slice(n).map((r) => r.method)).toEqual(['im.message.create', 'im.message.create']);
    expect(fake.limit).toEqual({ max: 30_000, unit: 'bytes' });
  });

  it('redelivers the same event_id and message_id', async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'again' });
    await fake.waitForAck(messageId);
    await fake.redeliver(messageId);
    const both = await poll(() => {
      const hits = received.filter((e) => e.message.message_id === messageId);
      return hits.length === 2 && hits;
    });
    expect(both[0]?.event_id).toBe(both[1]?.event_id);
    await poll(() => fake.acks.filter((a) => a.messageId === messageId).length === 2);
  });

  it('token traps: disableTokenCache sends no token (99991661); withTenantToken needs it; a foreign token is refused (99991663)', async () => {
    const noToken = new lark.Client({
      appId: fake.appId,
      appSecret: fake.appSecret,
      domain: fake.domain,
      disableTokenCache: true,
      loggerLevel: lark.LoggerLevel.error,
      logger,
    });
    expect(await larkCode(noToken.request({ url: '/open-apis/bot/v3/info', method: 'GET' }))).toBe(99991661);
    // withTenantToken() only takes effect with disableTokenCache: otherwise the SDK overwrites the header.
    expect(await larkCode(noToken.request({ url: '/open-apis/bot/v3/info', method: 'GET' }, lark.withTenantToken('t-bogus')))).toBe(99991663);
    await client.request({ url: '/open-apis/bot/v3/info', method: 'GET' }, lark.withTenantToken('t-bogus')); // overwritten: succeeds
    expect(fake.requests.at(-1)?.auth).not.toBe('Bearer t-bogus');
  });

  it('reconnects after the server drops the socket', async () => {
    fake.dropConnections();
    await poll(() => fake.connectionCount() === 2 && fake.connected());
    await poll(() => reconnected === 1);
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'ou_alice', text: 'after reconnect' });
    await fake.waitForAck(messageId);
  });

  it('refuses connections: endpoint code 514 → onError, token call fails', async () => {
    fake.setRefuseConnections(true);
    const failure = new Promise<Error>((resolve) => {
      const refused = new lark.WSClient({
        appId: fake.appId,
        appSecret: fake.appSecret,
        domain: fake.domain,
        loggerLevel: lark.LoggerLevel.fatal,
        onError: (e) => {
          refused.close({ force: true });
          resolve(e);
        },
      });
      void refused.start({ eventDispatcher: new lark.EventDispatcher({ loggerLevel: lark.LoggerLevel.error, logger }) });
    });
    expect((await failure).message).toMatch(/code=514/);
    const fresh = new lark.Client({
      appId: fake.appId,
      appSecret: fake.appSecret,
      domain: fake.domain,
      cache: new lark.DefaultCache(),
      loggerLevel: lark.LoggerLevel.error,
      logger,
    });
    expect(await larkCode(fresh.request({ url: '/open-apis/bot/v3/info', method: 'GET' }))).toBe(10014);
    expect(fake.rejections.some((r) => r.method === 'ws.endpoint')).toBe(true);
    fake.setRefuseConnections(false);
    expect(fake.connected()).toBe(true); // the existing connection is unaffected
  });

  it('redeliverAfterMs: an event not acked in time arrives again', async () => {
    const f2 = await startFakeLark({ redeliverAfterMs: 150 });
    const seen: string[] = [];
    const d = new lark.EventDispatcher({ loggerLevel: lark.LoggerLevel.error, logger }).register({
      'im.message.receive_v1': async (e) => {
        seen.push(e.event_id ?? '');
        // Not acked until the fake has delivered the event again, its redeliverAfterMs passed without an ack.
        await until(() => f2.deliveries.filter((x) => x.messageId === e.message.message_id).length >= 2);
      },
    });
    const c2 = new lark.WSClient({ appId: f2.appId, appSecret: f2.appSecret, domain: f2.domain, loggerLevel: lark.LoggerLevel.error, logger });
    await c2.start({ eventDispatcher: d });
    await f2.waitForConnection();
    const { messageId } = await f2.deliver({ chatType: 'direct', userId: 'ou_x', text: 'slow ack' });
    await poll(() => f2.acks.filter((a) => a.messageId === messageId).length === 2);
    expect(seen.length).toBe(2);
    expect(seen[0]).toBe(seen[1]);
    c2.close({ force: true });
    await f2.close();
  });

  it('shuts down cleanly: WSClient.close() then fake.close() leaves no sockets or timers', async () => {
    ws.close(); // graceful close frame; the fake's ws answers it
    await poll(() => !fake.connected());
    await fake.close();
    await releasedTo(before);
    // The only SDK error logs are the expected ones: the throwing handler and the 400s this file provoked.
    const text = (e: unknown[]): string => e.map((x) => (x instanceof Error ? x.message : JSON.stringify(x))).join(' ');
    expect(sdkErrors.filter((e) => !/handler failed|status code 400/.test(text(e)))).toEqual([]);
  });
});
