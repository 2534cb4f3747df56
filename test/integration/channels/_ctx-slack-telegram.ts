/**
 * Test ChannelContext for the Slack and Telegram adapter tests: records what the adapter hands
 * to the bridge (messages, statuses) with waiters, and can make onMessage fail to test acks.
 */
import { createLogger, type Logger } from '../../../src/core/logger.js';
import type { ChannelContext, InboundMessage } from '../../../src/channels/types.js';

export interface Recorded {
  ctx: ChannelContext;
  messages: InboundMessage[];
  statuses: Array<{ state: string; reason?: string }>;
  logs: string[];
  /** When set, onMessage rejects with this error (the bridge could not take the message). */
  failWith: Error | undefined;
  /** Time each message was handed over (ms), to compare with the platform's ack time. */
  handedAt: Map<string, number>;
  waitForMessage(pred: (m: InboundMessage) => boolean, ms?: number): Promise<InboundMessage>;
  waitForStatus(state: string, ms?: number): Promise<{ state: string; reason?: string }>;
}

export function recordingContext(): Recorded {
  const logs: string[] = [];
  const log: Logger = createLogger({ level: 'debug', write: (l) => void logs.push(l) });
  const rec: Recorded = {
    messages: [],
    statuses: [],
    logs,
    failWith: undefined,
    handedAt: new Map(),
    ctx: {
      log,
      onMessage: async (m) => {
        if (rec.failWith) throw rec.failWith;
        rec.messages.push(m);
        rec.handedAt.set(m.messageId, Date.now());
      },
      onStatus: (s) => void rec.statuses.push(s),
    },
    waitForMessage: (pred, ms = 5000) => poll(() => rec.messages.find(pred), ms, 'a matching inbound message'),
    waitForStatus: (state, ms = 5000) => poll(() => rec.statuses.find((s) => s.state === state), ms, `status ${state}`),
  };
  return rec;
}

export async function poll<T>(probe: () => T | undefined, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 15));
  }
}

export const until = (cond: () => boolean, ms = 5000): Promise<true> => poll(() => (cond() ? true : undefined), ms, 'condition');

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Handles that would keep the process alive (the same filter as the fake self-tests). */
export function openHandles(): string[] {
  return process.getActiveResourcesInfo().filter((r) => /TCP|Timeout|Immediate/.test(r));
}

/** Collects unhandled rejections for the duration of a test file (they would crash the gateway). */
export function trackUnhandled(): { errors: unknown[]; dispose(): void } {
  const errors: unknown[] = [];
  const onError = (e: unknown) => void errors.push(e);
  process.on('unhandledRejection', onError);
  return { errors, dispose: () => void process.off('unhandledRejection', onError) };
}
