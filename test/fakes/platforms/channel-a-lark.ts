/**
 * Fake Feishu/Lark platform (channel key `channel_a`) for @larksuiteoapi/node-sdk 1.74.0, on 127.0.0.1.
 *
 * Point the real SDK at it:
 *
 *   const fake = await startFakeLark();
 *   const { appId, appSecret, domain } = fake.channelConfig;   // domain = 'http://127.0.0.1:<port>' (no trailing '/')
 *   const client = new lark.Client({ appId, appSecret, domain,
 *     cache: new lark.DefaultCache() });                       // NOT disableTokenCache: that sends no token at all
 *   const ws = new lark.WSClient({ appId, appSecret, domain, loggerLevel: lark.LoggerLevel.error,
 *     onReady: () => {…}, onError: (e) => {…} });                // start() resolves BEFORE the socket is up
 *   await ws.start({ eventDispatcher: new lark.EventDispatcher({}).register({
 *     'im.message.receive_v1': async (data) => { queue(data); } }) });   // ack is sent when this resolves
 *   await fake.waitForConnection();
 *   …
 *   ws.close();                  // clears the ping/reconnect timers and the fragment sweep, sends a close frame
 *                                // (close({ force: true }) terminates instead); without it the un-unref'd
 *                                // ping timer (PingInterval, 120 s) keeps the process alive. Then:
 *   await fake.close();          // SDK first: a running WSClient whose fake is gone retries every second.
 *
 * connected()/waitForConnection() turn true on the client's first ping, not on the upgrade: the SDK attaches
 * its 'message' listener only after connect() resolves, and drops frames pushed in that gap.
 *
 * appId must match /^cli_[0-9a-fA-F]{16}$/ or WSClient.start() silently does nothing.
 *
 * What it speaks (see the channel-a-lark-*.ts modules):
 *  - REST (channel-a-lark-rest.ts): tenant/app token, bot/v3/info, im/v1 messages create/reply/update(PUT)/
 *    patch(PATCH card)/delete/get/list (history), message resources (image download), reactions, CardKit
 *    cards create / element content streaming / settings / full update.
 *  - Long connection (channel-a-lark-ws.ts): endpoint discovery, protobuf frames (channel-a-lark-proto.ts),
 *    ping→pong with ClientConfig, `im.message.receive_v1` events split into 3 fragments, ack recording;
 *    `card.action.trigger` callbacks (`press()` on a card's button), whose answer comes back in the ack.
 *  - Cards: an `interactive` message's callback buttons are recorded as `buttons` on its outbound.
 *  - Limits (channel-a-lark-content.ts): text content > 150,000 bytes and post/card > 30,000 bytes → 230025
 *    (the code is unverified); `limit` below reports the post/card figure, the one adapters should chunk to.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeInbound, FakeOutbound, FakePlatform, FakePlatformOptions } from './types.js';
import {
  LarkState,
  hex,
  newMessageId,
  type FakeCard,
  type LarkAck,
  type LarkMention,
  type LarkRequestLog,
  type StoredMessage,
} from './channel-a-lark-state.js';
import { POST_MAX_BYTES, cardButtons, inboundContent, parseJson } from './channel-a-lark-content.js';
import { handleRest } from './channel-a-lark-rest.js';
import { LarkLongConn, type ClientConfig, type Delivery } from './channel-a-lark-ws.js';
import { HANG_MS } from '../../helpers/wait.js';

export { TEXT_MAX_BYTES, POST_MAX_BYTES, CARD_MAX_BYTES, ELEMENT_MAX_CHARS, MAX_EDITS } from './channel-a-lark-content.js';
export { ERR } from './channel-a-lark-state.js';
export type { FakeCard, LarkAck, LarkRequestLog, StoredMessage, ClientConfig, Delivery };

export interface LarkFakeOptions extends FakePlatformOptions {
  /** ClientConfig returned by the endpoint and in every pong (seconds). */
  clientConfig?: Partial<ClientConfig>;
  /** Fragments per event (default 3, like large events on the real platform). */
  fragments?: number;
  /** When set, an event not acked within this many ms is delivered once more (Lark: ~3 s). Off by default. */
  redeliverAfterMs?: number;
}

export interface LarkExtras {
  readonly appId: string;
  readonly appSecret: string;
  /** 'http://127.0.0.1:<port>' — the SDK `domain` option. */
  readonly domain: string;
  /** The same array as `acks`, typed with the ack code (200 ok, 500 when the SDK's handler threw) and frame details. */
  readonly ackLog: readonly LarkAck[];
  /** Every REST request (after JSON parsing), including refused ones. */
  readonly requests: LarkRequestLog[];
  readonly messages: ReadonlyMap<string, StoredMessage>;
  readonly cards: ReadonlyMap<string, FakeCard>;
  readonly reactions: LarkState['reactions'];
  readonly recalled: string[];
  /** Event deliveries (one per deliver/redeliver) with the fragment count. */
  readonly deliveries: Delivery[];
  /** Frames from the client that failed to decode. */
  readonly badFrames: Array<{ error: string; at: number }>;
  pingCount(): number;
  /** Websocket connections accepted so far (reconnects included). */
  connectionCount(): number;
  /** The p2p chat id the fake uses for a user's DM (`oc_p2p_…`). */
  dmChatId(userId: string): string;
  /** Deliver any schema-2.0 event (e.g. im.chat.member.bot.added_v1). Acks are recorded under its event_id. */
  deliverEvent(eventType: string, event: Record<string, unknown>): Promise<{ eventId: string }>;
  setClientConfig(cfg: Partial<ClientConfig>): void;
  /**
   * Press the button labelled `label` on the bot's card `messageId` as `userId`: a `card.action.trigger`
   * callback over the long connection, as the platform sends it when the app takes card callbacks there.
   * Resolves once delivered; its ack (with the answer) is recorded under `press:<event_id>`.
   */
  press(opts: { messageId: string; label: string; userId: string; userName?: string }): Promise<{ eventId: string }>;
  /** The answers the bot gave to presses (the decoded `data` of each press's ack, e.g. `{toast}`), in order. */
  readonly cardAnswers: Array<{ eventId: string; answer: unknown; at: number }>;
}

const SNIFF: Array<[string, string]> = [
  ['image/png', 'png'],
  ['image/jpeg', 'jpg'],
  ['image/gif', 'gif'],
  ['image/webp', 'webp'],
];

export async function startFakeLark(opts: LarkFakeOptions = {}): Promise<FakePlatform & LarkExtras> {
  const s = new LarkState();
  let port = 0;
  const longConn = new LarkLongConn(s, () => port, opts.clientConfig);
  const fragments = opts.fragments ?? 3;
  const events = new Map<string, { payload: Record<string, unknown>; eventId: string }>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
      const raw = Buffer.concat(chunks);
      if (req.method === 'POST' && url.pathname === '/callback/ws/endpoint') {
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(raw.toString('utf8') || '{}') as Record<string, unknown>;
        } catch {
          /* answered as an auth failure below */
        }
        const out = JSON.stringify(longConn.endpoint(body));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
        res.end(out);
        return;
      }
      handleRest(s, req, res, url, raw);
    });
  };
  const server = createServer(onRequest);
  server.on('upgrade', (req, socket, head) => longConn.upgrade(req, socket, head));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const domain = `http://127.0.0.1:${port}`;

  const idsOf = (openId: string): Record<string, string> => {
    const base = openId.replace(/^ou_/, '');
    return openId === s.botOpenId ? { union_id: `on_${base}`, user_id: '', open_id: openId } : { union_id: `on_${base}`, user_id: base, open_id: openId };
  };

  /** Store a user's message (history) and build its im.message.receive_v1 event. */
  const storeInbound = (msg: FakeInbound): { stored: StoredMessage; payload: Record<string, unknown>; eventId: string } => {
    if (msg.chatType === 'group' && !msg.chatId) throw new Error('fake lark: a group message needs chatId');
    const chatId = msg.chatType === 'group' ? (msg.chatId ?? '') : s.dmChatId(msg.userId);
    s.users.set(msg.userId, { openId: msg.userId, name: msg.userName ?? msg.userId });
    const mentions: LarkMention[] = [];
    if (msg.mentionBot) mentions.push({ key: '@_user_1', openId: s.botOpenId, name: s.botName });
    for (const u of msg.mentionUsers ?? []) {
      s.users.set(u.userId, { openId: u.userId, name: u.userName });
      mentions.push({ key: `@_user_${mentions.length + 1}`, openId: u.userId, name: u.userName });
    }
    const messageId = msg.messageId ?? newMessageId();
    const imageKeys = (msg.images ?? []).map((img) => {
      const key = `img_v3_02${hex(12)}`;
      const ext = SNIFF.find(([m]) => m === img.mimeType)?.[1] ?? 'bin';
      s.resources.set(`${messageId}/${key}`, { mimeType: img.mimeType, data: img.data, fileName: img.fileName ?? `${key}.${ext}` });
      return key;
    });
    const botKey = msg.mentionBot ? '@_user_1' : undefined;
    // A file is a message of its own on Lark (type file, no caption): one file, no text, no images.
    // A voice message is one too (type audio: the recording's file_key and its duration in ms).
    const file = msg.voice ?? msg.files?.[0];
    if (file && (msg.text || msg.images?.length || (msg.files?.length ?? 0) + (msg.voice ? 1 : 0) > 1))
      throw new Error('fake lark: a file or audio message carries one file and nothing else');
    const fileKey = file ? `file_v3_00${hex(12)}` : undefined;
    if (file && fileKey) s.resources.set(`${messageId}/${fileKey}`, { mimeType: file.mimeType, data: file.data, fileName: file.fileName ?? 'file' });
    const { messageType, content } =
      file && fileKey
        ? msg.voice
          ? { messageType: 'audio', content: JSON.stringify({ file_key: fileKey, duration: (msg.voice.durationSeconds ?? 3) * 1000 }) }
          : { messageType: 'file', content: JSON.stringify({ file_key: fileKey, file_name: file.fileName ?? 'file' }) }
        : inboundContent(msg.text, mentions, botKey, imageKeys);
    const ts = msg.ts ?? Date.now();
    const root = msg.threadId ? [...s.messages.values()].find((m) => m.threadId === msg.threadId) : undefined;
    const stored: StoredMessage = {
      messageId,
      chatId,
      chatType: msg.chatType === 'group' ? 'group' : 'p2p',
      msgType: messageType,
      content,
      sender: { id: msg.userId, idType: 'open_id', senderType: 'user' },
      createTime: ts,
      updateTime: ts,
      threadId: msg.threadId,
      rootId: root?.messageId,
      parentId: root?.messageId,
      mentions,
      deleted: false,
      editCount: 0,
    };
    s.messages.set(messageId, stored);
    const eventId = hex(16);
    const event = {
      sender: { sender_id: idsOf(msg.userId), sender_type: msg.fromBot ? 'app' : 'user', tenant_key: s.tenantKey },
      message: {
        message_id: messageId,
        root_id: stored.rootId,
        parent_id: stored.parentId,
        create_time: String(ts),
        update_time: String(ts),
        chat_id: chatId,
        thread_id: stored.threadId,
        chat_type: stored.chatType,
        message_type: messageType,
        content,
        mentions: mentions.length ? mentions.map((m) => ({ key: m.key, id: idsOf(m.openId), name: m.name, tenant_key: s.tenantKey })) : undefined,
        user_agent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) Lark/7.30.0',
      },
    };
    return { stored, payload: envelope('im.message.receive_v1', eventId, event), eventId };
  };

  const envelope = (eventType: string, eventId: string, event: Record<string, unknown>): Record<string, unknown> => ({
    schema: '2.0',
    header: {
      event_id: eventId,
      event_type: eventType,
      create_time: String(Date.now()),
      token: 'fake-verification-token',
      app_id: s.appId,
      tenant_key: s.tenantKey,
    },
    event,
  });

  const send = async (messageId: string): Promise<void> => {
    const ev = events.get(messageId);
    if (!ev) throw new Error(`fake lark: ${messageId} was never delivered`);
    const d = await longConn.sendEvent(ev.payload, { messageId, eventId: ev.eventId }, fragments);
    if (opts.redeliverAfterMs === undefined) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      const acked = s.acks.items.some((a) => a.messageId === messageId && a.at >= d.at);
      if (!acked && !closed) {
        // once per delivery, like the platform's retry (no further timer for the retry itself)
        void longConn.sendEvent(ev.payload, { messageId, eventId: ev.eventId }, fragments).catch(() => undefined);
      }
    }, opts.redeliverAfterMs);
    timers.add(timer);
  };

  const fake: FakePlatform & LarkExtras = {
    name: 'channel_a',
    channelConfig: { appId: s.appId, appSecret: s.appSecret, domain },
    botUserId: s.botOpenId,
    botName: s.botName,
    // Post / card content cap (bytes of the content JSON string). Text messages allow 150,000 bytes.
    limit: { max: POST_MAX_BYTES, unit: 'bytes' },
    appId: s.appId,
    appSecret: s.appSecret,
    domain,

    async deliver(msg) {
      const { stored, payload, eventId } = storeInbound(msg);
      events.set(stored.messageId, { payload, eventId });
      await send(stored.messageId);
      return { messageId: stored.messageId };
    },
    async redeliver(messageId) {
      await send(messageId);
    },
    addHistory(msg) {
      return { messageId: storeInbound(msg).stored.messageId };
    },
    async press({ messageId, label, userId, userName }) {
      const m = s.messages.get(messageId);
      if (m?.msgType !== 'interactive' || m.sender.senderType !== 'app') throw new Error(`fake lark: ${messageId} is not a card the bot sent`);
      const button = cardButtons(parseJson(m.content)).find((b) => b.label === label);
      if (!button) throw new Error(`fake lark: no button "${label}" on ${messageId}`);
      s.users.set(userId, { openId: userId, name: userName ?? userId });
      const eventId = hex(16);
      const event = {
        operator: { tenant_key: s.tenantKey, ...idsOf(userId) },
        token: `c-${hex(20)}`,
        action: { value: button.value, tag: 'button' },
        host: 'im_message',
        context: { open_message_id: messageId, open_chat_id: m.chatId },
      };
      const pressId = `press:${eventId}`;
      events.set(pressId, { payload: envelope('card.action.trigger', eventId, event), eventId });
      await send(pressId);
      return { eventId };
    },
    get cardAnswers() {
      return s.acks.items
        .filter((a) => a.messageId.startsWith('press:') && a.answer !== undefined)
        .map((a) => ({ eventId: a.eventId, answer: a.answer, at: a.at }));
    },
    async deliverEvent(eventType, event) {
      const eventId = hex(16);
      events.set(eventId, { payload: envelope(eventType, eventId, event), eventId });
      await send(eventId);
      return { eventId };
    },

    outbound: s.outbound.items,
    rejections: s.rejections,
    acks: s.acks.items,
    ackLog: s.acks.items,
    requests: s.requests,
    messages: s.messages,
    cards: s.cards,
    reactions: s.reactions,
    recalled: s.recalled,
    deliveries: longConn.deliveries,
    badFrames: longConn.badFrames,
    waitForOutbound(pred: (o: FakeOutbound) => boolean, timeoutMs = HANG_MS) {
      return s.outbound.wait(pred, timeoutMs, 'outbound');
    },
    async waitForAck(messageId, timeoutMs = HANG_MS) {
      const a = await s.acks.wait((x) => x.messageId === messageId, timeoutMs, `ack of ${messageId}`);
      return a;
    },
    connected: () => longConn.connected(),
    waitForConnection: (timeoutMs = HANG_MS) => longConn.waitForConnection(timeoutMs),
    setRefuseConnections(refuse) {
      s.refuse = refuse;
    },
    dropConnections: () => longConn.dropAll(),
    pingCount: () => longConn.pings,
    connectionCount: () => longConn.connectionsOpened,
    dmChatId: (userId) => s.dmChatId(userId),
    setClientConfig(cfg) {
      longConn.clientConfig = { ...longConn.clientConfig, ...cfg };
    },

    async close() {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      const err = new Error('fake lark: closed');
      s.outbound.rejectAll(err);
      s.acks.rejectAll(err);
      await longConn.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
