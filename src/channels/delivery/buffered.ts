import type { ReplyAdapter } from '../reply-adapter.js';
import type { Completion, StreamEvent } from '../../core/events.js';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { Clock } from '../../core/util/clock.js';
import { splitMessage } from '../split.js';
import type { ReplyStream, ReplyTarget, SentMessage } from '../types.js';

/** The note a long `buffered` turn sends while the person waits. */
export const PROGRESS_NOTE = '⏳ Working on it…';

export interface BufferedContext {
  adapter: ReplyAdapter;
  to: ReplyTarget;
  /** Sends a reply's text, split under the platform's limit (each part noted as sent). */
  send(markdown: string): Promise<void>;
  /** Seconds before the progress note goes out; 0 = never. */
  progressAfterSeconds: number;
  clock: Clock;
  log: Logger;
  onSent?: (sent: SentMessage | undefined, text: string) => void;
  /** The note was posted (its id only: the answer may take its place). */
  onPosted?: (sent: SentMessage | undefined) => void;
  failureNotice(message: string | undefined): string;
}

/**
 * `buffered`: the whole reply once, when the turn ends (completion.finalText), or the failure
 * notice. A turn longer than `progressAfterSeconds` first gets one short note, which the answer
 * takes the place of where the platform allows: the note is deleted and the answer sent (so the
 * person is notified of it), or, where messages can only be edited, the note becomes the
 * answer's first part; where a reply can only be updated in place (WeCom's reply bubble,
 * DingTalk's AI card: `openStream`), the note is that reply's first version and the answer's
 * first part its last.
 */
export async function deliverBuffered(ctx: BufferedContext, events: AsyncIterable<StreamEvent>): Promise<{ completion: Completion | undefined; text: string }> {
  const note = startProgressNote(ctx);
  let completion: Completion | undefined;
  try {
    for await (const e of events) if (e.type === 'completion') completion = e;
  } finally {
    note.cancel();
  }
  let text = '';
  if (completion?.status === 'completed' && completion.finalText) text = completion.finalText;
  else if (completion?.status === 'failed') text = ctx.failureNotice(completion.message);
  await note.settle(text);
  return { completion, text };
}

// --- internal ---

function startProgressNote(ctx: BufferedContext): { cancel(): void; settle(text: string): Promise<void> } {
  const { adapter, to, log } = ctx;
  let sending: Promise<SentMessage | undefined> | undefined;
  let inPlace: Promise<InPlaceNote | undefined> | undefined;
  const timer =
    ctx.progressAfterSeconds > 0
      ? ctx.clock.setTimer(() => {
          if (!adapter.remove && !adapter.edit && adapter.openStream) {
            inPlace = openInPlaceNote(ctx);
            return;
          }
          sending = adapter.reply(to, PROGRESS_NOTE).then(
            (sent) => {
              ctx.onPosted?.(sent);
              return sent;
            },
            (err: unknown) => {
              log.warn(`${adapter.name}: could not send the progress note: ${errorMessage(err)}`);
              return undefined;
            },
          );
        }, ctx.progressAfterSeconds * 1000)
      : undefined;

  return {
    cancel() {
      timer?.clear();
    },
    async settle(text) {
      const stream = await inPlace;
      if (stream) return settleInPlace(ctx, stream, text);
      const note = await sending;
      if (note && adapter.remove) {
        try {
          await adapter.remove(note);
        } catch (err) {
          log.warn(`${adapter.name}: could not delete the progress note: ${errorMessage(err)}`);
        }
      } else if (note && adapter.edit && text) {
        const [first = '', ...rest] = splitMessage(text, adapter.limit, (md) => adapter.render(md));
        let edited = false;
        try {
          await adapter.edit(note, first);
          edited = true;
        } catch (err) {
          log.warn(`${adapter.name}: could not turn the progress note into the answer: ${errorMessage(err)}`);
        }
        if (edited) {
          ctx.onSent?.(note, first);
          if (rest.length > 0) await ctx.send(rest.join('\n\n'));
          return;
        }
      }
      if (text) await ctx.send(text);
    },
  };
}

interface InPlaceNote {
  stream: ReplyStream;
  /** The message the reply shows in, once the platform said (for echo suppression). */
  posted(): SentMessage | undefined;
}

/** The note as the first version of a reply updated in place; undefined when it could not be shown. */
async function openInPlaceNote(ctx: BufferedContext): Promise<InPlaceNote | undefined> {
  const { adapter, to, log } = ctx;
  let posted: SentMessage | undefined;
  try {
    const stream = await (adapter.openStream as NonNullable<ReplyAdapter['openStream']>)(to, {
      onPosted: (sent) => {
        posted = sent;
        ctx.onPosted?.(sent);
      },
    });
    await stream.update(PROGRESS_NOTE);
    return { stream, posted: () => posted };
  } catch (err) {
    log.warn(`${adapter.name}: could not send the progress note: ${errorMessage(err)}`);
    return undefined;
  }
}

/** The in-place reply ends as the answer's first part (the rest follows as messages), or as the note when there is no answer. */
async function settleInPlace(ctx: BufferedContext, note: InPlaceNote, text: string): Promise<void> {
  const { adapter } = ctx;
  const [first = PROGRESS_NOTE, ...rest] = text ? splitMessage(text, adapter.limit, (md) => adapter.render(md)) : [];
  try {
    await note.stream.finish(first);
  } catch (err) {
    ctx.log.warn(`${adapter.name}: could not turn the progress note into the answer: ${errorMessage(err)}`);
    if (text) await ctx.send(text);
    return;
  }
  if (!text) return;
  ctx.onSent?.(note.posted(), first);
  if (rest.length > 0) await ctx.send(rest.join('\n\n'));
}
