/**
 * Fake WeCom AI bot (channel_c) long-connection server for `@wecom/aibot-node-sdk` 1.0.7, on 127.0.0.1.
 *
 * Pointing the SDK at it: the option is `wsUrl` (not `websocketUrl`; the service.yaml field is websocketUrl):
 *
 *   const client = new WSClient({ botId: 'fake-bot-id', secret: 'fake-secret', wsUrl: 'ws://127.0.0.1:P',
 *     reconnectInterval: 50, maxAuthFailureAttempts: 1, logger: silentLogger });
 *   client.connect();  // 'authenticated' once aibot_subscribe succeeded
 *   // channelConfig = { botId: 'fake-bot-id', secret: 'fake-secret', websocketUrl: 'ws://127.0.0.1:P' }
 *
 * Protocol (JSON text frames on one socket, correlated by headers.req_id; every client command gets a receipt
 * {headers:{req_id}, errcode, errmsg}):
 * - aibot_subscribe {bot_id, secret} → errcode 0, or 853000 "invalid bot_id or secret" when refusing. When a second
 *   connection subscribes, the old one gets aibot_event_callback disconnected_event and is closed (one per bot).
 * - ping → errcode 0. Any other command before subscribing → 846609 "aibot websocket not subscribed".
 * - Inbound: aibot_msg_callback {msgid, aibotid, chattype single|group, chatid (group only), from.userid, msgtype text,
 *   text.content ("@BotName " prefixed in groups), response_url, create_time (seconds, unverified)}.
 * - aibot_respond_msg with the callback's req_id, msgtype stream {id, content, finish}: each frame replaces the bubble;
 *   recorded as kind 'stream' with the full current text and `finished`. A req_id that is unknown or was pushed on
 *   another (older) connection → 846605 "invalid req_id";
 *   a frame for a stream that already finished → 846608 "stream message update expired" (code from community logs,
 *   the "after finish" trigger is a guess).
 * - aibot_send_msg {chatid, msgtype markdown, markdown.content} → kind 'send' (chatid = userid for DMs).
 * - POST http://127.0.0.1:P/cgi-bin/aibot/response?response_code=… (the response_url) → kind 'reply'.
 * - Limit: 20 480 bytes UTF-8 for stream content and markdown; over it → errcode 40058 (a guess) and a rejection.
 *
 * "Ack": WeCom has no explicit ack of a callback. The fake counts the first aibot_respond_msg frame for a callback's
 * req_id as its ack (acks[].messageId is the msgid). redeliver() pushes the same msgid with a new req_id.
 * Group messages without mentionBot are not delivered (groups only deliver @-messages). Images, media upload and
 * template cards beyond recording are not modelled. No history API: addHistory is a no-op.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import type { FakeInbound, FakeOutbound, FakePlatform, FakePlatformOptions, FakeRejection } from './types.js';
import { createWaiters } from './_waiters.js';
import { HANG_MS } from '../../helpers/wait.js';

const BOT_ID = 'fake-bot-id';
const SECRET = 'fake-secret';
const BOT_NAME = 'FakeWecomBot';
const MAX_BYTES = 20_480;

export interface FakeWecom extends FakePlatform {
  /** Every frame the client sent, in order, for protocol assertions. */
  readonly frames: ReadonlyArray<WsFrame>;
  /** Counters: subscribe attempts, refused subscribes, heartbeat pings. */
  readonly stats: { subscribes: number; refused: number; pings: number };
}

type Json = Record<string, unknown>;
interface WsFrame {
  cmd?: string;
  headers?: { req_id?: string };
  body?: Json;
}
interface Conn {
  ws: WebSocket;
  authed: boolean;
}
interface Callback {
  msgid: string;
  chatId: string;
  body: Json;
}

export async function startFakeWecom(opts: FakePlatformOptions = {}): Promise<FakeWecom> {
  const outbound: FakeOutbound[] = [];
  const rejections: FakeRejection[] = [];
  const acks: Array<{ messageId: string; at: number }> = [];
  const frames: WsFrame[] = [];
  const conns = new Set<Conn>();
  const delivered = new Map<string, Callback>(); // msgid → callback
  const byReqId = new Map<string, Callback & { acked: boolean; conn: Conn }>(); // callback req_id → callback
  const responseCodes = new Map<string, Callback>(); // response_url code → callback
  const finishedStreams = new Set<string>();
  const stats = { subscribes: 0, refused: 0, pings: 0 };
  let active: Conn | undefined; // the subscribed connection that receives callbacks
  let refuse = false,
    closed = false;
  const { notify, waitFor, failWaiters, recordWaits } = createWaiters('fake wecom');

  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((req, res) => {
    handleResponseUrl(req, res).catch((err: unknown) => reply(res, 500, { errcode: -1, errmsg: String(err) }));
  });
  server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, onConnection));
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;

  function onConnection(ws: WebSocket): void {
    const conn: Conn = { ws, authed: false };
    conns.add(conn);
    ws.on('message', (data: RawData) => onFrame(conn, data)).on('error', () => undefined);
    ws.on('close', () => {
      conns.delete(conn);
      if (active === conn) active = undefined;
      notify();
    });
  }

  function send(conn: Conn, frame: unknown): Promise<void> {
    return new Promise((resolve, reject) => conn.ws.send(JSON.stringify(frame), (err) => (err ? reject(err) : resolve())));
  }
  function receipt(conn: Conn, reqId: string, errcode = 0, errmsg = 'ok', body?: Json): void {
    void send(conn, { headers: { req_id: reqId }, errcode, errmsg, ...(body ? { body } : {}) }).catch(() => undefined);
  }
  /** Answers with a non-zero errcode and records the rejection. */
  function refuseFrame(conn: Conn, frame: WsFrame, errcode: number, reason: string): void {
    rejections.push({ method: frame.cmd ?? '(none)', reason, raw: frame, at: Date.now() });
    receipt(conn, frame.headers?.req_id ?? '', errcode, reason);
    notify();
  }

  function onFrame(conn: Conn, data: RawData): void {
    let frame: WsFrame;
    try {
      frame = JSON.parse(data.toString()) as WsFrame;
    } catch {
      return;
    }
    frames.push(frame);
    const reqId = frame.headers?.req_id ?? '';
    if (frame.cmd === 'aibot_subscribe') return subscribe(conn, frame);
    if (!conn.authed) return refuseFrame(conn, frame, 846609, 'aibot websocket not subscribed');
    switch (frame.cmd) {
      case 'ping':
        stats.pings++;
        return receipt(conn, reqId);
      case 'aibot_respond_msg':
        return respond(conn, frame);
      case 'aibot_send_msg':
        return sendMsg(conn, frame);
      case 'aibot_respond_welcome_msg':
      case 'aibot_respond_update_msg':
        record({ kind: 'reply', chatId: '', text: '', format: String(frame.body?.msgtype ?? frame.cmd), raw: frame });
        return receipt(conn, reqId);
      default:
        return refuseFrame(conn, frame, 40000, `fake wecom does not model ${String(frame.cmd)}`);
    }
  }

  function subscribe(conn: Conn, frame: WsFrame): void {
    stats.subscribes++;
    const body = frame.body ?? {};
    if (refuse || body.bot_id !== BOT_ID || body.secret !== SECRET) {
      stats.refused++;
      return refuseFrame(conn, frame, 853000, 'invalid bot_id or secret');
    }
    const old = active;
    conn.authed = true;
    active = conn;
    receipt(conn, frame.headers?.req_id ?? '');
    if (old && old !== conn) {
      // One connection per bot: tell the old one why, then close it.
      const event = {
        msgid: randomId('evt'),
        create_time: nowSeconds(),
        aibotid: BOT_ID,
        msgtype: 'event',
        from: { userid: '' },
        event: { eventtype: 'disconnected_event' },
      };
      void send(old, { cmd: 'aibot_event_callback', headers: { req_id: randomId('req') }, body: event })
        .finally(() => old.ws.close(1000, 'new connection subscribed'))
        .catch(() => undefined);
    }
    notify();
  }

  function respond(conn: Conn, frame: WsFrame): void {
    const cb = byReqId.get(frame.headers?.req_id ?? '');
    // A req_id is only valid on the connection it was pushed on (community reports: 846605 after a reconnect).
    if (!cb || cb.conn !== conn) return refuseFrame(conn, frame, 846605, 'invalid req_id');
    if (!cb.acked) {
      cb.acked = true;
      acks.push({ messageId: cb.msgid, at: Date.now() });
    }
    const body = frame.body ?? {};
    if (body.msgtype !== 'stream') {
      record({ kind: 'reply', chatId: cb.chatId, text: '', format: String(body.msgtype), replyTo: cb.msgid, raw: frame });
      return receipt(conn, frame.headers?.req_id ?? '');
    }
    const stream = (body.stream ?? {}) as { id?: string; content?: string; finish?: boolean };
    const content = String(stream.content ?? '');
    if (!stream.id) return refuseFrame(conn, frame, 40000, 'stream.id is required');
    if (finishedStreams.has(stream.id)) return refuseFrame(conn, frame, 846608, 'stream message update expired');
    if (Buffer.byteLength(content) > MAX_BYTES) return refuseFrame(conn, frame, 40058, `content over ${MAX_BYTES} bytes`);
    if (stream.finish) finishedStreams.add(stream.id);
    record({
      kind: 'stream',
      chatId: cb.chatId,
      text: content,
      format: 'stream',
      messageId: stream.id,
      replyTo: cb.msgid,
      finished: stream.finish === true,
      raw: frame,
    });
    receipt(conn, frame.headers?.req_id ?? '');
  }

  function sendMsg(conn: Conn, frame: WsFrame): void {
    const body = frame.body ?? {};
    const chatId = typeof body.chatid === 'string' ? body.chatid : '';
    const text = String((body.markdown as Json | undefined)?.content ?? '');
    if (!chatId) return refuseFrame(conn, frame, 40000, 'chatid is required');
    if (body.msgtype === 'markdown' && !text) return refuseFrame(conn, frame, 40000, 'markdown.content is required');
    if (Buffer.byteLength(text) > MAX_BYTES) return refuseFrame(conn, frame, 40058, `content over ${MAX_BYTES} bytes`);
    record({ kind: 'send', chatId, text, format: String(body.msgtype), messageId: randomId('msg'), raw: frame });
    receipt(conn, frame.headers?.req_id ?? '');
  }

  async function handleResponseUrl(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', base);
    const body = await readJson(req);
    const cb = responseCodes.get(url.searchParams.get('response_code') ?? '');
    const method = `${req.method ?? 'GET'} ${url.pathname}`;
    if (req.method !== 'POST' || url.pathname !== '/cgi-bin/aibot/response') return reply(res, 404, { errcode: 404, errmsg: 'not found' });
    const text = String(((body?.markdown ?? body?.text) as Json | undefined)?.content ?? '');
    const problem = !cb
      ? 'invalid response_code'
      : !body
        ? 'body is not JSON'
        : Buffer.byteLength(text) > MAX_BYTES
          ? `content over ${MAX_BYTES} bytes`
          : undefined;
    if (problem || !cb) {
      rejections.push({ method, reason: problem ?? '', raw: body, at: Date.now() });
      notify();
      return reply(res, 200, { errcode: problem?.startsWith('content') ? 40058 : 40000, errmsg: problem });
    }
    record({ kind: 'reply', chatId: cb.chatId, text, format: String(body?.msgtype), replyTo: cb.msgid, raw: body });
    reply(res, 200, { errcode: 0, errmsg: 'ok' });
  }

  async function push(cb: Callback): Promise<void> {
    const conn = await waitFor(() => (active?.ws.readyState === WebSocket.OPEN ? active : undefined), HANG_MS, 'a subscribed connection');
    const reqId = randomBytes(16).toString('hex');
    byReqId.set(reqId, { ...cb, acked: false, conn });
    await send(conn, { cmd: 'aibot_msg_callback', headers: { req_id: reqId }, body: cb.body });
  }

  async function deliver(msg: FakeInbound): Promise<{ messageId: string }> {
    const msgid = msg.messageId ?? randomId('msg');
    if (msg.images?.length) throw new Error('fake wecom: image messages are not modelled');
    const isGroup = msg.chatType === 'group';
    if (isGroup && !msg.chatId) throw new Error('fake wecom: a group message needs chatId');
    if (isGroup && !msg.mentionBot) return { messageId: msgid }; // groups only deliver messages that @ the bot
    const code = randomBytes(12).toString('hex');
    const body: Json = {
      msgid,
      aibotid: BOT_ID,
      chattype: isGroup ? 'group' : 'single',
      ...(isGroup ? { chatid: msg.chatId } : {}),
      from: { userid: msg.userId },
      create_time: Math.floor((msg.ts ?? Date.now()) / 1000),
      response_url: `${base}/cgi-bin/aibot/response?response_code=${code}`,
      msgtype: 'text',
      text: { content: isGroup ? `@${BOT_NAME} ${msg.text}` : msg.text },
    };
    const cb: Callback = { msgid, chatId: isGroup ? (msg.chatId as string) : msg.userId, body };
    delivered.set(msgid, cb);
    responseCodes.set(code, cb);
    await push(cb);
    return { messageId: msgid };
  }

  function record(o: Omit<FakeOutbound, 'at'>): void {
    outbound.push({ ...o, at: Date.now() });
    notify();
  }
  const isConnected = (): boolean => active?.ws.readyState === WebSocket.OPEN;

  return {
    name: 'channel_c',
    channelConfig: { botId: BOT_ID, secret: SECRET, websocketUrl: `ws://127.0.0.1:${port}` },
    botUserId: BOT_ID,
    botName: BOT_NAME,
    limit: { max: MAX_BYTES, unit: 'bytes' },
    outbound,
    rejections,
    acks,
    frames,
    stats,
    deliver,
    async redeliver(messageId) {
      const cb = delivered.get(messageId);
      if (!cb) throw new Error(`fake wecom: ${messageId} was never delivered`);
      await push(cb); // same msgid, new req_id
    },
    addHistory: () => ({ messageId: randomId('msg') }), // WeCom has no history API for bots
    ...recordWaits({ outbound, acks, connected: isConnected }),
    connected: isConnected,
    setRefuseConnections(r) {
      refuse = r;
    },
    dropConnections() {
      for (const c of conns) c.ws.terminate();
    },
    async close() {
      if (closed) return;
      closed = true;
      failWaiters();
      for (const c of conns) c.ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// --- internal ---

const randomId = (prefix: string): string => `${prefix}_${randomBytes(8).toString('hex')}`;
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json;charset=utf-8' }).end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<Json | undefined> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    const v: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return v && typeof v === 'object' ? (v as Json) : undefined;
  } catch {
    return undefined;
  }
}
