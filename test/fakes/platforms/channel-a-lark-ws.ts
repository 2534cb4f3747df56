/**
 * The Lark long connection: endpoint discovery (`POST /callback/ws/endpoint`) and the websocket that
 * carries protobuf `pbbp2.Frame`s (ping/pong control frames, fragmented event data frames, acks).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { FRAME_CONTROL, FRAME_DATA, decodeFrame, encodeFrame, headerMap, type LarkFrame } from './channel-a-lark-proto.js';
import { LarkError, hex, type LarkState } from './channel-a-lark-state.js';

/** Seconds, as the real endpoint sends them (the SDK multiplies by 1000). */
export interface ClientConfig {
  PingInterval: number;
  ReconnectCount: number;
  ReconnectInterval: number;
  ReconnectNonce: number;
}

/**
 * Real Lark sends PingInterval 120, ReconnectCount -1, ReconnectInterval 120, ReconnectNonce 30. The fake
 * keeps the ping interval but reconnects fast (1 s, no jitter) so reconnect tests take milliseconds.
 */
export const DEFAULT_CLIENT_CONFIG: ClientConfig = { PingInterval: 120, ReconnectCount: -1, ReconnectInterval: 1, ReconnectNonce: 0 };

/** The endpoint's non-zero code when refusing. 514 is `ErrorCode.auth_failed` in the SDK: not retryable. */
export const WS_AUTH_FAILED = 514;

interface Conn {
  ws: WebSocket;
  deviceId: string;
  serviceId: number;
  openedAt: number;
  /**
   * Set by the client's first frame (its ping, sent from the 'open' handler). Only then has the SDK attached
   * its 'message' listener (`communicate()` runs after `connect()` resolves): frames pushed right after the
   * upgrade are emitted on a nextTick before that, and the SDK silently drops them.
   */
  ready: boolean;
}

export interface Delivery {
  messageId: string;
  eventId: string;
  frameMessageId: string;
  fragments: number;
  at: number;
}

export class LarkLongConn {
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly conns = new Set<Conn>();
  private readonly tickets = new Map<string, { deviceId: string; serviceId: number }>();
  private readonly frameToEvent = new Map<string, { messageId: string; eventId: string }>();
  private connWaiters = new Set<{ ok: () => void; fail: (e: Error) => void }>();
  private seq = 0;
  pings = 0;
  connectionsOpened = 0;
  readonly deliveries: Delivery[] = [];
  /** Frames the fake could not decode (a protocol bug on the client side). */
  readonly badFrames: Array<{ error: string; at: number }> = [];
  clientConfig: ClientConfig;

  constructor(
    private readonly s: LarkState,
    private readonly port: () => number,
    cfg: Partial<ClientConfig> = {},
  ) {
    this.clientConfig = { ...DEFAULT_CLIENT_CONFIG, ...cfg };
  }

  /** `POST /callback/ws/endpoint {AppID, AppSecret}` (HTTP 200 either way, like the real gateway). */
  endpoint(body: Record<string, unknown>): Record<string, unknown> {
    if (this.s.refuse || body.AppID !== this.s.appId || body.AppSecret !== this.s.appSecret) {
      const err = new LarkError(WS_AUTH_FAILED, 'auth failed: invalid app id or secret', 200);
      this.s.reject('ws.endpoint', err, body);
      // `data` must be an object: the SDK destructures `data: { URL, ClientConfig }` before looking at
      // `code`, and a missing `data` turns the refusal into a retryable TypeError (endless retries).
      return { code: err.code, msg: err.message, data: {} };
    }
    const deviceId = String(7_000_000_000_000_000_000n + BigInt(Math.floor(Math.random() * 1e15)));
    const serviceId = 30_000_000 + Math.floor(Math.random() * 1_000_000);
    const ticket = `${hex(4)}-${hex(2)}-${hex(2)}-${hex(2)}-${hex(6)}`;
    this.tickets.set(ticket, { deviceId, serviceId });
    // The SDK reads device_id/service_id with qs.parse(<whole URL>): the first parameter's key swallows
    // the "ws://host/path?" prefix, so neither may come first. The real URL starts with fpid=…&aid=….
    const q = `fpid=493&aid=552564&device_id=${deviceId}&access_key=${hex(16)}&service_id=${serviceId}&ticket=${ticket}`;
    return { code: 0, msg: 'ok', data: { URL: `ws://127.0.0.1:${this.port()}/ws/v2?${q}`, ClientConfig: this.clientConfig } };
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const ticket = this.tickets.get(url.searchParams.get('ticket') ?? '');
    if (url.pathname !== '/ws/v2' || !ticket || this.s.refuse) {
      const status = url.pathname !== '/ws/v2' ? '404 Not Found' : '403 Forbidden';
      socket.end(`HTTP/1.1 ${status}\r\nhandshake-status: 403\r\nhandshake-msg: invalid ticket\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
      return;
    }
    this.tickets.delete(url.searchParams.get('ticket') ?? ''); // single use: every (re)connect pulls a new one
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, ticket));
  }

  private onConnection(ws: WebSocket, t: { deviceId: string; serviceId: number }): void {
    const conn: Conn = { ws, ...t, openedAt: Date.now(), ready: false };
    this.conns.add(conn);
    this.connectionsOpened++;
    ws.on('message', (data) => this.onFrame(conn, data));
    ws.on('close', () => this.conns.delete(conn));
    ws.on('error', () => this.conns.delete(conn));
  }

  private send(conn: Conn, frame: LarkFrame): Promise<void> {
    return new Promise((resolve, reject) => conn.ws.send(encodeFrame(frame), (err) => (err ? reject(err) : resolve())));
  }

  private onFrame(conn: Conn, data: RawData): void {
    const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    let frame: LarkFrame;
    try {
      frame = decodeFrame(buf);
    } catch (e) {
      this.badFrames.push({ error: String(e), at: Date.now() });
      return;
    }
    const h = headerMap(frame);
    if (!conn.ready) {
      conn.ready = true;
      for (const w of [...this.connWaiters]) w.ok();
    }
    if (frame.method === FRAME_CONTROL && h.type === 'ping') {
      this.pings++;
      const payload = Buffer.from(JSON.stringify(this.clientConfig));
      const pong: LarkFrame = { SeqID: 0, LogID: 0, service: frame.service, method: FRAME_CONTROL, headers: [{ key: 'type', value: 'pong' }], payload };
      this.send(conn, pong).catch(() => undefined);
      return;
    }
    if (frame.method === FRAME_DATA) {
      // The ack: the client echoes the (last) event frame with a biz_rt header and payload {"code":200[,"data":b64]}.
      let code = 0;
      let answer: unknown;
      try {
        const ack = JSON.parse(Buffer.from(frame.payload ?? []).toString('utf8')) as { code?: unknown; data?: unknown };
        code = Number(ack.code);
        if (typeof ack.data === 'string') answer = JSON.parse(Buffer.from(ack.data, 'base64').toString('utf8'));
      } catch {
        code = -1;
      }
      const frameMessageId = h.message_id ?? '';
      const ev = this.frameToEvent.get(frameMessageId);
      const answered = answer === undefined ? {} : { answer };
      this.s.acks.push({
        messageId: ev?.messageId ?? frameMessageId,
        eventId: ev?.eventId ?? '',
        code,
        frameMessageId,
        bizRt: h.biz_rt,
        ...answered,
        at: Date.now(),
      });
    }
  }

  connected(): boolean {
    return this.readyConns().length > 0;
  }

  private readyConns(): Conn[] {
    return [...this.conns].filter((c) => c.ready && c.ws.readyState === WebSocket.OPEN);
  }

  waitForConnection(timeoutMs: number): Promise<void> {
    if (this.connected()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const w = {
        ok: (): void => {
          clearTimeout(timer);
          this.connWaiters.delete(w);
          resolve();
        },
        fail: (e: Error): void => {
          clearTimeout(timer);
          this.connWaiters.delete(w);
          reject(e);
        },
      };
      const timer = setTimeout(() => w.fail(new Error(`fake lark: no SDK connection within ${timeoutMs} ms`)), timeoutMs);
      this.connWaiters.add(w);
    });
  }

  /** Send one event, split into `fragments` data frames (`sum`/`seq` headers), to the newest connection. */
  async sendEvent(payload: unknown, ids: { messageId: string; eventId: string }, fragments: number): Promise<Delivery> {
    const conn = this.readyConns().pop();
    if (!conn) throw new Error('fake lark: no SDK connection to deliver to (call waitForConnection first)');
    const bytes = Buffer.from(JSON.stringify(payload), 'utf8');
    const n = Math.max(1, Math.min(fragments, bytes.length));
    const frameMessageId = `${hex(8)}-${hex(4)}`;
    const traceId = hex(16);
    this.frameToEvent.set(frameMessageId, ids);
    for (let i = 0; i < n; i++) {
      const part = bytes.subarray(Math.floor((i * bytes.length) / n), Math.floor(((i + 1) * bytes.length) / n));
      await this.send(conn, {
        SeqID: ++this.seq,
        LogID: Math.floor(Math.random() * 2 ** 40),
        service: conn.serviceId,
        method: FRAME_DATA,
        headers: [
          { key: 'type', value: 'event' },
          { key: 'message_id', value: frameMessageId },
          { key: 'sum', value: String(n) },
          { key: 'seq', value: String(i) },
          { key: 'trace_id', value: traceId },
        ],
        payload: part,
        LogIDNew: `${Date.now()}${hex(8)}`,
      });
    }
    const d: Delivery = { ...ids, frameMessageId, fragments: n, at: Date.now() };
    this.deliveries.push(d);
    return d;
  }

  /** Abrupt server-side drop (TCP destroyed, no close frame): the SDK's 'close' handler reconnects. */
  dropAll(): void {
    for (const c of this.conns) c.ws.terminate();
  }

  close(): Promise<void> {
    this.dropAll();
    for (const w of [...this.connWaiters]) w.fail(new Error('fake lark: closed'));
    return new Promise((resolve) => this.wss.close(() => resolve()));
  }
}
