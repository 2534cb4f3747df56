/**
 * Fake DingTalk (channel_b) for `dingtalk-stream` 2.1.5 (stream mode) plus the robot OpenAPI, on 127.0.0.1.
 *
 * Pointing the SDK at it: there is NO base-URL option (GATEWAY_URL is a module constant). DingtalkStreamClient in
 * src/channels/dingtalk/stream-client.ts subclasses DWClient and overrides getEndpoint() to POST
 * {clientId, clientSecret, ua, subscriptions} to `${apiBaseUrl}/v1.0/gateway/connections/open` (plus the SDK fixes).
 *   // channelConfig = { clientId: 'ding-fake-client', clientSecret: 'fake-secret', apiBaseUrl: 'http://127.0.0.1:P' }
 *
 * Served: POST /v1.0/gateway/connections/open → {endpoint: ws://127.0.0.1:P/connect, ticket} (single-use tickets);
 * the websocket (CALLBACK robot messages, SYSTEM pings; a client frame carrying a callback's headers.messageId is its
 * ack; unacked callbacks are re-pushed only by redeliver()); POST /robot/sendBySession?session=… (each message's
 * sessionWebhook) → 'reply'; POST /v1.0/oauth2/accessToken, then with x-acs-dingtalk-access-token:
 * /v1.0/robot/oToMessages/batchSend (chatId = userId) and /v1.0/robot/groupMessages/send (chatId =
 * openConversationId) → 'send'; /v1.0/card/instances/createAndDeliver + PUT /v1.0/card/streaming → 'stream';
 * PUT /v1.0/card/instances (card data such as the AI card's flowStatus) → the `cards` map.
 *
 * Choices: a DM's chatId is the sender's staffId for replies and sends alike; a group's is its openConversationId (=
 * the callback's conversationId). Group messages that do not @ the bot are not delivered (robots only get @-messages
 * by default). Text is used verbatim; mentionUsers only fills atUsers. No history API: addHistory is a no-op.
 * Files: see channel-b-dingtalk-media.ts (messageFiles/download, GET /download/<id>, POST /media/upload; the fake is
 * also the `oapiBaseUrl` host). A delivered message with files is a `file` message (one-to-one chats only, one file
 * each); pictures alone are `picture`, with text `richText`; a voice note is an `audio` message (one-to-one chats
 * only: content {downloadCode, duration, recognition}, the recording served like a file).
 * Approval cards: channelConfig names APPROVAL_CARD_TEMPLATE as `approvalCardTemplateId`; the fake models that
 * template as the operator builds it in the card builder (see docs/channels.md): card data markdown, allowLabel,
 * allowCommand, denyLabel, denyCommand, alwaysLabel, alwaysCommand (all required). createAndDeliver with it is
 * recorded as kind 'send' with `buttons`. press() sends what DingTalk sends for a button with a callback: a CALLBACK
 * frame on topic /v1.0/card/instances/callback with data {extension, corpId, spaceType, userIdType, type:
 * 'actionCallback', userId, content, spaceId, outTrackId, value: '{"cardPrivateData":{"actionIds":[…],"params":
 * {"command":…}}}'} (as the official Python SDK's CardCallbackMessage shows it), but only for a card created with
 * callbackType STREAM and a client subscribed to that topic (else DingTalk sends nothing over the stream). The
 * client's frame answering it is recorded as an ack 'press:<frame messageId>'.
 * Unverified: the 20 000-byte cap (the groupMessages/send doc says msgParam ≤ 15 000 bytes) and its errcode 460101,
 * OpenAPI error codes other than InvalidAuthentication. errcode 300001 "session 不存在" (expired sessionWebhook) is
 * what community logs show.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import type { FakeButton, FakeInbound, FakeOutbound, FakePlatform, FakePlatformOptions, FakeRejection, FakeSentFile } from './types.js';
import { createWaiters } from './_waiters.js';
import { createDingtalkMedia } from './channel-b-dingtalk-media.js';
import { HANG_MS } from '../../helpers/wait.js';

export const DINGTALK_TOPIC_ROBOT = '/v1.0/im/bot/messages/get';
export const DINGTALK_TOPIC_CARD = '/v1.0/card/instances/callback';
/** The approval card template the fake knows (as if built in the card builder). */
export const APPROVAL_CARD_TEMPLATE = 'fake-approval-card.schema';
const APPROVAL_BUTTONS = [
  ['allowLabel', 'allowCommand', 'button_allow'],
  ['denyLabel', 'denyCommand', 'button_deny'],
  ['alwaysLabel', 'alwaysCommand', 'button_always'],
] as const;
const CLIENT_ID = 'ding-fake-client';
const CLIENT_SECRET = 'fake-secret';
const APP_ID = 'fake-app-id';
const MAX_BYTES = 20_000;
const BOT_USER_ID = '$:LWCP_v1:$fakeDingBotUserId==';
const BOT_NAME = 'FakeDingBot';

export interface FakeDingtalkOptions extends FakePlatformOptions {
  /** Lifetime of each sessionWebhook; default 90 minutes. */
  sessionWebhookTtlMs?: number;
}

export interface FakeDingtalk extends FakePlatform, DingtalkExtras {
  /** Send a SYSTEM ping to the newest connection and resolve when the client echoes it. */
  ping(timeoutMs?: number): Promise<void>;
  /** Expire every sessionWebhook issued so far (the next POST to one gets errcode 300001). */
  expireSessionWebhooks(): void;
  /** The subscriptions sent by the latest successful connections/open. */
  readonly subscriptions: ReadonlyArray<{ type: string; topic: string }>;
  /** Counters for reconnect assertions. */
  readonly stats: { opens: number; refusedOpens: number; upgrades: number; tokens: number };
  /** Keep-alive pings (WebSocket ping frames) the client sent on its current connection. */
  clientPings(): number;
  /** When each refused connections/open arrived (unix ms): the gaps are the client's backoff. */
  readonly refusedOpenTimes: readonly number[];
  /** AI cards by outTrackId: streamed text and the card data merged from create and PUT /v1.0/card/instances. */
  readonly cards: ReadonlyMap<string, { chatId: string; text: string; params: Record<string, unknown> }>;
}

export interface DingtalkExtras {
  /** Press the button labelled `label` on the approval card `messageId` (its outTrackId) as staff `userId`. */
  press(p: { messageId: string; label: string; userId: string }): Promise<void>;
}

type Json = Record<string, unknown>;
interface Conn {
  ws: WebSocket;
  id: string;
  subscriptions: Array<{ type: string; topic: string }>;
}

export async function startFakeDingtalk(opts: FakeDingtalkOptions = {}): Promise<FakeDingtalk> {
  const outbound: FakeOutbound[] = [];
  const rejections: FakeRejection[] = [];
  const acks: Array<{ messageId: string; at: number }> = [];
  const conns = new Set<Conn>();
  const tickets = new Map<string, Conn['subscriptions']>();
  const tokens = new Set<string>();
  const delivered = new Map<string, Json>(); // platform msgId → CALLBACK frame
  const frameToMsg = new Map<string, string>(); // stream headers.messageId → platform msgId
  const sessions = new Map<string, { chatId: string; msgId: string; expiresAt: number }>(); // sessionWebhook tokens
  const cards = new Map<string, { chatId: string; text: string; params: Json; templateId: string; callbackType?: string; buttons?: FakeButton[] }>();
  const pressFrames = new Set<string>(); // CALLBACK frame ids of presses, acked as 'press:<id>'
  const pendingPings = new Set<string>();
  const stats = { opens: 0, refusedOpens: 0, upgrades: 0, tokens: 0 };
  const refusedOpenTimes: number[] = [];
  let latestPings = 0;
  let subscriptions: Conn['subscriptions'] = [];
  let refuse = false,
    closed = false;
  const ttl = opts.sessionWebhookTtlMs ?? 90 * 60_000;
  const { notify, waitFor, failWaiters, recordWaits } = createWaiters('fake dingtalk');

  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((req, res) => {
    handleHttp(req, res).catch((err: unknown) => reply(res, 500, { code: 'InternalError', message: String(err) }));
  });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const ticket = url.searchParams.get('ticket') ?? '';
    const subs = tickets.get(ticket);
    if (url.pathname !== '/connect' || !subs) return socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
    tickets.delete(ticket); // single use: a reconnect must call connections/open again
    stats.upgrades++;
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, subs));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  const media = createDingtalkMedia(base);

  function onConnection(ws: WebSocket, subs: Conn['subscriptions']): void {
    const conn: Conn = { ws, id: randomId('conn'), subscriptions: subs };
    conns.add(conn);
    latestPings = 0;
    ws.on('message', onClientFrame)
      .on('ping', () => {
        if ([...conns].at(-1) === conn) latestPings++;
        notify();
      })
      .on('error', () => undefined)
      .on('close', () => {
        conns.delete(conn);
        notify();
      });
    notify();
  }

  function onClientFrame(data: RawData): void {
    let frame: { code?: number; headers?: { messageId?: string } };
    try {
      frame = JSON.parse(data.toString()) as typeof frame;
    } catch {
      return;
    }
    const id = frame.headers?.messageId ?? '';
    if (pendingPings.delete(id)) {
      notify();
      return;
    }
    if (pressFrames.delete(id)) {
      acks.push({ messageId: `press:${id}`, at: Date.now() });
      notify();
      return;
    }
    const msgId = frameToMsg.get(id);
    if (msgId !== undefined) {
      acks.push({ messageId: msgId, at: Date.now() });
      notify();
    }
  }

  async function newestConn(): Promise<Conn> {
    return waitFor(() => [...conns].reverse().find((c) => c.ws.readyState === WebSocket.OPEN), HANG_MS, 'a stream connection');
  }

  function sendFrame(conn: Conn, frame: Json): Promise<void> {
    const text = JSON.stringify({ ...frame, headers: { ...(frame.headers as Json), connectionId: conn.id } });
    return new Promise((resolve, reject) => conn.ws.send(text, (err) => (err ? reject(err) : resolve())));
  }

  async function pushCallback(frame: Json): Promise<void> {
    const conn = await newestConn();
    if (!conn.subscriptions.some((s) => s.type === 'CALLBACK' && s.topic === DINGTALK_TOPIC_ROBOT)) {
      throw new Error(`fake dingtalk: the client did not subscribe to CALLBACK ${DINGTALK_TOPIC_ROBOT} (call registerCallbackListener before connect())`);
    }
    await sendFrame(conn, frame);
  }

  async function deliver(msg: FakeInbound): Promise<{ messageId: string }> {
    const msgId = msg.messageId ?? randomId('msg');
    const isGroup = msg.chatType === 'group';
    if ((msg.files?.length || msg.voice) && (isGroup || (msg.files?.length ?? 0) + (msg.voice ? 1 : 0) > 1))
      throw new Error('fake dingtalk: files and voice messages reach robots one per message, in one-to-one chats');
    if (isGroup && !msg.chatId) throw new Error('fake dingtalk: a group message needs chatId');
    if (isGroup && !msg.mentionBot) return { messageId: msgId }; // robots only receive @-messages
    const ts = msg.ts ?? Date.now();
    const token = randomBytes(12).toString('hex');
    const chatId = isGroup ? (msg.chatId as string) : msg.userId;
    sessions.set(token, { chatId, msgId, expiresAt: ts + ttl });
    const others = (msg.mentionUsers ?? []).map((u) => ({ dingtalkId: lwcp(u.userId), staffId: u.userId }));
    const payload: Json = {
      conversationId: isGroup ? msg.chatId : `cid${Buffer.from(`dm:${msg.userId}`).toString('base64')}`,
      conversationType: isGroup ? '2' : '1',
      msgId,
      // In groups DingTalk removes the bot's own @mention and leaves the separating space.
      ...content(isGroup ? ` ${msg.text}` : msg.text, msg),
      senderId: lwcp(msg.userId),
      senderStaffId: msg.userId,
      senderNick: msg.userName ?? msg.userId,
      senderCorpId: 'ding-fake-corp',
      chatbotCorpId: 'ding-fake-corp',
      chatbotUserId: BOT_USER_ID,
      robotCode: CLIENT_ID,
      isAdmin: false,
      createAt: ts,
      sessionWebhook: `${base}/robot/sendBySession?session=${token}`,
      sessionWebhookExpiredTime: ts + ttl,
      ...(isGroup ? { conversationTitle: `group ${msg.chatId}`, isInAtList: true, atUsers: [{ dingtalkId: BOT_USER_ID }, ...others] } : {}),
    };
    const frameId = randomId('frame');
    const frame = systemFrame(DINGTALK_TOPIC_ROBOT, frameId, payload, 'CALLBACK');
    delivered.set(msgId, frame);
    frameToMsg.set(frameId, msgId);
    await pushCallback(frame);
    return { messageId: msgId };
  }

  /** The message's content fields: text, a voice message, a file, a picture, or text with pictures (richText). */
  function content(text: string, msg: FakeInbound): Json {
    if (msg.voice) {
      // The recording by its downloadCode, with DingTalk's own transcript of it.
      const { data, mimeType, durationSeconds, recognition, gone } = msg.voice;
      return {
        msgtype: 'audio',
        content: {
          downloadCode: gone ? randomId('expired') : media.serve(data, mimeType),
          duration: (durationSeconds ?? 3) * 1000,
          recognition: recognition ?? '',
        },
      };
    }
    const file = msg.files?.[0];
    if (file)
      return {
        msgtype: 'file',
        content: { downloadCode: media.serve(file.data, file.mimeType), fileName: file.fileName ?? 'file', fileId: randomId('file'), spaceId: '1' },
      };
    const pictures = (msg.images ?? []).map((i) => {
      const code = media.serve(i.data, i.mimeType);
      return { downloadCode: code, pictureDownloadCode: code };
    });
    if (pictures.length === 1 && msg.text === '') return { msgtype: 'picture', content: pictures[0] };
    if (pictures.length > 0) return { msgtype: 'richText', content: { richText: [{ text }, ...pictures.map((p) => ({ type: 'picture', ...p }))] } };
    return { msgtype: 'text', text: { content: text } };
  }

  async function press(p: { messageId: string; label: string; userId: string }): Promise<void> {
    const card = cards.get(p.messageId);
    const index = card?.buttons?.findIndex((b) => b.label === p.label) ?? -1;
    const button = card?.buttons?.[index];
    if (!card || !button) throw new Error(`fake dingtalk: no approval card ${p.messageId} with a button "${p.label}"`);
    if (card.callbackType !== 'STREAM')
      throw new Error('fake dingtalk: the card was not created with callbackType STREAM, so DingTalk sends no stream callback');
    const conn = await newestConn();
    if (!conn.subscriptions.some((s) => s.type === 'CALLBACK' && s.topic === DINGTALK_TOPIC_CARD)) {
      throw new Error(`fake dingtalk: the client did not subscribe to CALLBACK ${DINGTALK_TOPIC_CARD}`);
    }
    const value = JSON.stringify({ cardPrivateData: { actionIds: [APPROVAL_BUTTONS[index]?.[2]], params: { command: button.value } } });
    const frameId = randomId('frame');
    pressFrames.add(frameId);
    const data = {
      extension: '{}',
      corpId: 'ding-fake-corp',
      spaceType: '',
      userIdType: 1,
      type: 'actionCallback',
      userId: p.userId,
      content: value,
      spaceId: '',
      outTrackId: p.messageId,
      value,
    };
    await sendFrame(conn, systemFrame(DINGTALK_TOPIC_CARD, frameId, data, 'CALLBACK'));
  }

  // --- HTTP: gateway, session webhook, OpenAPI ---
  async function handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', base);
    const route = `${req.method ?? 'GET'} ${url.pathname}`;
    if (route === 'POST /media/upload') return uploadMedia(req, url, res);
    const served = req.method === 'GET' && url.pathname.startsWith('/download/') ? media.file(url.pathname.slice('/download/'.length)) : undefined;
    if (served) {
      res.writeHead(200, { 'content-type': served.contentType }).end(served.data);
      return;
    }
    const body = await readJson(req);
    if (body === undefined) return reply(res, 400, { code: 'InvalidParameter', message: 'body is not JSON' });
    if (route === 'POST /v1.0/gateway/connections/open') return openConnection(body, res);
    if (route === 'POST /v1.0/oauth2/accessToken') return issueToken(body, res);
    if (route === 'POST /robot/sendBySession') return sendBySession(url.searchParams.get('session') ?? '', body, res);
    const handler = openApi[route];
    if (!handler) return reply(res, 404, { code: 'NotFound', message: `fake dingtalk has no ${route}` });
    const token = req.headers['x-acs-dingtalk-access-token'];
    if (typeof token !== 'string' || !tokens.has(token)) return reply(res, 401, unauthorized('不合法的access_token'));
    return handler(body, res, route);
  }

  function credentialsOk(id: unknown, secret: unknown): boolean {
    return !refuse && id === CLIENT_ID && secret === CLIENT_SECRET;
  }
  /** Records a rejection and answers it. */
  function refuseReq(res: ServerResponse, method: string, reason: string, raw: unknown, status: number, body: Json): void {
    rejections.push({ method, reason, raw, at: Date.now() });
    notify();
    reply(res, status, body);
  }
  const unauthorized = (message: string) => ({ code: 'InvalidAuthentication', message });

  function openConnection(body: Json, res: ServerResponse): void {
    stats.opens++;
    if (!credentialsOk(body.clientId, body.clientSecret)) {
      stats.refusedOpens++;
      refusedOpenTimes.push(Date.now());
      return refuseReq(
        res,
        'POST /v1.0/gateway/connections/open',
        'invalid clientId/clientSecret',
        body,
        401,
        unauthorized('clientId or clientSecret is invalid'),
      );
    }
    subscriptions = Array.isArray(body.subscriptions) ? (body.subscriptions as Conn['subscriptions']) : [];
    const ticket = randomId('ticket');
    tickets.set(ticket, subscriptions);
    reply(res, 200, { endpoint: `ws://127.0.0.1:${port}/connect`, ticket });
  }

  function issueToken(body: Json, res: ServerResponse): void {
    if (!credentialsOk(body.appKey, body.appSecret)) {
      return refuseReq(res, 'POST /v1.0/oauth2/accessToken', 'invalid appKey/appSecret', body, 401, unauthorized('appKey or appSecret is invalid'));
    }
    const accessToken = randomBytes(16).toString('hex');
    tokens.add(accessToken);
    stats.tokens++;
    reply(res, 200, { accessToken, expireIn: 7200 });
  }

  function sendBySession(token: string, body: Json, res: ServerResponse): void {
    const route = 'POST /robot/sendBySession';
    const session = sessions.get(token);
    if (!session || session.expiresAt <= Date.now()) {
      return refuseReq(res, route, 'sessionWebhook expired or unknown', body, 200, { errcode: 300001, errmsg: 'session 不存在' });
    }
    const parsed = decodeWebhookBody(body);
    if (typeof parsed === 'string') return refuseReq(res, route, parsed, body, 200, { errcode: 40035, errmsg: parsed });
    if (Buffer.byteLength(parsed.text) > MAX_BYTES) {
      const reason = `message too long (over ${MAX_BYTES} bytes)`;
      return refuseReq(res, route, reason, body, 200, { errcode: 460101, errmsg: reason });
    }
    record({
      kind: 'reply',
      chatId: session.chatId,
      text: parsed.text,
      format: parsed.format,
      messageId: randomId('reply'),
      replyTo: session.msgId,
      raw: body,
    });
    reply(res, 200, { errcode: 0, errmsg: 'ok' });
  }

  async function uploadMedia(req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    const route = 'POST /media/upload';
    if (!tokens.has(url.searchParams.get('access_token') ?? '')) {
      for await (const _ of req); // drain
      return refuseReq(res, route, 'invalid access_token', null, 200, { errcode: 40014, errmsg: '不合法的access_token' });
    }
    const r = await media.upload(req, url);
    if (!r.ok) return refuseReq(res, route, r.reason, null, 200, r.body);
    reply(res, 200, r.body);
  }

  function decodeFileParam(msgKey: string, msgParam: unknown): Decoded | string {
    const p = parseJson(String(msgParam));
    if (!p) return `bad msgParam JSON string for ${msgKey}`;
    const file = media.sentFile(msgKey, p);
    return typeof file === 'string' ? file : { text: '', format: msgKey, file };
  }

  /** Sends a robot message (msgKey + msgParam) to each chat, or rejects it with 400. */
  function robotSend(body: Json, res: ServerResponse, route: string, chatIds: string[]): string | undefined {
    const msgKey = String(body.msgKey ?? '');
    const decoded = msgKey === 'sampleImageMsg' || msgKey === 'sampleFile' ? decodeFileParam(msgKey, body.msgParam) : decodeMsgParam(msgKey, body.msgParam);
    const problem =
      chatIds.length === 0
        ? 'no userIds / openConversationId'
        : body.robotCode !== CLIENT_ID
          ? `robotCode must be the app's clientId (${CLIENT_ID})`
          : typeof decoded === 'string'
            ? decoded
            : Buffer.byteLength(decoded.text) > MAX_BYTES
              ? `text over ${MAX_BYTES} bytes`
              : undefined;
    if (problem || typeof decoded === 'string') {
      refuseReq(res, route, problem ?? 'invalid', body, 400, { code: 'InvalidParameter', message: problem });
      return undefined;
    }
    const key = randomId('pqk');
    for (const chatId of chatIds) record({ kind: 'send', chatId, messageId: key, raw: body, ...decoded });
    return key;
  }

  type OpenApiHandler = (body: Json, res: ServerResponse, route: string) => void;
  const openApi: Record<string, OpenApiHandler> = {
    'POST /v1.0/robot/oToMessages/batchSend': (body, res, route) => {
      const key = robotSend(body, res, route, Array.isArray(body.userIds) ? (body.userIds as string[]) : []);
      if (key) reply(res, 200, { processQueryKey: key, invalidStaffIdList: [], flowControlledStaffIdList: [] });
    },
    'POST /v1.0/robot/groupMessages/send': (body, res, route) => {
      const key = robotSend(body, res, route, typeof body.openConversationId === 'string' ? [body.openConversationId] : []);
      if (key) reply(res, 200, { processQueryKey: key });
    },
    'POST /v1.0/robot/messageFiles/download': (body, res, route) => {
      const downloadUrl = media.downloadUrl(body);
      if (!downloadUrl)
        return refuseReq(res, route, 'unknown downloadCode or no robotCode', body, 400, { code: 'InvalidParameter', message: 'downloadCode 有误或已过期' });
      reply(res, 200, { downloadUrl });
    },
    'POST /v1.0/card/instances/createAndDeliver': (body, res, route) => {
      const m = /^dtv1\.card\/\/IM_(GROUP|ROBOT)\.(.+)$/.exec(String(body.openSpaceId ?? ''));
      const outTrackId = String(body.outTrackId ?? '');
      if (!m || !outTrackId) {
        return refuseReq(res, route, 'need outTrackId and openSpaceId dtv1.card//IM_GROUP.<cid> or IM_ROBOT.<userId>', body, 400, {
          code: 'InvalidParameter',
          message: 'openSpaceId or outTrackId invalid',
        });
      }
      const params = ((body.cardData as Json | undefined)?.cardParamMap ?? {}) as Json;
      const templateId = String(body.cardTemplateId ?? '');
      const callbackType = typeof body.callbackType === 'string' ? body.callbackType : undefined;
      let buttons: FakeButton[] | undefined;
      if (templateId === APPROVAL_CARD_TEMPLATE) {
        const missing = ['markdown', ...APPROVAL_BUTTONS.flatMap((button) => button.slice(0, 2))].filter(
          (k) => typeof params[k] !== 'string' || params[k] === '',
        );
        if (missing.length)
          return refuseReq(res, route, `approval card data lacks ${missing.join(', ')}`, body, 400, { code: 'InvalidParameter', message: 'cardParamMap' });
        buttons = APPROVAL_BUTTONS.map(([l, c]) => ({ label: String(params[l]), value: String(params[c]) }));
        record({ kind: 'send', chatId: m[2] as string, text: String(params.markdown), format: 'card', messageId: outTrackId, buttons, raw: body });
      }
      cards.set(outTrackId, {
        chatId: m[2] as string,
        text: '',
        params: { ...params },
        templateId,
        ...(callbackType ? { callbackType } : {}),
        ...(buttons ? { buttons } : {}),
      });
      const deliverResults = [{ spaceType: `IM_${m[1]}`, spaceId: m[2], success: true, carrierId: randomId('carrier') }];
      reply(res, 200, { success: true, result: { outTrackId, deliverResults } });
    },
    'PUT /v1.0/card/instances': (body, res, route) => {
      const card = cards.get(String(body.outTrackId ?? ''));
      if (!card) return refuseReq(res, route, 'unknown outTrackId', body, 404, { code: 'CardNotFound', message: 'no such card' });
      Object.assign(card.params, (body.cardData as Json | undefined)?.cardParamMap ?? {});
      notify();
      reply(res, 200, { success: true, result: true });
    },
    'PUT /v1.0/card/streaming': (body, res, route) => {
      const card = cards.get(String(body.outTrackId ?? ''));
      if (!card) return refuseReq(res, route, 'unknown outTrackId', body, 404, { code: 'CardNotFound', message: 'no such card' });
      const content = String(body.content ?? '');
      const text = body.isFull ? content : card.text + content; // isFull:false appends
      if (Buffer.byteLength(text) > MAX_BYTES) {
        return refuseReq(res, route, `card text over ${MAX_BYTES} bytes`, body, 400, {
          code: 'InvalidParameter.ContentTooLong',
          message: `over ${MAX_BYTES} bytes`,
        });
      }
      card.text = text;
      record({
        kind: 'stream',
        chatId: card.chatId,
        text,
        format: 'ai_card',
        messageId: String(body.outTrackId),
        finished: body.isFinalize === true,
        raw: body,
      });
      reply(res, 200, { success: true, result: true });
    },
  };

  function isConnected(): boolean {
    return [...conns].some((c) => c.ws.readyState === WebSocket.OPEN);
  }
  function record(o: Omit<FakeOutbound, 'at'>): void {
    outbound.push({ ...o, at: Date.now() });
    notify();
  }

  return {
    name: 'channel_b',
    channelConfig: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, apiBaseUrl: base, oapiBaseUrl: base, approvalCardTemplateId: APPROVAL_CARD_TEMPLATE },
    botUserId: BOT_USER_ID,
    botName: BOT_NAME,
    limit: { max: MAX_BYTES, unit: 'bytes' },
    outbound,
    rejections,
    acks,
    stats,
    refusedOpenTimes,
    clientPings: () => latestPings,
    cards,
    get subscriptions() {
      return subscriptions;
    },
    deliver,
    press,
    async redeliver(messageId) {
      const d = delivered.get(messageId);
      if (!d) throw new Error(`fake dingtalk: ${messageId} was never delivered`);
      await pushCallback(d); // same headers.messageId and msgId, as a platform re-push
    },
    addHistory: () => ({ messageId: randomId('msg') }), // DingTalk has no history API for bots
    ...recordWaits({ outbound, acks, connected: isConnected }),
    async ping(timeoutMs = HANG_MS) {
      const id = randomId('ping');
      pendingPings.add(id);
      await sendFrame(await newestConn(), systemFrame('ping', id, { opaque: id }));
      await waitFor(() => (pendingPings.has(id) ? undefined : true), timeoutMs, 'ping echo');
    },
    expireSessionWebhooks() {
      for (const s of sessions.values()) s.expiresAt = 0;
    },
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

function systemFrame(topic: string, messageId: string, data: unknown, type = 'SYSTEM'): Json {
  return {
    specVersion: '1.0',
    type,
    headers: { appId: APP_ID, connectionId: '', contentType: 'application/json', messageId, time: String(Date.now()), topic },
    data: JSON.stringify(data),
  };
}

type Decoded = { text: string; format: string; file?: FakeSentFile };
function decodeWebhookBody(body: Json): Decoded | string {
  const text = (body.text as Json | undefined)?.content;
  const md = body.markdown as Json | undefined;
  if (body.msgtype === 'text' && typeof text === 'string') return { text, format: 'text' };
  if (body.msgtype === 'markdown' && typeof md?.text === 'string' && typeof md.title === 'string') return { text: md.text, format: 'markdown' };
  return `unsupported or malformed msgtype ${String(body.msgtype)} (fake models text and markdown)`;
}

function decodeMsgParam(msgKey: string, msgParam: unknown): Decoded | string {
  const p = parseJson(String(msgParam));
  if (msgKey === 'sampleText' && typeof p?.content === 'string') return { text: p.content, format: msgKey };
  if (msgKey === 'sampleMarkdown' && typeof p?.text === 'string' && typeof p.title === 'string') return { text: p.text, format: msgKey };
  return `unsupported msgKey ${msgKey} or bad msgParam JSON string (fake models sampleText and sampleMarkdown)`;
}

function parseJson(text: string): Json | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Json) : undefined;
  } catch {
    return undefined;
  }
}

async function readJson(req: IncomingMessage): Promise<Json | undefined> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length === 0 ? {} : parseJson(Buffer.concat(chunks).toString('utf8'));
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json;charset=utf-8' }).end(JSON.stringify(body));
}

const randomId = (prefix: string): string => `${prefix}_${randomBytes(8).toString('hex')}`;
const lwcp = (id: string): string => `$:LWCP_v1:$${Buffer.from(id).toString('base64')}`;
