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
 * - Files and pictures both ways and template cards: see channel-c-wecom-media.ts (uploads, encrypted downloads)
 *   and below. aibot_send_msg msgtype image|file {media_id} → kind 'send' with `file`; msgtype template_card
 *   (card_type button_interaction: button_list of 1–6 buttons with unique keys ≤ 1024 bytes, task_id unique per bot,
 *   [0-9a-zA-Z_-@] ≤ 128 bytes) → kind 'send' with `buttons` (label = text, value = key). press() pushes the
 *   documented aibot_event_callback {msgtype:'event', event:{eventtype:'template_card_event',
 *   template_card_event:{card_type, event_key, task_id}}} on a fresh req_id; aibot_respond_update_msg on that req_id
 *   {response_type:'update_template_card', userids?, template_card (same task_id)} is accepted within 5 s of the
 *   event (WeCom's limit; later → 846608, code unverified) and recorded in cardUpdates.
 *
 * "Ack": WeCom has no explicit ack of a callback. The fake counts the first aibot_respond_msg frame for a callback's
 * req_id as its ack (acks[].messageId is the msgid). redeliver() pushes the same msgid with a new req_id.
 * Group messages without mentionBot are not delivered (groups only deliver @-messages). A message with files is a
 * `file` message (one file each, as WeCom sends them); pictures alone are `image`, with text they are `mixed`.
 * No history API: addHistory is a no-op.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import type { FakeButton, FakeInbound, FakeOutbound, FakePlatform, FakePlatformOptions, FakeRejection } from './types.js';
import { contentDisposition, createUploads, encryptMedia, type ServedMedia, typeOfName } from './channel-c-wecom-media.js';
import { createWaiters } from './_waiters.js';
import { HANG_MS } from '../../helpers/wait.js';

const BOT_ID = 'fake-bot-id';
const SECRET = 'fake-secret';
const BOT_NAME = 'FakeWecomBot';
const MAX_BYTES = 20_480;

export interface FakeWecom extends FakePlatform, Pick<WecomExtras, 'press'> {
  /** Every frame the client sent, in order, for protocol assertions. */
  readonly frames: ReadonlyArray<WsFrame>;
  /** Counters: subscribe attempts, refused subscribes, heartbeat pings. */
  readonly stats: { subscribes: number; refused: number; pings: number };
  /** Card updates the bot made in answer to a press (aibot_respond_update_msg within 5 s). */
  readonly cardUpdates: Array<{ taskId: string; userids?: string[]; card: Json; at: number }>;
}

export interface WecomExtras {
  /** Press the button labelled `label` on the card with task_id `messageId`, as `userId`. */
  press(p: { messageId: string; label: string; userId: string }): Promise<void>;
  readonly cardUpdates: FakeWecom['cardUpdates'];
}

/**
 * How long after a template_card_event the fake accepts the card update. WeCom's own limit is 5 s
 * (SDK docs); the fake allows the suite's hang deadline, so a loaded machine makes a test slower,
 * never red (the gateway answers the event at once: see wecom/adapter.ts).
 */
const CARD_UPDATE_MS = 60_000;

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
  const served = new Map<string, ServedMedia>(); // callback media by id (the URL's last part)
  const uploads = createUploads();
  const cards = new Map<string, { chatId: string; group: boolean; cardType: string; buttons: FakeButton[] }>(); // by task_id
  const cardEvents = new Map<string, { taskId: string; conn: Conn; at: number }>(); // template_card_event req_id →
  const cardUpdates: FakeWecom['cardUpdates'] = [];
  const groupChats = new Set<string>(); // chatids seen in group callbacks (aibot_send_msg takes userids and chatids alike)
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
      case 'aibot_respond_update_msg':
        return updateCard(conn, frame);
      case 'aibot_upload_media_init':
      case 'aibot_upload_media_chunk':
      case 'aibot_upload_media_finish': {
        const step = frame.cmd.slice('aibot_upload_media_'.length) as 'init' | 'chunk' | 'finish';
        const r = uploads[step](frame.body ?? {});
        return r.ok ? receipt(conn, reqId, 0, 'ok', r.body) : refuseFrame(conn, frame, r.errcode, r.reason);
      }
      case 'aibot_respond_welcome_msg':
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
    if (chatId && (body.msgtype === 'file' || body.msgtype === 'image')) return sendMedia(conn, frame, chatId);
    if (chatId && body.msgtype === 'template_card') return sendCard(conn, frame, chatId);
    const text = String((body.markdown as Json | undefined)?.content ?? '');
    if (!chatId) return refuseFrame(conn, frame, 40000, 'chatid is required');
    if (body.msgtype === 'markdown' && !text) return refuseFrame(conn, frame, 40000, 'markdown.content is required');
    if (Buffer.byteLength(text) > MAX_BYTES) return refuseFrame(conn, frame, 40058, `content over ${MAX_BYTES} bytes`);
    record({ kind: 'send', chatId, text, format: String(body.msgtype), messageId: randomId('msg'), raw: frame });
    receipt(conn, frame.headers?.req_id ?? '');
  }

  function sendMedia(conn: Conn, frame: WsFrame, chatId: string): void {
    const body = frame.body ?? {};
    const type = String(body.msgtype);
    const mediaId = String((body[type] as Json | undefined)?.media_id ?? '');
    const m = uploads.media.get(mediaId);
    if (!m) return refuseFrame(conn, frame, 40007, 'invalid media_id');
    if (m.type !== type) return refuseFrame(conn, frame, 40007, `media_id is a ${m.type}, not a ${type}`);
    const file = { name: m.filename, mimeType: typeOfName(m.filename), data: m.data, as: type === 'image' ? ('image' as const) : ('file' as const) };
    record({ kind: 'send', chatId, text: '', format: type, messageId: randomId('msg'), file, raw: frame });
    receipt(conn, frame.headers?.req_id ?? '');
  }

  function sendCard(conn: Conn, frame: WsFrame, chatId: string): void {
    const card = (frame.body?.template_card ?? {}) as Json;
    const taskId = typeof card.task_id === 'string' ? card.task_id : '';
    const list = Array.isArray(card.button_list) ? (card.button_list as Array<{ text?: string; key?: string }>) : [];
    const keys = list.map((b) => String(b.key ?? ''));
    const problem =
      card.card_type !== 'button_interaction'
        ? `fake wecom models card_type button_interaction, not ${String(card.card_type)}`
        : !/^[0-9a-zA-Z_\-@]{1,128}$/.test(taskId)
          ? 'task_id must be 1-128 of [0-9a-zA-Z_-@]'
          : cards.has(taskId)
            ? 'task_id already used by this bot'
            : list.length < 1 || list.length > 6
              ? 'button_list must have 1 to 6 buttons'
              : keys.some((k) => k === '' || Buffer.byteLength(k) > 1024) || new Set(keys).size !== keys.length
                ? 'button keys must be unique, 1 to 1024 bytes'
                : undefined;
    if (problem) return refuseFrame(conn, frame, 40000, problem);
    const title = (card.main_title ?? {}) as Json;
    const text = [title.title, title.desc, card.sub_title_text].filter((t) => typeof t === 'string' && t !== '').join('\n');
    const buttons = list.map((b) => ({ label: String(b.text ?? ''), value: String(b.key) }));
    cards.set(taskId, { chatId, group: groupChats.has(chatId), cardType: String(card.card_type), buttons });
    record({ kind: 'send', chatId, text, format: 'template_card', messageId: taskId, buttons, raw: frame });
    receipt(conn, frame.headers?.req_id ?? '');
  }

  function updateCard(conn: Conn, frame: WsFrame): void {
    const reqId = frame.headers?.req_id ?? '';
    const ev = cardEvents.get(reqId);
    const body = frame.body ?? {};
    const card = (body.template_card ?? {}) as Json;
    if (!ev || ev.conn !== conn) return refuseFrame(conn, frame, 846605, 'invalid req_id');
    if (Date.now() - ev.at > CARD_UPDATE_MS) return refuseFrame(conn, frame, 846608, 'template card update expired');
    if (body.response_type !== 'update_template_card') return refuseFrame(conn, frame, 40000, 'response_type must be update_template_card');
    if (card.task_id !== ev.taskId) return refuseFrame(conn, frame, 40000, 'template_card.task_id must be the event task_id');
    const userids = Array.isArray(body.userids) ? (body.userids as string[]) : undefined;
    cardUpdates.push({ taskId: ev.taskId, ...(userids ? { userids } : {}), card, at: Date.now() });
    notify();
    receipt(conn, reqId);
  }

  async function press(p: { messageId: string; label: string; userId: string }): Promise<void> {
    const card = cards.get(p.messageId);
    const button = card?.buttons.find((b) => b.label === p.label);
    if (!card || !button) throw new Error(`fake wecom: no card ${p.messageId} with a button "${p.label}"`);
    const conn = await waitFor(() => (active?.ws.readyState === WebSocket.OPEN ? active : undefined), HANG_MS, 'a subscribed connection');
    const reqId = randomBytes(16).toString('hex');
    cardEvents.set(reqId, { taskId: p.messageId, conn, at: Date.now() });
    const body = {
      msgid: randomId('evt'),
      create_time: nowSeconds(),
      aibotid: BOT_ID,
      ...(card.group ? { chatid: card.chatId } : {}),
      chattype: card.group ? 'group' : 'single',
      from: { userid: p.userId },
      msgtype: 'event',
      event: { eventtype: 'template_card_event', template_card_event: { card_type: card.cardType, event_key: button.value, task_id: p.messageId } },
    };
    await send(conn, { cmd: 'aibot_event_callback', headers: { req_id: reqId }, body });
  }

  async function handleResponseUrl(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', base);
    const media = req.method === 'GET' ? served.get(url.pathname.replace(/^\/media\//, '')) : undefined;
    if (media) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-disposition': contentDisposition(media.name) });
      res.end(media.encrypted);
      return;
    }
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
    if ((msg.files?.length ?? 0) > 1) throw new Error('fake wecom: WeCom sends one file per message');
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
      ...content(isGroup ? `@${BOT_NAME} ${msg.text}` : msg.text, msg),
    };
    const cb: Callback = { msgid, chatId: isGroup ? (msg.chatId as string) : msg.userId, body };
    if (isGroup) groupChats.add(msg.chatId as string);
    delivered.set(msgid, cb);
    responseCodes.set(code, cb);
    await push(cb);
    return { messageId: msgid };
  }

  /** The message's content fields: text, or a file, or pictures (with text: mixed). */
  function content(text: string, msg: FakeInbound): Json {
    const serve = (f: { data: Buffer; fileName?: string; mimeType: string }) => {
      const id = randomBytes(12).toString('hex');
      const { encrypted, aeskey } = encryptMedia(f.data);
      served.set(id, { name: f.fileName ?? 'file', contentType: f.mimeType, encrypted });
      return { url: `${base}/media/${id}`, aeskey };
    };
    const file = msg.files?.[0];
    if (file) return { msgtype: 'file', file: serve(file) };
    const images = (msg.images ?? []).map((i) => ({ msgtype: 'image', image: serve(i) }));
    if (images.length === 1 && msg.text === '') return { msgtype: 'image', image: images[0]?.image };
    if (images.length > 0) return { msgtype: 'mixed', mixed: { msg_item: [{ msgtype: 'text', text: { content: text } }, ...images] } };
    return { msgtype: 'text', text: { content: text } };
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
    cardUpdates,
    press,
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
