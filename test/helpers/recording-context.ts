/**
 * Driving a channel adapter through its interface in tests: a ChannelContext that records what
 * the adapter hands over (with waiters), and probes for what an adapter must not leave behind
 * (open handles, unhandled rejections).
 */
import { createLogger } from '../../src/core/logger.js';
import type { ChannelContext, InboundMessage } from '../../src/channels/types.js';

export type Status = Parameters<ChannelContext['onStatus']>[0];

export interface RecordingContext extends ChannelContext {
  readonly messages: InboundMessage[];
  readonly statuses: Status[];
  /** Every line the adapter logged through ctx.log (debug and up), SDK output it routes included. */
  readonly logLines: string[];
  /** When onMessage resolved, per message id (the moment an adapter may acknowledge; the last hand-over wins). */
  readonly handedOverAt: Map<string, number>;
  /** Runs inside onMessage after the message is recorded: a slow hook delays the hand-over, a throwing one fails it. */
  onMessageHook: ((m: InboundMessage) => Promise<void> | void) | undefined;
  waitForMessage(pred: (m: InboundMessage) => boolean, timeoutMs?: number): Promise<InboundMessage>;
  waitForMessages(count: number, timeoutMs?: number): Promise<InboundMessage[]>;
  /** A status matching `pred`, or with this `state`. */
  waitForStatus(pred: ((s: Status) => boolean) | Status['state'], timeoutMs?: number): Promise<Status>;
}

export function createRecordingContext(opts: { onMessage?: (m: InboundMessage) => Promise<void> | void } = {}): RecordingContext {
  const logLines: string[] = [];
  const ctx: RecordingContext = {
    messages: [],
    statuses: [],
    logLines,
    handedOverAt: new Map(),
    onMessageHook: opts.onMessage,
    log: createLogger({ level: 'debug', write: (line) => logLines.push(line) }),
    async onMessage(m) {
      ctx.messages.push(m);
      await ctx.onMessageHook?.(m);
      ctx.handedOverAt.set(m.messageId, Date.now());
    },
    onStatus(s) {
      ctx.statuses.push(s);
    },
    waitForMessage: (pred, timeoutMs = 5_000) => poll(() => ctx.messages.find(pred), timeoutMs, 'an inbound message'),
    waitForMessages: (count, timeoutMs = 5_000) => poll(() => (ctx.messages.length >= count ? ctx.messages : undefined), timeoutMs, `${count} inbound message(s)`),
    waitForStatus: (pred, timeoutMs = 5_000) => {
      const match = typeof pred === 'function' ? pred : (s: Status) => s.state === pred;
      return poll(() => ctx.statuses.find(match), timeoutMs, 'a status change');
    },
  };
  return ctx;
}

export async function poll<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const until = (cond: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<true> => poll(() => (cond() ? true : undefined), timeoutMs, what);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Resources that would keep the process alive (sockets, timers, immediates), once transient ones
 * had time to go: vitest's runner keeps a 100 ms throttle timer that is sometimes pending at the
 * moment of the check. A leaked interval or socket stays, so it is still reported. Checks made
 * while a fake platform still runs leave out listening servers (the fake's, not the adapter's).
 */
export async function openHandles(opts: { waitMs?: number; servers?: boolean } = {}): Promise<string[]> {
  const kinds = opts.servers === false ? /TCPSocketWrap|Timeout|Immediate/ : /TCP|Timeout|Immediate/;
  const live = () => process.getActiveResourcesInfo().filter((r) => kinds.test(r));
  const waitMs = opts.waitMs ?? 500;
  const end = Date.now() + waitMs;
  for (;;) {
    const now = live();
    if (now.length === 0 || Date.now() > end) return now;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Collects unhandled rejections for the duration of a test file (they would crash the gateway). */
export function trackUnhandled(): { errors: unknown[]; dispose(): void } {
  const errors: unknown[] = [];
  const onError = (e: unknown) => void errors.push(e);
  process.on('unhandledRejection', onError);
  return { errors, dispose: () => void process.off('unhandledRejection', onError) };
}
