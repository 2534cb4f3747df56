/**
 * Driving a channel adapter through its interface in tests: a ChannelContext that records what
 * the adapter hands over, with waiters. What an adapter must not leave behind: resources.ts.
 */
import { createLogger } from '../../src/core/logger.js';
import { HANG_MS, poll } from './wait.js';
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
    waitForMessage: (pred, timeoutMs = HANG_MS) => poll(() => ctx.messages.find(pred), timeoutMs, 'an inbound message'),
    waitForMessages: (count, timeoutMs = HANG_MS) =>
      poll(() => (ctx.messages.length >= count ? ctx.messages : undefined), timeoutMs, `${count} inbound message(s)`),
    waitForStatus: (pred, timeoutMs = HANG_MS) => {
      const match = typeof pred === 'function' ? pred : (s: Status) => s.state === pred;
      return poll(() => ctx.statuses.find(match), timeoutMs, 'a status change');
    },
  };
  return ctx;
}
