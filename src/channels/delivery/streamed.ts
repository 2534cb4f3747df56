import type { ReplyAdapter } from '../reply-adapter.js';
import { errorMessage } from '../../core/errors.js';
import type { Completion, StreamEvent } from '../../core/events.js';
import type { Logger } from '../../core/logger.js';
import type { ReplyStream, ReplyTarget, SentMessage } from '../types.js';
import { openLiveReply } from './live-reply.js';
import { pacerFor } from './pacer.js';
import { formatToolStatus } from './tool-status.js';

export interface StreamedContext {
  adapter: ReplyAdapter;
  to: ReplyTarget;
  /** Sends text as messages of its own, split under the platform's limit (each part noted as sent). */
  send(markdown: string): Promise<void>;
  showToolCalls: boolean;
  /** A first line above the reply (the transcript of a voice note), part of the final text. */
  preface?: string;
  mask(text: string): string;
  log: Logger;
  /** A message whose text will still change was posted (its id only). */
  onPosted?: (sent: SentMessage | undefined) => void;
  /** The reply's final text, once, after a growing reply ended. */
  onSent?: (sent: SentMessage | undefined, text: string) => void;
  failureNotice(message: string | undefined): string;
}

/** Default pace of edits in one chat where the adapter does not say. */
const DEFAULT_EDIT_INTERVAL_MS = 1_000;

/**
 * `streaming`: text becomes visible as it is final: at each blank-line paragraph break (never
 * inside a code block), before a tool call, and at the end.
 *
 * - An adapter that can update one message in place (`openStream`, or `edit`: the growing reply of
 *   live-reply.ts) gets the full text so far at those points, the tool that runs now as a status
 *   line under it (`showToolCalls`), and at the end exactly the final text (completion.finalText,
 *   after the preface).
 * - Any other adapter sends one message per flush, and a hint line per tool call.
 */
export async function deliverStreamed(ctx: StreamedContext, events: AsyncIterable<StreamEvent>): Promise<{ completion: Completion | undefined; text: string }> {
  const { adapter, log } = ctx;
  const grows = Boolean(adapter.openStream || adapter.edit);
  let pending = ''; // text not shown yet
  let shown = ctx.preface ?? ''; // everything shown so far
  let status: string | undefined;
  let stream: ReplyStream | undefined;
  let completion: Completion | undefined;
  // The last message a growing reply posted: its final text is reported as that message.
  let posted: SentMessage | undefined;
  const growing: StreamedContext = {
    ...ctx,
    onPosted: (sent) => {
      posted = sent ?? posted;
      ctx.onPosted?.(sent);
    },
  };

  const push = async () => {
    stream ??= await openGrowing(growing);
    if (stream.showsStatus || !status) await stream.update(shown, status);
    else await stream.update(shown ? `${shown}\n\n${status}` : status);
  };
  const show = async (markdown: string) => {
    if (markdown.trim() === '') return;
    shown = shown ? `${shown}\n\n${markdown}` : markdown;
    if (grows) await push();
    else await ctx.send(markdown);
  };
  const flushParagraphs = async () => {
    const cut = lastParagraphBreak(pending);
    if (cut < 0) return;
    const ready = pending.slice(0, cut);
    pending = pending.slice(cut).replace(/^\n+/, '');
    await show(ready.trim());
  };

  if (ctx.preface) {
    if (grows) await push();
    else await ctx.send(ctx.preface);
  }
  try {
    for await (const e of events) {
      if (e.type === 'text') {
        pending += e.content;
        await flushParagraphs();
      } else if (e.type === 'tool_call') {
        await show(pending.trim());
        pending = '';
        if (!ctx.showToolCalls) continue;
        if (!grows) {
          await ctx.send(`_→ ${e.name}_`);
          continue;
        }
        status = formatToolStatus(e, ctx.mask);
        await push();
      } else if (e.type === 'tool_result') {
        status = undefined; // the tool is done: the next update shows no status
      } else if (e.type === 'completion') {
        completion = e;
      }
    }
  } catch (err) {
    // The turn's stream broke: a growing reply is closed with what it showed (its timers end too).
    await stream?.finish(shown).catch(() => undefined);
    throw err;
  }

  if (!grows) return { completion, text: await sendRest(ctx, completion, shown, pending) };
  const final = finalText(ctx, completion, shown, pending);
  if (!stream && final.trim() === '') return { completion, text: '' };
  stream ??= await openGrowing(growing);
  try {
    await stream.finish(final);
  } catch (err) {
    log.warn(`${adapter.name}: could not finish the streamed reply: ${errorMessage(err)}`);
  }
  if (final.trim()) ctx.onSent?.(posted, final);
  return { completion, text: final };
}

// --- internal ---

/**
 * What the reply ends as: the preface and completion.finalText for a finished turn; what was
 * shown plus the failure notice for a failed one; what was shown for a silent turn (`[PASS]`:
 * nothing more) and for an aborted one (plus what had not been shown yet).
 */
function finalText(ctx: StreamedContext, completion: Completion | undefined, shown: string, pending: string): string {
  const join = (...parts: Array<string | undefined>) => parts.filter((p) => p?.trim()).join('\n\n');
  if (completion?.status === 'completed') return join(ctx.preface, completion.finalText?.trim());
  if (completion?.status === 'failed') return join(shown, ctx.failureNotice(completion.message));
  if (completion?.status === 'silent') return shown;
  return join(shown, pending.trim());
}

/** One message per flush: what was not sent yet (or the failure notice); returns all the person saw. */
async function sendRest(ctx: StreamedContext, completion: Completion | undefined, shown: string, pending: string): Promise<string> {
  if (completion?.status === 'silent') return shown; // [PASS]: nothing more
  const rest = completion?.status === 'failed' ? ctx.failureNotice(completion.message) : pending.trim();
  if (!rest) return shown;
  await ctx.send(rest);
  return shown ? `${shown}\n\n${rest}` : rest;
}

function openGrowing(ctx: StreamedContext): Promise<ReplyStream> | ReplyStream {
  return openGrowingReply(ctx.adapter, ctx.to, { log: ctx.log, ...(ctx.onPosted ? { onPosted: ctx.onPosted } : {}) });
}

/**
 * A reply that grows in one message: the adapter's own in-place stream (`openStream`), or a live
 * reply of posts and edits (live-reply.ts) paced per chat. The reply outbox's guard opens it too
 * (outbox-guard.ts), on the adapter without the guard.
 */
export function openGrowingReply(
  adapter: ReplyAdapter,
  to: ReplyTarget,
  ctx: { log: Logger; onPosted?: (sent: SentMessage) => void },
): Promise<ReplyStream> | ReplyStream {
  if (adapter.openStream) return adapter.openStream(to, ctx.onPosted ? { onPosted: ctx.onPosted } : {});
  const edit = adapter.edit?.bind(adapter);
  if (!edit) throw new Error(`${adapter.name}: no way to update a message`);
  const remove = adapter.remove?.bind(adapter);
  return openLiveReply(
    {
      name: adapter.name,
      limit: adapter.limit,
      render: (md) => adapter.render(md),
      post: (md) => adapter.reply(to, md),
      edit,
      ...(remove ? { remove } : {}),
    },
    {
      pacer: pacerFor(adapter, adapter.editIntervalMs ?? DEFAULT_EDIT_INTERVAL_MS),
      chat: to.chatId,
      log: ctx.log,
      ...(ctx.onPosted ? { onPosted: ctx.onPosted } : {}),
    },
  );
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
