import * as lark from '@larksuiteoapi/node-sdk';
import type { LarkCardAction, LarkCardActionAnswer } from './approval.js';
import type { LarkReceiveEvent } from './inbound.js';
import type { LarkSdkLogger } from './logger.js';

export interface LarkLongConnectionOptions {
  appId: string;
  appSecret: string;
  /** No trailing slash (the SDK appends `/callback/ws/endpoint`). */
  domain: string;
  /** Seconds without any frame after a ping before the SDK drops the socket and reconnects. */
  pingTimeout?: number | undefined;
  sdkLogger: LarkSdkLogger;
  /** The SDK acknowledges the event when this resolves (and with code 500 when it throws). */
  onEvent(event: LarkReceiveEvent): Promise<void>;
  /** A card button press (`card.action.trigger`); what this resolves to is the callback's answer (a toast). */
  onCardAction(action: LarkCardAction): Promise<LarkCardActionAnswer>;
  /** Changes after start() resolved. */
  onStatus(state: 'connected' | 'disconnected', reason?: string): void;
}

export interface LarkLongConnection {
  /** Resolves on the first handshake; rejects when the endpoint refuses the app (the SDK gives up). */
  start(): Promise<void>;
  /** Closes the socket and clears every timer (the SDK's ping/reconnect timers and our retry timer). */
  stop(): void;
}

/** Backoff of our own restarts after the SDK gave up: 1 s, 2 s, 4 s … at most a minute. */
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 60_000;

/**
 * The long connection (WSClient). Its `start()` returns before any connection exists, so readiness
 * comes from the onReady / onError callbacks. The SDK reconnects by itself after a drop (with the
 * interval the server's ClientConfig names), but a *refused* endpoint call (a non-zero code such as
 * 514 auth failed or 1000040350 too many connections) is final for it: it calls onError and stops.
 * Once started, we then start it again ourselves with backoff, reporting `disconnected` meanwhile.
 */
export function createLarkLongConnection(o: LarkLongConnectionOptions): LarkLongConnection {
  let stopped = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let attempts = 0;
  let pending: { resolve: () => void; reject: (err: Error) => void } | undefined;

  const dispatcher = new lark.EventDispatcher({ logger: o.sdkLogger, loggerLevel: lark.LoggerLevel.warn }).register({
    'im.message.receive_v1': (data) => o.onEvent(data),
    // Card callbacks come over the same long connection as events; the SDK sends the handler's
    // result back (base64 in the ack's `data`), and that is what the client shows.
    'card.action.trigger': (data: LarkCardAction) => o.onCardAction(data),
  });

  const ws = new lark.WSClient({
    appId: o.appId,
    appSecret: o.appSecret,
    domain: o.domain,
    logger: o.sdkLogger,
    loggerLevel: lark.LoggerLevel.warn,
    // Without it a handshake stuck on DNS / a proxy waits forever instead of being retried.
    handshakeTimeoutMs: 15_000,
    ...(o.pingTimeout ? { wsConfig: { pingTimeout: o.pingTimeout } } : {}),
    onReady: () => {
      attempts = 0;
      if (pending) settle()?.resolve();
      else if (!stopped) o.onStatus('connected');
    },
    onReconnecting: () => {
      if (!stopped && !pending) o.onStatus('disconnected', 'the long connection dropped; the SDK is reconnecting');
    },
    onReconnected: () => {
      attempts = 0;
      if (!stopped && !pending) o.onStatus('connected');
    },
    onError: (err) => {
      if (pending) settle()?.reject(err);
      else restartLater(err);
    },
  });

  function settle() {
    const p = pending;
    pending = undefined;
    return p;
  }

  function restartLater(err: Error): void {
    if (stopped) return;
    const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** attempts++);
    o.onStatus('disconnected', `${err.message}; starting the long connection again in ${Math.round(delay / 1000)} s`);
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      if (stopped) return;
      ws.start({ eventDispatcher: dispatcher }).catch((e: unknown) => restartLater(e instanceof Error ? e : new Error(String(e))));
    }, delay);
  }

  return {
    async start() {
      const ready = new Promise<void>((resolve, reject) => (pending = { resolve, reject }));
      await ws.start({ eventDispatcher: dispatcher });
      try {
        await ready;
      } catch (err) {
        ws.close({ force: true }); // the SDK armed its fragment-sweep timer in start()
        throw err;
      }
    },
    stop() {
      stopped = true;
      clearTimeout(retryTimer);
      retryTimer = undefined;
      settle()?.reject(new Error('stopped before the long connection was up'));
      ws.close({ force: true });
    },
  };
}
