import { format } from 'node:util';
import { DWClient } from 'dingtalk-stream';
import type { Logger } from '../../core/logger.js';
import { ChannelError } from '../types.js';
import { causeText } from './openapi.js';

/**
 * `dingtalk-stream` 2.1.5's DWClient, made fit for a long-running gateway. The SDK has no base-URL
 * option and several defects (see /work/shared/notes/channels.md §6 and §9); each override below
 * names the one it fixes. Everything between "endpoint known" and "frame received" is SDK code.
 *
 * Events (in addition to the SDK's topic events): 'gateway-open' after each successful connection,
 * 'gateway-error' (ChannelError) after each failed attempt, 'gateway-close' (reason) when an open
 * connection drops. The SDK itself reports none of these: connect() always resolves.
 */
export interface StreamClientOptions {
  /** Channel key, for error messages. */
  name: string;
  clientId: string;
  clientSecret: string;
  /** Where `/v1.0/gateway/connections/open` lives (https://api.dingtalk.com in production). */
  apiBaseUrl: string;
  log: Logger;
  /** First reconnect delay; doubles per failure up to maxReconnectMs, reset by a successful open. */
  reconnectMs?: number;
  maxReconnectMs?: number;
  /** WebSocket ping interval; a connection with no pong by the next tick is terminated. 0 = off. */
  heartbeatMs?: number;
  /** Timeout of the connections/open request. */
  requestTimeoutMs?: number;
}

/** DWClient fields that are `private` in its .d.ts but plain JS properties at runtime. */
interface DWInternals {
  socket?: SocketLike;
  dw_url?: string;
  heartbeatIntervallId?: ReturnType<typeof setInterval>;
}

/** The part of the SDK's `ws` socket used here (kept structural so no ws typings are needed). */
interface SocketLike {
  readonly readyState: number;
  ping(): void;
  terminate(): void;
  on(event: string, fn: (...args: never[]) => void): unknown;
  once(event: string, fn: (...args: never[]) => void): unknown;
  off(event: string, fn: (...args: never[]) => void): unknown;
  listeners(event: string): Array<(...args: unknown[]) => void>;
}

const WS_CLOSED = 3;
/** How long stop() waits for the close handshake before terminating the socket. */
const CLOSE_GRACE_MS = 2_000;

export class DingtalkStreamClient extends DWClient {
  lastError: Error | undefined;
  private stopped = false;
  private connecting = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private keepAliveTimer: ReturnType<typeof setInterval> | undefined;
  private delay: number;
  private readonly abort = new AbortController();
  private readonly o: Required<StreamClientOptions>;

  constructor(opts: StreamClientOptions) {
    // keepAlive off: the SDK's keep-alive sets one interval per 'open' but clears only the newest
    // (a leaked timer keeps the process alive forever) and prints with console.error. Ours is below.
    super({ clientId: opts.clientId, clientSecret: opts.clientSecret, keepAlive: false, debug: false });
    const given = Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) as StreamClientOptions;
    this.o = { reconnectMs: 1_000, maxReconnectMs: 60_000, heartbeatMs: 8_000, requestTimeoutMs: 10_000, ...given };
    this.delay = this.o.reconnectMs;
    // autoReconnect off: the SDK schedules a reconnect from 'error', from 'close' and from connect()'s
    // catch, with untracked timers (a reconnect storm, and timers alive after stop). We schedule one.
    this.config.autoReconnect = false;
    // 2.1.5 spreads a module-level default, so config.subscriptions IS one array shared by every
    // client: registerCallbackListener would leak its topic into later clients. Give ours its own.
    this.config.subscriptions = [{ type: 'EVENT', topic: '*' }];
  }

  /** GATEWAY_URL is a module constant: this override is the only redirect point. */
  override async getEndpoint(): Promise<this> {
    const url = `${this.o.apiBaseUrl}/v1.0/gateway/connections/open`;
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ clientId: this.o.clientId, clientSecret: this.o.clientSecret, ua: this.config.ua, subscriptions: this.config.subscriptions }),
        signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.o.requestTimeoutMs)]),
      });
    } catch (err) {
      throw this.fail(new ChannelError(this.o.name, 'network', `cannot reach ${url}: ${causeText(err)}`, { cause: err }));
    }
    const body = (await res.json().catch(() => ({}))) as { endpoint?: string; ticket?: string; code?: string; message?: string };
    if (!res.ok || !body.endpoint || !body.ticket) {
      const kind = res.status === 401 || res.status === 403 ? 'auth' : res.status === 429 ? 'rate_limited' : 'other';
      const detail = [body.code, body.message].filter(Boolean).join(' ');
      throw this.fail(new ChannelError(this.o.name, kind, `gateway refused the connection (HTTP ${res.status}${detail ? ` ${detail}` : ''})`));
    }
    (this as unknown as DWInternals).dw_url = `${body.endpoint}?ticket=${encodeURIComponent(body.ticket)}`;
    return this;
  }

  override _connect(): Promise<void> {
    // _connect() resets the SDK's userDisconnect flag: never let a late call undo stop().
    if (this.stopped) return Promise.resolve();
    const internals = this as unknown as DWInternals;
    clearInterval(internals.heartbeatIntervallId); // the SDK keep-alive is off; stay leak-free if it is ever enabled
    this.stopKeepAlive();
    // The SDK creates the socket synchronously inside the promise executor, so it exists right after.
    const pending = this.quietly(() => super._connect());
    const socket = internals.socket;
    if (socket) this.adopt(socket);
    return pending.then(
      () => {
        if (socket) this.startKeepAlive(socket);
        this.delay = this.o.reconnectMs;
        this.lastError = undefined;
        this.emit('gateway-open');
      },
      (err: unknown) => {
        throw this.fail(new ChannelError(this.o.name, 'network', `stream connection failed: ${causeText(err)}`, { cause: err }));
      },
    );
  }

  /** One attempt at a time; a failure schedules exactly one retry (with backoff). Never rejects. */
  override async connect(): Promise<void> {
    if (this.stopped || this.connecting || this.connected) return;
    this.connecting = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    try {
      await this.getEndpoint();
      await this._connect();
    } catch {
      this.scheduleReconnect(); // already reported through 'gateway-error'
    } finally {
      this.connecting = false;
    }
  }

  /** A malformed frame would throw inside the socket's 'message' handler and crash the process. */
  override onDownStream(data: string): void {
    try {
      super.onDownStream(data);
    } catch (err) {
      this.o.log.warn(`ignoring a stream frame that could not be handled: ${causeText(err)}`);
    }
  }

  /** Close for good: no reconnect, no timer, and resolve only once the socket is really closed. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.stopKeepAlive();
    this.abort.abort();
    const socket = (this as unknown as DWInternals).socket;
    this.quietly(() => this.disconnect()); // disconnect() prints "Disconnecting." and only starts the close
    if (!socket || socket.readyState === WS_CLOSED) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => socket.terminate(), CLOSE_GRACE_MS);
      socket.once('close', () => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  /**
   * The SDK writes to console.info / console.warn unconditionally ("connect success", "ERROR …",
   * "Disconnecting."). The `debug` option only gates its extra output. The least invasive fix found:
   * run each SDK entry point that prints (super._connect(), disconnect(), and the 'open' / 'error'
   * socket listeners the SDK registers) with the console methods pointed at our logger's debug
   * level, restored in `finally`. The swap is synchronous, so no other code ever sees it.
   */
  private quietly<T>(fn: () => T): T {
    const c = console as unknown as Record<string, unknown>;
    const names = ['log', 'info', 'warn', 'error', 'debug'] as const;
    const saved = names.map((n) => c[n]);
    const sink = (...args: unknown[]) => this.o.log.debug(`sdk: ${format(...args)}`);
    for (const n of names) c[n] = sink;
    try {
      return fn();
    } finally {
      names.forEach((n, i) => {
        c[n] = saved[i];
      });
    }
  }

  /** Routes the SDK's listeners through quietly() and adds ours (drop detection, pongs). */
  private adopt(socket: SocketLike): void {
    for (const event of ['open', 'error']) {
      for (const listener of socket.listeners(event)) {
        socket.off(event, listener);
        socket.on(event, (...args: unknown[]) => this.quietly(() => listener.apply(socket, args)));
      }
    }
    let opened = false;
    socket.once('open', () => {
      opened = true;
    });
    socket.on('pong', () => {
      this.alive = true;
    });
    socket.on('close', (code: number, reason: Buffer) => {
      if ((this as unknown as DWInternals).socket !== socket) return; // an older socket
      this.stopKeepAlive();
      if (this.stopped) return;
      if (opened) this.emit('gateway-close', reason.length > 0 ? reason.toString() : `socket closed (code ${code})`);
      // While connect() runs, its own catch schedules the retry (a failed upgrade emits 'close' too).
      if (!this.connecting) this.scheduleReconnect();
    });
  }

  private alive = true;

  private startKeepAlive(socket: SocketLike): void {
    if (this.o.heartbeatMs <= 0) return;
    this.alive = true;
    this.keepAliveTimer = setInterval(() => {
      if (!this.alive) {
        this.o.log.warn(`no pong within ${this.o.heartbeatMs} ms: dropping the stream connection`);
        socket.terminate();
        return;
      }
      this.alive = false;
      socket.ping();
    }, this.o.heartbeatMs);
  }

  private stopKeepAlive(): void {
    clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = undefined;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer) return;
    const delay = this.delay;
    this.delay = Math.min(this.delay * 2, this.o.maxReconnectMs);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, delay);
  }

  private fail(err: ChannelError): ChannelError {
    this.lastError = err;
    if (!this.stopped) this.emit('gateway-error', err);
    return err;
  }
}
