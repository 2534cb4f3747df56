import { createLogger } from '../../../src/core/logger.js';
import type { ChannelContext, InboundMessage } from '../../../src/channels/types.js';

type Status = Parameters<ChannelContext['onStatus']>[0];

/** A ChannelContext for the Discord and Lark adapter tests: records what the adapter hands over and lets a test wait for it. */
export interface RecordingContext extends ChannelContext {
  readonly messages: InboundMessage[];
  readonly statuses: Status[];
  /** Runs inside onMessage before it resolves (to make the hand-over slow, or fail). */
  onMessageHook?: ((m: InboundMessage) => Promise<void> | void) | undefined;
  /** When onMessage resolved, per message id (the last hand-over wins). */
  readonly handedOverAt: Map<string, number>;
  /** Every line the adapter logged through ctx.log (debug level and up), SDK output included. */
  readonly logLines: string[];
  waitForMessage(pred: (m: InboundMessage) => boolean, timeoutMs?: number): Promise<InboundMessage>;
  waitForStatus(pred: (s: Status) => boolean, timeoutMs?: number): Promise<Status>;
}

export function createRecordingContext(): RecordingContext {
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of [...waiters]) w();
  };
  function waitFor<T>(find: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const hit = find();
    if (hit !== undefined) return Promise.resolve(hit);
    return new Promise<T>((resolve, reject) => {
      const poll = () => {
        const v = find();
        if (v === undefined) return;
        clearTimeout(timer);
        waiters.delete(poll);
        resolve(v);
      };
      const timer = setTimeout(() => {
        waiters.delete(poll);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      waiters.add(poll);
    });
  }

  const logLines: string[] = [];
  const ctx: RecordingContext = {
    messages: [],
    statuses: [],
    handedOverAt: new Map(),
    logLines,
    log: createLogger({ level: 'debug', write: (line) => logLines.push(line) }),
    async onMessage(m) {
      ctx.messages.push(m);
      notify();
      await ctx.onMessageHook?.(m);
      ctx.handedOverAt.set(m.messageId, Date.now());
    },
    onStatus(s) {
      ctx.statuses.push(s);
      notify();
    },
    waitForMessage: (pred, timeoutMs = 5000) => waitFor(() => ctx.messages.find(pred), timeoutMs, 'an inbound message'),
    waitForStatus: (pred, timeoutMs = 5000) => waitFor(() => ctx.statuses.find(pred), timeoutMs, 'a status change'),
  };
  return ctx;
}
