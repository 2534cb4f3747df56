/**
 * Self-test of the fake DingTalk against the real `dingtalk-stream` 2.1.5, driven the way the channel_b adapter drives
 * it: through the adapter's DingtalkStreamClient (redirect, leak fix, real stop, auth-failure signal).
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DWClient, TOPIC_CARD, TOPIC_ROBOT, type DWClientDownStream } from 'dingtalk-stream';
import type WebSocket from 'ws';
import { createSilentLogger } from '../../../src/core/logger.js';
import { DingtalkStreamClient, type StreamClientOptions } from '../../../src/channels/dingtalk/stream-client.js';
import { APPROVAL_CARD_TEMPLATE, startFakeDingtalk, type FakeDingtalk } from '../../fakes/platforms/channel-b-dingtalk.js';
import { openHandles } from '../../helpers/resources.js';
import { until } from '../../helpers/wait.js';

/** DWClient fields that are `private` in its .d.ts but plain JS properties at runtime. */
interface DWInternals {
  socket?: WebSocket;
  dw_url?: string;
  heartbeatIntervallId?: ReturnType<typeof setInterval>;
  reconnectInterval: number;
}

type GatewayOptions = Omit<StreamClientOptions, 'name' | 'log'>;

/** The production subclass (redirect, leak fix, real stop, status events) with a silent logger. */
class GatewayDWClient extends DingtalkStreamClient {
  constructor(o: GatewayOptions) {
    super({ name: 'channel_b', log: createSilentLogger(), ...o });
  }
}

interface RobotMessage {
  conversationId: string;
  conversationType: string;
  msgId: string;
  senderStaffId: string;
  senderNick: string;
  text: { content: string };
  sessionWebhook: string;
  sessionWebhookExpiredTime: number;
  chatbotUserId: string;
  robotCode: string;
  isInAtList?: boolean;
  atUsers?: Array<{ dingtalkId: string; staffId?: string }>;
}

let fake: FakeDingtalk;
let client: GatewayDWClient | undefined;
const received: Array<{ frame: DWClientDownStream; msg: RobotMessage }> = [];

function config() {
  const c = fake.channelConfig;
  return { clientId: String(c.clientId), clientSecret: String(c.clientSecret), apiBaseUrl: String(c.apiBaseUrl) };
}

async function startClient(opts: Partial<GatewayOptions> & { ack?: boolean } = {}): Promise<GatewayDWClient> {
  const c = new GatewayDWClient({ ...config(), reconnectMs: 50, heartbeatMs: 0, ...opts });
  c.registerCallbackListener(TOPIC_ROBOT, (frame) => {
    received.push({ frame, msg: JSON.parse(frame.data) as RobotMessage });
    if (opts.ack !== false) c.socketCallBackResponse(frame.headers.messageId, { success: true });
  });
  client = c;
  await c.connect();
  return c;
}

async function openApiToken(): Promise<string> {
  const res = await fetch(`${config().apiBaseUrl}/v1.0/oauth2/accessToken`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ appKey: config().clientId, appSecret: config().clientSecret }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { accessToken: string }).accessToken;
}

async function post(path: string, body: unknown, token?: string, method = 'POST') {
  const url = path.startsWith('http') ? path : `${config().apiBaseUrl}${path}`;
  const res = await fetch(url, {
    method,
    body: JSON.stringify(body),
    headers: {
      'content-type': 'application/json',
      ...(token ? { 'x-acs-dingtalk-access-token': token } : {}),
    },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Live setInterval handles from now on (the client's keep-alive timer is the only interval in play). */
function trackIntervals(): Set<unknown> {
  const live = new Set<unknown>();
  const realSet = globalThis.setInterval;
  const realClear = globalThis.clearInterval;
  vi.spyOn(globalThis, 'setInterval').mockImplementation(((fn: () => void, ms?: number) => {
    const t = realSet(fn, ms);
    live.add(t);
    return t;
  }) as typeof setInterval);
  vi.spyOn(globalThis, 'clearInterval').mockImplementation(((t?: ReturnType<typeof setInterval>) => {
    live.delete(t);
    realClear(t);
  }) as typeof clearInterval);
  return live;
}

/** setTimeout handles of one delay from now on: how many were pending at once, at most. */
function trackTimeouts(ms: number): { maxPending: number } {
  const pending = new Set<unknown>();
  const tally = { maxPending: 0 };
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: (...a: unknown[]) => void, delay?: number, ...args: unknown[]) => {
    if (delay !== ms) return realSet(fn, delay, ...args);
    const t: ReturnType<typeof setTimeout> = realSet(() => {
      pending.delete(t);
      fn(...args);
    }, delay);
    pending.add(t);
    tally.maxPending = Math.max(tally.maxPending, pending.size);
    return t;
  }) as typeof setTimeout);
  vi.spyOn(globalThis, 'clearTimeout').mockImplementation(((t?: ReturnType<typeof setTimeout>) => {
    pending.delete(t);
    realClear(t);
  }) as typeof clearTimeout);
  return tally;
}

beforeEach(async () => {
  vi.spyOn(console, 'info').mockImplementation(() => undefined); // SDK prints 'connect success' unconditionally
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  received.length = 0;
  fake = await startFakeDingtalk();
});

afterEach(async () => {
  await client?.stop();
  client = undefined;
  await fake.close();
  vi.restoreAllMocks();
});

describe('fake DingTalk (channel_b) with dingtalk-stream 2.1.5', () => {
  it('connects through the subclass, delivers a DM, records the ack, takes a sessionWebhook reply, echoes pings', async () => {
    await startClient();
    await fake.waitForConnection();
    expect(fake.subscriptions).toContainEqual({ type: 'CALLBACK', topic: TOPIC_ROBOT });
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'staff-1', userName: 'Alice', text: 'hello' });
    await fake.waitForAck(messageId);
    const { frame, msg } = received[0]!;
    expect(frame.type).toBe('CALLBACK');
    expect(msg).toMatchObject({
      conversationType: '1',
      msgId: messageId,
      senderStaffId: 'staff-1',
      senderNick: 'Alice',
      text: { content: 'hello' },
      chatbotUserId: fake.botUserId,
      robotCode: config().clientId,
    });
    expect(msg.sessionWebhookExpiredTime).toBeGreaterThan(Date.now());
    const r = await post(msg.sessionWebhook, { msgtype: 'text', text: { content: 'hi Alice' } });
    expect(r.body).toEqual({ errcode: 0, errmsg: 'ok' });
    const out = await fake.waitForOutbound((o) => o.kind === 'reply');
    expect(out).toMatchObject({ chatId: 'staff-1', text: 'hi Alice', format: 'text', replyTo: messageId });
    await fake.ping(); // SYSTEM ping → the SDK echoes {code:200, headers, message:'OK', data}
  });

  it('delivers a group @mention the DingTalk way and drops group messages without one', async () => {
    await startClient();
    const { messageId } = await fake.deliver({
      chatType: 'group',
      chatId: 'cidGroup1==',
      userId: 'staff-2',
      text: 'status? @Bob',
      mentionBot: true,
      mentionUsers: [{ userId: 'staff-9', userName: 'Bob' }],
    });
    await fake.waitForAck(messageId);
    const msg = received[0]!.msg;
    expect(msg).toMatchObject({ conversationType: '2', conversationId: 'cidGroup1==', isInAtList: true, text: { content: ' status? @Bob' } });
    expect(msg.atUsers).toEqual([{ dingtalkId: fake.botUserId }, { dingtalkId: expect.any(String), staffId: 'staff-9' }]);
    await post(msg.sessionWebhook, { msgtype: 'markdown', markdown: { title: 't', text: '**ok**' }, at: { atUserIds: ['staff-2'] } });
    expect(await fake.waitForOutbound((o) => o.kind === 'reply')).toMatchObject({ chatId: 'cidGroup1==', format: 'markdown', text: '**ok**' });
    await fake.deliver({ chatType: 'group', chatId: 'cidGroup1==', userId: 'staff-2', text: 'not for the bot' });
    // A later @mention is pushed on the same stream after anything the unmentioned one would have been.
    const marker = await fake.deliver({ chatType: 'group', chatId: 'cidGroup1==', userId: 'staff-2', text: 'marker', mentionBot: true });
    await fake.waitForAck(marker.messageId);
    expect(received.map((r) => r.msg.msgId)).toEqual([messageId, marker.messageId]);
  });

  it('sends proactively through the OpenAPI and streams an AI card', async () => {
    const token = await openApiToken();
    const md = JSON.stringify({ title: 'Report', text: '# done' });
    let r = await post(
      '/v1.0/robot/oToMessages/batchSend',
      { robotCode: config().clientId, userIds: ['staff-1'], msgKey: 'sampleMarkdown', msgParam: md },
      token,
    );
    expect(r.status).toBe(200);
    expect(r.body.processQueryKey).toEqual(expect.any(String));
    r = await post(
      '/v1.0/robot/groupMessages/send',
      { robotCode: config().clientId, openConversationId: 'cidGroup1==', msgKey: 'sampleText', msgParam: JSON.stringify({ content: 'ping' }) },
      token,
    );
    expect(r.status).toBe(200);
    expect(fake.outbound.map((o) => [o.kind, o.chatId, o.text, o.format])).toEqual([
      ['send', 'staff-1', '# done', 'sampleMarkdown'],
      ['send', 'cidGroup1==', 'ping', 'sampleText'],
    ]);
    expect((await post('/v1.0/robot/groupMessages/send', {}, 'wrong-token')).status).toBe(401);

    r = await post(
      '/v1.0/card/instances/createAndDeliver',
      {
        cardTemplateId: 'tpl.schema',
        outTrackId: 'card-1',
        openSpaceId: 'dtv1.card//IM_ROBOT.staff-1',
        callbackType: 'STREAM',
        cardData: { cardParamMap: { content: '' } },
      },
      token,
    );
    expect(r.body).toMatchObject({ success: true });
    const frame = (content: string, isFull: boolean, isFinalize: boolean) =>
      post('/v1.0/card/streaming', { outTrackId: 'card-1', guid: randomUUID(), key: 'content', content, isFull, isFinalize, isError: false }, token, 'PUT');
    await frame('Hel', true, false);
    await frame('lo', false, false);
    await frame('Hello, world', true, true);
    const frames = fake.outbound.filter((o) => o.kind === 'stream');
    expect(frames.map((o) => [o.chatId, o.text, o.finished, o.messageId])).toEqual([
      ['staff-1', 'Hel', false, 'card-1'],
      ['staff-1', 'Hello', false, 'card-1'],
      ['staff-1', 'Hello, world', true, 'card-1'],
    ]);
  });

  it('files: a file message carries a downloadCode that messageFiles/download turns into a URL; uploads go to /media/upload', async () => {
    await startClient();
    const token = await openApiToken();
    const data = Buffer.from('%PDF-1.4 fake');
    await fake.deliver({ chatType: 'direct', userId: 'staff-1', text: '', files: [{ mimeType: 'application/pdf', data, fileName: 'spec.pdf' }] });
    await until(() => received.length === 1);
    const msg = received[0]!.msg as unknown as { msgtype: string; content: { downloadCode: string; fileName: string } };
    expect(msg).toMatchObject({ msgtype: 'file', content: { downloadCode: expect.any(String), fileName: 'spec.pdf' } });
    expect((await post('/v1.0/robot/messageFiles/download', { downloadCode: msg.content.downloadCode, robotCode: config().clientId })).status).toBe(401);
    const r = await post('/v1.0/robot/messageFiles/download', { downloadCode: msg.content.downloadCode, robotCode: config().clientId }, token);
    expect(r.body).toEqual({ downloadUrl: expect.stringContaining('/download/') });
    expect(Buffer.from(await (await fetch(String(r.body.downloadUrl))).arrayBuffer())).toEqual(data);
    expect((await post('/v1.0/robot/messageFiles/download', { downloadCode: 'nope', robotCode: config().clientId }, token)).status).toBe(400);
    await expect(
      fake.deliver({ chatType: 'group', chatId: 'cidG==', userId: 'staff-1', text: '', mentionBot: true, files: [{ mimeType: 'text/plain', data }] }),
    ).rejects.toThrow(/one-to-one/);

    const upload = async (type: string, name: string, body: Buffer, accessToken = token) => {
      const form = new FormData();
      form.append('media', new Blob([new Uint8Array(body)], { type: 'application/pdf' }), name);
      const res = await fetch(`${config().apiBaseUrl}/media/upload?${new URLSearchParams({ access_token: accessToken, type })}`, {
        method: 'POST',
        body: form,
      });
      return (await res.json()) as { errcode: number; media_id?: string };
    };
    const up = await upload('file', 'report.pdf', data);
    expect(up).toMatchObject({ errcode: 0, media_id: expect.any(String) });
    expect((await upload('file', 'x.pdf', data, 'wrong')).errcode).toBe(40014);
    expect((await upload('image', 'x.pdf', data)).errcode).toBe(40005);
    const param = JSON.stringify({ mediaId: up.media_id, fileName: 'report.pdf', fileType: 'pdf' });
    await post('/v1.0/robot/oToMessages/batchSend', { robotCode: config().clientId, userIds: ['staff-1'], msgKey: 'sampleFile', msgParam: param }, token);
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'send', chatId: 'staff-1', format: 'sampleFile', file: { name: 'report.pdf', data, as: 'file' } });
    const bad = JSON.stringify({ photoURL: up.media_id });
    expect(
      (await post('/v1.0/robot/oToMessages/batchSend', { robotCode: config().clientId, userIds: ['staff-1'], msgKey: 'sampleImageMsg', msgParam: bad }, token))
        .status,
    ).toBe(400);
  });

  it('approval card: a press comes back as a card CALLBACK only for a STREAM card and a subscribed client, and is acked', async () => {
    const token = await openApiToken();
    const c = new GatewayDWClient({ ...config(), reconnectMs: 50, heartbeatMs: 0 });
    const presses: DWClientDownStream[] = [];
    c.registerCallbackListener(TOPIC_CARD, (frame) => {
      presses.push(frame);
      c.socketCallBackResponse(frame.headers.messageId, {});
    });
    client = c;
    await c.connect();
    const params = {
      markdown: 'Approve?',
      allowLabel: 'Allow',
      allowCommand: '/allow k1',
      denyLabel: 'Deny',
      denyCommand: '/deny k1',
      alwaysLabel: 'Always allow Bash',
      alwaysCommand: '/allow always k1',
    };
    const card = (outTrackId: string, extra: Record<string, unknown> = {}) =>
      post(
        '/v1.0/card/instances/createAndDeliver',
        { cardTemplateId: APPROVAL_CARD_TEMPLATE, outTrackId, openSpaceId: 'dtv1.card//IM_ROBOT.staff-1', cardData: { cardParamMap: params }, ...extra },
        token,
      );
    await card('appr-1', { callbackType: 'STREAM' });
    expect(fake.outbound.at(-1)).toMatchObject({
      kind: 'send',
      chatId: 'staff-1',
      text: 'Approve?',
      messageId: 'appr-1',
      buttons: [{ label: 'Allow', value: '/allow k1' }, {}, {}],
    });
    await fake.press({ messageId: 'appr-1', label: 'Deny', userId: 'staff-2' });
    await until(() => presses.length === 1);
    expect(presses[0]!.headers.topic).toBe('/v1.0/card/instances/callback');
    const data = JSON.parse(presses[0]!.data) as Record<string, unknown>;
    expect(data).toMatchObject({ type: 'actionCallback', userId: 'staff-2', outTrackId: 'appr-1', userIdType: 1 });
    expect(JSON.parse(String(data.value))).toEqual({ cardPrivateData: { actionIds: ['button_deny'], params: { command: '/deny k1' } } });
    await fake.waitForAck(`press:${presses[0]!.headers.messageId}`);

    await card('appr-2');
    await expect(fake.press({ messageId: 'appr-2', label: 'Allow', userId: 'staff-2' })).rejects.toThrow(/callbackType STREAM/);
    const { markdown: _, ...partial } = params;
    expect(
      (
        await post(
          '/v1.0/card/instances/createAndDeliver',
          { cardTemplateId: APPROVAL_CARD_TEMPLATE, outTrackId: 'appr-3', openSpaceId: 'dtv1.card//IM_ROBOT.staff-1', cardData: { cardParamMap: partial } },
          token,
        )
      ).status,
    ).toBe(400);
  });

  it('rejects over-limit text in bytes, expired session webhooks and unknown cards', async () => {
    await startClient();
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'staff-1', text: 'long please' });
    await fake.waitForAck(messageId);
    const hook = received[0]!.msg.sessionWebhook;
    const cjk = '中'.repeat(6_667); // 20 001 bytes, 6 667 chars
    const tooLong = await post(hook, { msgtype: 'text', text: { content: cjk } });
    expect(tooLong.body.errcode).not.toBe(0);
    expect((await post(hook, { msgtype: 'text', text: { content: cjk.slice(1) } })).body.errcode).toBe(0);
    const token = await openApiToken();
    const big = await post(
      '/v1.0/robot/oToMessages/batchSend',
      { robotCode: config().clientId, userIds: ['staff-1'], msgKey: 'sampleText', msgParam: JSON.stringify({ content: cjk }) },
      token,
    );
    expect(big.status).toBe(400);
    expect((await post('/v1.0/card/streaming', { outTrackId: 'nope', content: 'x', isFull: true }, token, 'PUT')).status).toBe(404);
    fake.expireSessionWebhooks();
    expect((await post(hook, { msgtype: 'text', text: { content: 'late' } })).body).toEqual({ errcode: 300001, errmsg: 'session 不存在' });
    expect(fake.rejections.map((r) => r.method)).toEqual([
      'POST /robot/sendBySession',
      'POST /v1.0/robot/oToMessages/batchSend',
      'PUT /v1.0/card/streaming',
      'POST /robot/sendBySession',
    ]);
    expect(fake.outbound.filter((o) => o.kind === 'reply')).toHaveLength(1);
  });

  it('re-pushes an unacked callback only on redeliver, with the same ids', async () => {
    const c = await startClient({ ack: false });
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'staff-1', text: 'once' });
    await until(() => received.length === 1);
    // A later message is pushed after any re-push of the unacked one would have been.
    const later = await fake.deliver({ chatType: 'direct', userId: 'staff-1', text: 'later' });
    await until(() => received.length === 2);
    expect(received.map((r) => r.msg.msgId)).toEqual([messageId, later.messageId]);
    expect(fake.acks).toHaveLength(0);
    await fake.redeliver(messageId);
    await until(() => received.length === 3);
    expect(received[2]!.frame.headers.messageId).toBe(received[0]!.frame.headers.messageId);
    expect(received[2]!.msg.msgId).toBe(messageId);
    c.socketCallBackResponse(received[2]!.frame.headers.messageId, { success: true });
    await fake.waitForAck(messageId);
  });

  it('refuses connections and tokens with 401; the SDK retries silently, the subclass reports it', async () => {
    fake.setRefuseConnections(true);
    const errors: Error[] = [];
    const c = new GatewayDWClient({ ...config(), reconnectMs: 50 });
    client = c;
    c.on('gateway-error', (e: Error) => errors.push(e));
    await c.connect(); // resolves anyway: DWClient.connect() swallows the error and schedules a retry
    expect(c.connected).toBe(false);
    await until(() => errors.length >= 2);
    expect(errors[0]!.message).toContain('HTTP 401 InvalidAuthentication');
    expect(fake.stats.refusedOpens).toBeGreaterThanOrEqual(2);
    const token = await post('/v1.0/oauth2/accessToken', { appKey: config().clientId, appSecret: config().clientSecret });
    expect(token).toMatchObject({ status: 401, body: { code: 'InvalidAuthentication' } });
    fake.setRefuseConnections(false);
    await once(c, 'gateway-open');
    expect(c.connected).toBe(true);
    expect(c.lastError).toBeUndefined();
  });

  it('reconnects after a server drop with a fresh ticket; stop() leaves no interval or socket behind', async () => {
    const live = trackIntervals();
    const c = await startClient({ heartbeatMs: 40 });
    await fake.waitForConnection();
    fake.dropConnections();
    await until(() => fake.stats.upgrades === 2 && fake.connected());
    await until(() => fake.clientPings() >= 3); // several keepAlive ping/pong rounds on the new socket
    expect(fake.connected()).toBe(true);
    expect(fake.stats.opens).toBe(2); // the reconnect asked connections/open for a new ticket
    expect(live.size).toBe(1); // one keepAlive interval, not one per connection
    await c.stop();
    expect(fake.connected()).toBe(false);
    expect(live.size).toBe(0);
    await fake.close();
    // Nothing that keeps the event loop alive: no timer and no socket (vitest's own throttle timer aside).
    expect(await openHandles({ servers: false })).toEqual([]);
  });

  it('confirms the 2.1.5 leak: a plain DWClient keeps one keepAlive interval per reconnect after disconnect()', async () => {
    const live = trackIntervals();
    class PlainRedirect extends DWClient {
      override async getEndpoint(): Promise<this> {
        const r = await post('/v1.0/gateway/connections/open', { ...config(), ua: '', subscriptions: [] });
        (this as unknown as DWInternals).dw_url = `${String(r.body.endpoint)}?ticket=${String(r.body.ticket)}`;
        return this;
      }
    }
    const plain = new PlainRedirect({ ...config(), keepAlive: true });
    (plain as unknown as DWInternals).reconnectInterval = 50;
    await plain.connect();
    fake.dropConnections();
    await until(() => fake.stats.upgrades === 2 && plain.connected);
    const socket = (plain as unknown as DWInternals).socket!;
    plain.disconnect();
    await once(socket, 'close');
    expect(live.size).toBe(1); // the first connection's interval survived disconnect() and would run forever
    for (const t of live) clearInterval(t as ReturnType<typeof setInterval>);
  });

  it('guards the reconnect storm: a failing websocket upgrade makes plain 2.1.5 double its retries on every failure', async () => {
    class BrokenTicket extends GatewayDWClient {
      override async getEndpoint(): Promise<this> {
        await super.getEndpoint();
        (this as unknown as DWInternals).dw_url += 'x'; // the fake answers the upgrade with 401
        return this;
      }
    }
    const RETRY_MS = 37; // a delay nothing else in play uses, so its timers are the retries
    const retries = trackTimeouts(RETRY_MS);
    const c = new BrokenTicket({ ...config(), reconnectMs: RETRY_MS, maxReconnectMs: RETRY_MS });
    (c as unknown as DWInternals).reconnectInterval = RETRY_MS; // the SDK's own retries, were they on
    client = c;
    let failures = 0;
    c.on('gateway-error', () => failures++);
    await c.connect();
    await until(() => failures >= 6);
    // Plain DWClient: 'error' and 'close' each schedule connect(), so every failure leaves two retries
    // pending and they go 1, 3, 7, 15… (measured: 127 in 360 ms). Guarded: one retry at a time.
    expect(retries.maxPending).toBe(1);
    expect(fake.stats.opens).toBeGreaterThanOrEqual(failures);
    await c.stop();
    // Closing the fake ends every socket, so whatever request was on the wire at stop() has been counted;
    // then no timer and no socket is left that could start another attempt.
    await fake.close();
    const opens = fake.stats.opens;
    expect(await openHandles({ servers: false })).toEqual([]);
    expect(fake.stats.opens).toBe(opens);
  });

  it('gives each client its own subscriptions (2.1.5 shares the module default array between instances)', () => {
    const a = new GatewayDWClient(config());
    a.registerCallbackListener(TOPIC_ROBOT, () => undefined);
    expect(new GatewayDWClient(config()).config.subscriptions).toEqual([{ type: 'EVENT', topic: '*' }]);
    const plain = new DWClient(config());
    plain.registerCallbackListener('/v1.0/card/instances/callback', () => undefined);
    expect(new DWClient(config()).config.subscriptions).toContainEqual({ type: 'CALLBACK', topic: '/v1.0/card/instances/callback' });
  });
});
