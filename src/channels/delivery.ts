import { errorMessage } from '../core/errors.js';
import type { Completion, FileEvent, StreamEvent } from '../core/events.js';
import type { Logger } from '../core/logger.js';
import { deliverFiles } from './attachments.js';
import { type ApprovalPromptOptions, formatApprovalPrompt } from './approval-prompt.js';
import { splitMessage } from './split.js';
import type { ReplyAdapter } from './reply-adapter.js';
import type { ReplyStream, ReplyTarget, SentMessage } from './types.js';

/**
 * A turn's stream → messages on a platform. `buffered` sends the assembled reply once;
 * `streaming` sends text as it becomes final: at each blank-line paragraph break (never inside a
 * code block), before a tool-call hint, and at the end. Adapters that can update one message in
 * place (`openStream`) get the full text so far at those points instead of one message each.
 * Every part is split under the platform's limit after rendering. Failures reach the user as a
 * short message, never as silence; a `silent` turn sends nothing. Files the agent sent go out
 * after the text (attachments.ts).
 */
export interface DeliveryOptions {
  mode: 'buffered' | 'streaming';
  showToolCalls: boolean;
  log: Logger;
  /** Called with every message this delivery sent (echo suppression, group context). */
  onSent?: (sent: SentMessage | undefined, text: string) => void;
  /** How approval requests are worded (see approval-prompt.ts). */
  approval?: ApprovalPromptOptions;
}

export interface Delivered {
  completion: Completion | undefined;
  /** The text the user saw (empty when nothing was sent). */
  text: string;
}

export async function deliverTurn(adapter: ReplyAdapter, to: ReplyTarget, events: AsyncIterable<StreamEvent>, opts: DeliveryOptions): Promise<Delivered> {
  const send = async (markdown: string) => {
    for (const part of splitMessage(markdown, adapter.limit, (md) => adapter.render(md))) {
      const sent = await adapter.reply(to, part);
      opts.onSent?.(sent, part);
    }
  };
  const typing = keepTyping(adapter, to, opts.log);
  const files: FileEvent[] = [];
  // Approval requests go out at once in either mode: the turn waits for the answer.
  const asked = withApprovalPrompts(withoutFiles(events, files), async (request) => {
    const prompt = formatApprovalPrompt(request, opts.approval ?? { timeoutSeconds: 300 });
    try {
      if (adapter.askApproval) opts.onSent?.(await adapter.askApproval(to, prompt), prompt.text);
      else await send(prompt.text);
    } catch (err) {
      // Unanswerable now: the request times out as denied, and the turn goes on.
      opts.log.warn(`${adapter.name}: could not show approval request ${request.id}: ${errorMessage(err)}`);
    }
  });
  try {
    const delivered = opts.mode === 'streaming' ? await streamed(adapter, to, asked, send, opts) : await buffered(asked, send);
    if (files.length > 0) await deliverFiles(adapter, to, files, { log: opts.log, say: send, ...(opts.onSent ? { onSent: opts.onSent } : {}) });
    return delivered;
  } finally {
    typing.stop();
  }
}

/** The short message a user gets when a turn fails. */
export function failureNotice(message: string | undefined): string {
  return `Sorry, I could not answer this time (${message ?? 'unknown error'}).`;
}

// --- internal ---

/** The turn's events without its `file` events, which are put aside for after the text. */
async function* withoutFiles(events: AsyncIterable<StreamEvent>, files: FileEvent[]): AsyncIterable<StreamEvent> {
  for await (const e of events) {
    if (e.type === 'file') files.push(e);
    else yield e;
  }
}

async function buffered(events: AsyncIterable<StreamEvent>, send: (md: string) => Promise<void>): Promise<Delivered> {
  let completion: Completion | undefined;
  for await (const e of events) if (e.type === 'completion') completion = e;
  if (completion?.status === 'completed' && completion.finalText) {
    await send(completion.finalText);
    return { completion, text: completion.finalText };
  }
  if (completion?.status === 'failed') {
    const notice = failureNotice(completion.message);
    await send(notice);
    return { completion, text: notice };
  }
  return { completion, text: '' };
}

async function streamed(
  adapter: ReplyAdapter,
  to: ReplyTarget,
  events: AsyncIterable<StreamEvent>,
  send: (md: string) => Promise<void>,
  opts: DeliveryOptions,
): Promise<Delivered> {
  let pending = ''; // text not shown yet
  let shown = ''; // everything shown so far (what an in-place stream displays)
  let stream: ReplyStream | undefined;
  let completion: Completion | undefined;

  const show = async (markdown: string) => {
    if (markdown.trim() === '') return;
    shown = shown ? `${shown}\n\n${markdown}` : markdown;
    if (adapter.openStream) {
      stream ??= await adapter.openStream(to);
      await stream.update(shown);
    } else {
      await send(markdown);
    }
  };
  const flushParagraphs = async () => {
    const cut = lastParagraphBreak(pending);
    if (cut < 0) return;
    const ready = pending.slice(0, cut);
    pending = pending.slice(cut).replace(/^\n+/, '');
    await show(ready.trim());
  };

  for await (const e of events) {
    if (e.type === 'text') {
      pending += e.content;
      await flushParagraphs();
    } else if (e.type === 'tool_call') {
      await show(pending.trim());
      pending = '';
      if (opts.showToolCalls) await show(`_→ ${e.name}_`);
    } else if (e.type === 'completion') {
      completion = e;
    }
  }

  if (completion?.status === 'silent') {
    // The reply was [PASS]: nothing more is shown; an in-place stream that had started is closed as it is.
    if (stream) await stream.finish(shown);
    return { completion, text: shown };
  }
  if (completion?.status === 'failed') {
    await show(failureNotice(completion.message));
  } else if (pending.trim() !== '') {
    await show(pending.trim());
  }
  if (stream) {
    try {
      await stream.finish(shown);
    } catch (err) {
      opts.log.warn(`${adapter.name}: could not finish the streamed reply: ${errorMessage(err)}`);
    }
  }
  return { completion, text: shown };
}

async function* withApprovalPrompts(
  events: AsyncIterable<StreamEvent>,
  ask: (request: Extract<StreamEvent, { type: 'approval_request' }>) => Promise<void>,
): AsyncIterable<StreamEvent> {
  for await (const e of events) {
    if (e.type === 'approval_request') await ask(e);
    else yield e;
  }
}

/** Index just after the last blank line that is outside a code block, or -1. */
function lastParagraphBreak(text: string): number {
  let inFence = false;
  let cut = -1;
  const lines = text.split('\n');
  let offset = 0;
  for (let i = 0; i < lines.length - 1; i++) {
    const line = lines[i] ?? '';
    if (/^\s{0,3}(```|~~~)/.test(line)) inFence = !inFence;
    offset += line.length + 1;
    if (!inFence && line.trim() === '' && i > 0) cut = offset;
  }
  return cut;
}

/** "typing…" while the turn runs: at once (WeCom treats it as the acknowledgement), then every 5 s. */
function keepTyping(adapter: ReplyAdapter, to: ReplyTarget, log: Logger): { stop(): void } {
  if (!adapter.typing) return { stop: () => undefined };
  const tick = () => void adapter.typing?.(to).catch((err: unknown) => log.debug(`${adapter.name}: typing failed: ${errorMessage(err)}`));
  tick();
  const timer = setInterval(tick, 5_000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
