import { errorMessage } from '../core/errors.js';
import type { Completion, FileEvent, StreamEvent } from '../core/events.js';
import type { Logger } from '../core/logger.js';
import { type Clock, systemClock } from '../core/scheduler/clock.js';
import { type ApprovalPromptOptions, formatApprovalPrompt } from './approval-prompt.js';
import { deliverFiles } from './attachments.js';
import { deliverBuffered } from './delivery/buffered.js';
import { deliverStreamed } from './delivery/streamed.js';
import { keepTyping } from './delivery/typing.js';
import { splitMessage } from './split.js';
import type { ReplyAdapter } from './reply-adapter.js';
import type { ReplyTarget, SentMessage } from './types.js';

/**
 * A turn's stream → messages on a platform, in the assistant's delivery mode: `buffered` sends the
 * reply once, at the end (delivery/buffered.ts: a long turn gets a short note meanwhile);
 * `streaming` shows text as it becomes final, growing one message where the platform can update
 * one (delivery/streamed.ts). Every part is split under the platform's limit after rendering.
 * Failures reach the user as a short message, never as silence; a `silent` turn sends nothing.
 * "typing…" is kept alive for the whole turn. Files the agent sent go out after the text
 * (attachments.ts); approval requests at once, in either mode.
 */
export interface DeliveryOptions {
  mode: 'buffered' | 'streaming';
  showToolCalls: boolean;
  log: Logger;
  /** Called with every message this delivery sent and its text (echo suppression, group context). */
  onSent?: (sent: SentMessage | undefined, text: string) => void;
  /**
   * A message whose text will still change was posted (a growing reply's part, the progress
   * note): its id, for echo suppression. The text it ends with is reported through onSent.
   */
  onPosted?: (sent: SentMessage | undefined) => void;
  /** How approval requests are worded (see approval-prompt.ts). */
  approval?: ApprovalPromptOptions;
  /** `buffered`: seconds before a short "working on it" note; 0 or absent = never. */
  progressAfterSeconds?: number;
  /** `streaming`: a first line above the reply (a voice note's transcript), kept in the final text. */
  preface?: string;
  /** Masks secret values in what a tool status line shows (the configuration's secrets). */
  mask?: (text: string) => string;
  /** Timers for typing and the progress note (tests move a fake one). */
  clock?: Clock;
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
  const clock = opts.clock ?? systemClock;
  const typing = keepTyping(adapter, to, opts.log, clock);
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
  const common = { adapter, to, send, log: opts.log, failureNotice, ...(opts.onSent ? { onSent: opts.onSent } : {}) };
  try {
    const delivered =
      opts.mode === 'streaming'
        ? await deliverStreamed(
            {
              ...common,
              showToolCalls: opts.showToolCalls,
              mask: opts.mask ?? ((t) => t),
              ...(opts.preface ? { preface: opts.preface } : {}),
              ...(opts.onPosted ? { onPosted: opts.onPosted } : {}),
            },
            asked,
          )
        : await deliverBuffered(
            { ...common, progressAfterSeconds: opts.progressAfterSeconds ?? 0, clock, ...(opts.onPosted ? { onPosted: opts.onPosted } : {}) },
            asked,
          );
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

async function* withApprovalPrompts(
  events: AsyncIterable<StreamEvent>,
  ask: (request: Extract<StreamEvent, { type: 'approval_request' }>) => Promise<void>,
): AsyncIterable<StreamEvent> {
  for await (const e of events) {
    if (e.type === 'approval_request') await ask(e);
    else yield e;
  }
}
