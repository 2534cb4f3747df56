/**
 * Fake Slack (channel_d) for @slack/bolt 5.1.0 in Socket Mode (@slack/web-api 8.2.0, @slack/socket-mode 3.1.0).
 * One HTTP server on 127.0.0.1 serves the Web API (`/api/<method>`, see channel-d-slack-api.ts), the
 * Socket Mode websocket (`/link/?ticket=…`, URL handed out by `apps.connections.open`) and private
 * file downloads (`/files-pri/…`, Bearer bot token required, like Slack).
 *
 * Pointing the SDK at it (what an adapter must make configurable):
 *
 *   const slack = await startFakeSlack();
 *   const { botToken, appToken, apiUrl } = slack.channelConfig;   // apiUrl = 'http://127.0.0.1:P/api/'
 *   const clientOptions = { slackApiUrl: apiUrl, retryConfig: { retries: 0 } };   // no retries in tests
 *   const app = new App({
 *     token: botToken,
 *     deferInitialization: true,            // auth.test runs in `await app.init()`, not unhandled in the ctor
 *     logLevel: LogLevel.ERROR,
 *     clientOptions,                        // app.client -> fake
 *     // App({socketMode:true, appToken}) does not forward clientPingTimeout; build the receiver to make
 *     // the reconnect delay (clientPingTimeout × consecutive failures) short:
 *     receiver: new SocketModeReceiver({ appToken, clientPingTimeout: 1000, installerOptions: { clientOptions } }),
 *   });
 *   await app.init();
 *   await app.start();                       // resolves after the fake's `hello`
 *   ...
 *   await app.stop();                        // only while connected (see notes §9.2), then:
 *   await slack.close();
 *
 * Protocol summary: on connect the fake sends `hello`; user messages arrive as `events_api` envelopes
 * (event_callback payload with a `message` event; DMs have channel_type 'im' on channel `D<userId>`).
 * A group message with mentionBot carries `<@UBOT>` in the text and, unless turned off, a second
 * `app_mention` envelope. Acks (`{envelope_id,payload}`) are recorded against the message ts, which
 * is the messageId. `redeliver` resends every envelope of a message with a new envelope_id, the same
 * event_id, retry_attempt+1 and retry_reason 'timeout' (dedupe on event_id or channel+ts, never on
 * envelope_id). `dropConnections` terminates sockets (network loss); `sendDisconnect` is Slack's
 * graceful `{type:'disconnect',reason:'refresh_requested'}`. While refusing, every Web API call
 * (auth.test and apps.connections.open included) answers `{ok:false,error:'invalid_auth'}`.
 * Stricter than Slack: text over 40 000 characters is rejected with `msg_too_long` (Slack truncates).
 * Buttons: a post's `actions` blocks are checked (button text plain_text ≤ 75, value ≤ 2000, unique
 * action_id) and recorded as `buttons`; `press()` sends the `interactive` envelope (a `block_actions`
 * payload) a click makes; its ack is recorded under the press id it returns.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { WebSocketServer, WebSocket } from 'ws';
import { Recorder, closeServer, listen, parseRequest, randomToken, sendJson } from './_shared-slack-telegram.js';
import { blockButtons, handleSlackApi, SLACK_TEXT_LIMIT, type SlackMessage, type SlackState } from './channel-d-slack-api.js';
import type { FakeImage, FakeInbound, FakePlatform, FakePlatformOptions } from './types.js';
import { HANG_MS } from '../../helpers/wait.js';

export type { SlackMessage } from './channel-d-slack-api.js';

export interface SlackFakeOptions extends FakePlatformOptions {
  /** Send the extra `app_mention` envelope for group mentions (default true). */
  sendAppMention?: boolean;
  /** Echo the bot's own posts back as `message` events, like a real app subscribed to message.* (default false). */
  echoBotMessages?: boolean;
}

export interface SlackExtras {
  readonly channelConfig: { botToken: string; appToken: string; apiUrl: string };
  readonly teamId: string;
  readonly appId: string;
  readonly botId: string;
  /** Every Web API call as received (method + parsed params). */
  readonly calls: SlackState['calls'];
  /** Every frame the fake sent on a socket (hello, envelopes, disconnect). */
  readonly frames: Array<Record<string, unknown>>;
  /** Successful apps.connections.open calls so far (grows by one per (re)connect). */
  connectionsOpened(): number;
  setSendAppMention(on: boolean): void;
  setEchoBotMessages(on: boolean): void;
  /** Graceful server-initiated refresh: the client reconnects through apps.connections.open. */
  sendDisconnect(reason?: string): void;
  /**
   * Make the next call of `method` fail: `{error}` gives `{ok:false,error}`, `{retryAfter}` gives HTTP 429, and
   * the method stays refused (429) until that many seconds have passed, as Slack does.
   */
  failNext(method: string, failure: { error?: string; retryAfter?: number }): void;
  /** Stored messages of a channel (history, delivered and bot messages), in insertion order. */
  history(channel: string): SlackMessage[];
  /**
   * Click the button labelled `label` on the bot's message `messageId` (its ts) in `chatId`, as
   * `userId`: sends the `interactive` envelope. Resolves once it was sent, with the id its ack is
   * recorded under in `acks`.
   */
  press(opts: { chatId: string; messageId: string; label: string; userId: string }): Promise<{ pressId: string }>;
}

interface Delivery {
  messageId: string;
  frames: Array<{ event: Record<string, unknown>; eventId: string; attempt: number }>;
}

const MIME_EXT: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };

export async function startFakeSlack(opts: SlackFakeOptions = {}): Promise<FakePlatform & SlackExtras> {
  const recorder = new Recorder();
  const suffix = randomToken(16).toLowerCase();
  let sendAppMention = opts.sendAppMention ?? true;
  let echoBotMessages = opts.echoBotMessages ?? false;
  let lastMicros = 0;
  const usedTs = new Set<string>();
  const sockets = new Set<WebSocket>();
  const live = new Set<WebSocket>();
  const frames: Array<Record<string, unknown>> = [];
  const delivered = new Map<string, Delivery>();
  const envelopeToMessage = new Map<string, string>();

  const state: SlackState = {
    port: 0,
    botToken: `xoxb-000000000001-000000000002-${suffix}`,
    appToken: `xapp-1-A0FAKEAPP-000000000003-${suffix}`,
    teamId: 'T0FAKETEAM',
    appId: 'A0FAKEAPP',
    botId: 'BBOT',
    botUserId: 'UBOT',
    botName: 'servicebot',
    refuse: false,
    channels: new Map(),
    users: new Map(),
    files: new Map(),
    uploads: new Map(),
    tickets: new Set(),
    connectionsOpened: 0,
    failures: new Map(),
    holds: new Map(),
    calls: [],
    recorder,
    newTs(ms?: number): string {
      let micros = Math.floor((ms ?? Date.now()) * 1000);
      if (ms === undefined) micros = Math.max(micros, lastMicros + 1);
      let ts = '';
      for (; ; micros++) {
        ts = `${Math.floor(micros / 1e6)}.${String(micros % 1e6).padStart(6, '0')}`;
        if (!usedTs.has(ts)) break;
      }
      if (ms === undefined) lastMicros = micros;
      usedTs.add(ts);
      return ts;
    },
    onBotMessage(channel, msg) {
      if (!echoBotMessages || !currentSocket()) return;
      const event = { ...msg, channel, event_ts: msg.ts, channel_type: channelType(channel) };
      void sendDelivery({ messageId: msg.ts, frames: [{ event, eventId: `Ev${randomToken(10)}`, attempt: 0 }] }).catch(() => {});
    },
  };

  const channelType = (c: string) => (c.startsWith('D') ? 'im' : c.startsWith('G') ? 'group' : 'channel');
  const currentSocket = (): WebSocket | undefined => [...live].reverse().find((ws) => ws.readyState === WebSocket.OPEN);
  const sendFrame = (ws: WebSocket, frame: Record<string, unknown>) =>
    new Promise<void>((resolve, reject) => {
      frames.push(frame);
      ws.send(JSON.stringify(frame), (err) => (err ? reject(err) : resolve()));
    });

  async function sendDelivery(d: Delivery, retry = false): Promise<void> {
    const ws = await recorder.waitFor(currentSocket, HANG_MS, 'a Socket Mode connection to deliver on');
    for (const f of d.frames) {
      if (retry) f.attempt += 1;
      const envelopeId = randomUUID();
      envelopeToMessage.set(envelopeId, d.messageId);
      await sendFrame(ws, {
        envelope_id: envelopeId,
        type: 'events_api',
        accepts_response_payload: false,
        retry_attempt: f.attempt,
        retry_reason: f.attempt > 0 ? 'timeout' : '',
        payload: {
          token: 'fake-verification-token',
          team_id: state.teamId,
          context_team_id: state.teamId,
          context_enterprise_id: null,
          api_app_id: state.appId,
          event: f.event,
          type: 'event_callback',
          event_id: f.eventId,
          event_time: Math.floor(Date.now() / 1000),
          authorizations: [{ enterprise_id: null, team_id: state.teamId, user_id: state.botUserId, is_bot: true, is_enterprise_install: false }],
          is_ext_shared_channel: false,
          event_context: `4-fake-${f.eventId}`,
        },
      });
    }
  }

  /** Build and store a user message (history + users + files); shared by deliver and addHistory. */
  function store(msg: FakeInbound): { channel: string; message: SlackMessage } {
    const direct = msg.chatType === 'direct';
    if (!direct && !msg.chatId) throw new Error('fake slack: a group message needs chatId (a C… or G… channel id)');
    const channel = direct ? `D${msg.userId}` : (msg.chatId as string);
    state.users.set(msg.userId, msg.userName ?? msg.userId.toLowerCase());
    let text = msg.text;
    const tags: string[] = [];
    if (!direct && msg.mentionBot && !text.includes(`<@${state.botUserId}>`)) tags.push(`<@${state.botUserId}>`);
    for (const u of msg.mentionUsers ?? []) {
      state.users.set(u.userId, u.userName);
      if (!text.includes(`<@${u.userId}>`)) tags.push(`<@${u.userId}>`);
    }
    if (tags.length) text = `${tags.join(' ')} ${text}`;
    const ts = msg.messageId ?? state.newTs(msg.ts);
    usedTs.add(ts);
    const message: SlackMessage = {
      type: 'message',
      ts,
      team: state.teamId,
      text,
      user: msg.userId,
      client_msg_id: randomUUID(),
      ...(msg.fromBot ? { bot_id: `B${msg.userId}` } : {}),
    };
    if (msg.threadId) message.thread_ts = msg.threadId;
    // A voice clip recorded in Slack is a file of subtype slack_audio.
    const clip = msg.voice ? [{ ...msg.voice, fileName: msg.voice.fileName ?? 'audio_message.webm', clip: true }] : [];
    const attached: Array<FakeImage & { clip?: boolean }> = [...(msg.images ?? []), ...(msg.files ?? []), ...clip];
    if (attached.length) {
      message.subtype = 'file_share';
      message.files = attached.map((img, i) => {
        const id = `F${randomToken(10)}`;
        const ext = MIME_EXT[img.mimeType] ?? 'bin';
        const name = img.fileName ?? `image-${i + 1}.${ext}`;
        state.files.set(id, { id, name, mimetype: img.mimeType, data: img.data });
        const base = `http://127.0.0.1:${state.port}/files-pri/${state.teamId}-${id}`;
        const created = Math.floor(Date.now() / 1000);
        return {
          id,
          created,
          timestamp: created,
          name,
          title: name,
          mimetype: img.mimeType,
          filetype: ext,
          pretty_type: ext.toUpperCase(),
          user: msg.userId,
          size: img.data.length,
          mode: 'hosted',
          is_external: false,
          is_public: false,
          url_private: `${base}/${encodeURIComponent(name)}`,
          url_private_download: `${base}/download/${encodeURIComponent(name)}`,
          ...(img.clip ? { subtype: 'slack_audio' } : {}),
        };
      });
    }
    const list = state.channels.get(channel) ?? [];
    list.push(message);
    state.channels.set(channel, list);
    return { channel, message };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (url.pathname.startsWith('/api/')) {
      const { params } = await parseRequest(req);
      const token = bearer ?? (typeof params.token === 'string' ? params.token : undefined);
      const r = handleSlackApi(state, url.pathname.slice(5), params, token);
      sendJson(res, r.status, r.body, r.headers);
      return;
    }
    const upload = /^\/upload\/v1\/(F[A-Z0-9]+)$/.exec(url.pathname);
    if (upload && req.method === 'POST') {
      // The upload URL takes the bytes raw or as one multipart file part (web-api sends the latter).
      const pending = state.uploads.get(upload[1] ?? '');
      const { files } = await parseRequest(req);
      if (!pending || !files[0]) return void sendJson(res, 404, { ok: false, error: 'upload_not_found' });
      pending.data = files[0].data;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`OK - ${pending.data.length}`);
      return;
    }
    const file = /^\/files-pri\/[^/]+-(F[A-Z0-9]+)\//.exec(url.pathname);
    if (file && req.method === 'GET') {
      const f = state.files.get(file[1] ?? '');
      if (bearer !== state.botToken || state.refuse) {
        // Like Slack: without a valid token a private file URL answers 200 with the HTML sign-in page.
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<!DOCTYPE html><html><body>Sign in to Fake Team</body></html>');
        return;
      }
      if (!f) return void sendJson(res, 404, { ok: false, error: 'file_not_found' });
      res.writeHead(200, { 'content-type': f.mimetype, 'content-length': f.data.length });
      res.end(f.data);
      return;
    }
    sendJson(res, 404, { ok: false, error: 'unknown_method' });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => sendJson(res, 500, { ok: false, error: 'fatal_error', detail: String(err) }));
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const ticket = url.searchParams.get('ticket') ?? '';
    if (url.pathname !== '/link/' || !state.tickets.delete(ticket)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('error', () => {});
      ws.on('close', () => {
        sockets.delete(ws);
        live.delete(ws);
        recorder.notify();
      });
      ws.on('message', (data) => {
        let frame: { envelope_id?: string };
        try {
          frame = JSON.parse(data.toString()) as { envelope_id?: string };
        } catch {
          return;
        }
        const messageId = frame.envelope_id ? envelopeToMessage.get(frame.envelope_id) : undefined;
        if (messageId) recorder.addAck(messageId);
      });
      const hello = {
        type: 'hello',
        num_connections: sockets.size,
        debug_info: { host: 'applink-fake-1', build_number: 1, approximate_connection_time: 18060 },
        connection_info: { app_id: state.appId },
      };
      void sendFrame(ws, hello).then(
        () => {
          live.add(ws);
          recorder.notify();
        },
        () => {},
      );
    });
  });

  state.port = await listen(server, opts.port ?? 0);

  return {
    name: 'channel_d',
    channelConfig: { botToken: state.botToken, appToken: state.appToken, apiUrl: `http://127.0.0.1:${state.port}/api/` },
    botUserId: state.botUserId,
    botName: state.botName,
    limit: { max: SLACK_TEXT_LIMIT, unit: 'chars' },
    teamId: state.teamId,
    appId: state.appId,
    botId: state.botId,
    calls: state.calls,
    frames,
    outbound: recorder.outbound,
    rejections: recorder.rejections,
    acks: recorder.acks,

    async deliver(msg) {
      const { channel, message } = store(msg);
      const event: Record<string, unknown> = { ...message, channel, event_ts: message.ts, channel_type: channelType(channel) };
      const d: Delivery = { messageId: message.ts, frames: [{ event, eventId: `Ev${randomToken(10)}`, attempt: 0 }] };
      if (msg.chatType === 'group' && msg.mentionBot && sendAppMention) {
        const { type: _t, subtype: _s, channel_type: _c, ...rest } = event;
        d.frames.push({ event: { ...rest, type: 'app_mention' }, eventId: `Ev${randomToken(10)}`, attempt: 0 });
      }
      delivered.set(message.ts, d);
      await sendDelivery(d);
      return { messageId: message.ts };
    },
    async redeliver(messageId) {
      const d = delivered.get(messageId);
      if (!d) throw new Error(`fake slack: message ${messageId} was never delivered`);
      await sendDelivery(d, true);
    },
    addHistory(msg) {
      return { messageId: store(msg).message.ts };
    },
    waitForOutbound: (pred, timeoutMs) => recorder.waitForOutbound(pred, timeoutMs),
    waitForAck: (messageId, timeoutMs) => recorder.waitForAck(messageId, timeoutMs),
    connected: () => currentSocket() !== undefined,
    async waitForConnection(timeoutMs = HANG_MS) {
      await recorder.waitFor(currentSocket, timeoutMs, 'a Socket Mode connection');
    },
    setRefuseConnections(refuse) {
      state.refuse = refuse;
    },
    dropConnections() {
      for (const ws of sockets) ws.terminate();
    },
    sendDisconnect(reason = 'refresh_requested') {
      for (const ws of live) void sendFrame(ws, { type: 'disconnect', reason, debug_info: { host: 'applink-fake-1' } }).catch(() => {});
    },
    connectionsOpened: () => state.connectionsOpened,
    setSendAppMention(on) {
      sendAppMention = on;
    },
    setEchoBotMessages(on) {
      echoBotMessages = on;
    },
    failNext(method, failure) {
      state.failures.set(method, failure);
    },
    history: (channel) => [...(state.channels.get(channel) ?? [])],
    async press({ chatId, messageId, label, userId }) {
      const message = state.channels.get(chatId)?.find((m) => m.ts === messageId && m.user === state.botUserId);
      if (!message) throw new Error(`fake slack: no bot message ${messageId} in ${chatId}`);
      const blocks = (Array.isArray(message.blocks) ? message.blocks : []) as Array<{
        type?: string;
        block_id?: string;
        elements?: Array<Record<string, unknown>>;
      }>;
      const block = blocks.find((b) => b.type === 'actions' && b.elements?.some((e) => (e.text as { text?: string })?.text === label));
      const button = block?.elements?.find((e) => (e.text as { text?: string })?.text === label);
      if (!block || !button || !Array.isArray(blockButtons([block]))) throw new Error(`fake slack: message ${messageId} has no button "${label}"`);
      const ws = await recorder.waitFor(currentSocket, HANG_MS, 'a Socket Mode connection to deliver on');
      const pressId = `press:${randomToken(8)}`;
      const envelopeId = randomUUID();
      envelopeToMessage.set(envelopeId, pressId);
      const name = state.users.get(userId) ?? userId.toLowerCase();
      const actionTs = state.newTs();
      await sendFrame(ws, {
        envelope_id: envelopeId,
        type: 'interactive',
        accepts_response_payload: false,
        payload: {
          type: 'block_actions',
          user: { id: userId, username: name, name, team_id: state.teamId },
          api_app_id: state.appId,
          token: 'fake-verification-token',
          container: {
            type: 'message',
            message_ts: message.ts,
            channel_id: chatId,
            is_ephemeral: false,
            ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
          },
          trigger_id: `${Date.now()}.${randomToken(10)}`,
          team: { id: state.teamId, domain: 'fake-team' },
          enterprise: null,
          is_enterprise_install: false,
          channel: { id: chatId, name: chatId.startsWith('D') ? 'directmessage' : 'general' },
          message,
          state: { values: {} },
          response_url: `http://127.0.0.1:${state.port}/actions/${randomToken(10)}`,
          actions: [{ ...button, block_id: block.block_id ?? 'fake-block', action_ts: actionTs }],
        },
      });
      return { pressId };
    },
    async close() {
      recorder.close();
      for (const ws of sockets) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await closeServer(server);
    },
  };
}
