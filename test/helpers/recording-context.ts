/**
 * Test doubles for driving a channel adapter through its interface: a ChannelContext that records
 * what the adapter hands over, the bridge's split-by-limit (emulated), and an open-handle probe.
 */
import { createLogger, type Logger } from '../../src/core/logger.js';
import type { ChannelContext, InboundMessage, MessageLimit } from '../../src/channels/types.js';

type Status = Parameters<ChannelContext['onStatus']>[0];

export interface RecordingContext extends ChannelContext {
  readonly messages: InboundMessage[];
  readonly statuses: Status[];
  /** When each onMessage call resolved (the moment an adapter may acknowledge). */
  readonly handedOver: Array<{ messageId: string; at: number }>;
  /** Debug-level log lines (SDK output routed by the adapter ends up here). */
  readonly logLines: string[];
  waitForMessages(count: number, timeoutMs?: number): Promise<InboundMessage[]>;
  waitForMessage(pred: (m: InboundMessage) => boolean, timeoutMs?: number): Promise<InboundMessage>;
  waitForStatus(pred: (s: Status) => boolean, timeoutMs?: number): Promise<Status>;
}

export function createRecordingContext(opts: { onMessage?: (m: InboundMessage) => Promise<void> } = {}): RecordingContext {
  const messages: InboundMessage[] = [];
  const statuses: Status[] = [];
  const handedOver: Array<{ messageId: string; at: number }> = [];
  const logLines: string[] = [];
  const log: Logger = createLogger({ level: 'debug', write: (line) => logLines.push(line) });
  return {
    messages, statuses, handedOver, logLines, log,
    async onMessage(m) {
      messages.push(m);
      await opts.onMessage?.(m);
      handedOver.push({ messageId: m.messageId, at: Date.now() });
    },
    onStatus(s) {
      statuses.push(s);
    },
    async waitForMessages(count, timeoutMs = 5_000) {
      await until(() => messages.length >= count, timeoutMs, `${count} inbound message(s)`);
      return messages;
    },
    async waitForMessage(pred, timeoutMs = 5_000) {
      await until(() => messages.some(pred), timeoutMs, 'an inbound message');
      return messages.find(pred) as InboundMessage;
    },
    async waitForStatus(pred, timeoutMs = 5_000) {
      await until(() => statuses.some(pred), timeoutMs, 'a status');
      return statuses.find(pred) as Status;
    },
  };
}

export async function until(pred: () => boolean, timeoutMs = 3_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const sizeOf = (text: string, unit: MessageLimit['unit']): number =>
  unit === 'bytes' ? Buffer.byteLength(text, 'utf8') : [...text].length;

/**
 * What the bridge does with a long reply (emulated here; the bridge owns the real one): cut the
 * Markdown into the longest prefixes whose *rendered* form fits the adapter's limit.
 */
export function splitByLimit(markdown: string, render: (md: string) => string, limit: MessageLimit): string[] {
  const chars = [...markdown];
  const parts: string[] = [];
  let start = 0;
  while (start < chars.length) {
    let lo = start + 1;
    let hi = chars.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (sizeOf(render(chars.slice(start, mid).join('')), limit.unit) <= limit.max) lo = mid;
      else hi = mid - 1;
    }
    parts.push(chars.slice(start, lo).join(''));
    start = lo;
  }
  return parts;
}

/** Resources that keep the event loop alive and that an adapter could leak. */
export function liveHandles(): string[] {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'TCPSocketWrap');
}

/**
 * liveHandles() once transient timers had time to fire: vitest's runner keeps a 100 ms throttle
 * timer for task updates, which is sometimes pending at the moment of the check. A leaked interval
 * or socket stays, so it is still reported.
 */
export async function lingeringHandles(waitMs = 500): Promise<string[]> {
  const end = Date.now() + waitMs;
  for (;;) {
    const live = liveHandles();
    if (live.length === 0 || Date.now() > end) return live;
    await new Promise((r) => setTimeout(r, 20));
  }
}
