import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { measure, splitMessage } from '../split.js';
import { ChannelError, type MessageLimit, type ReplyStream, type SentMessage } from '../types.js';
import type { ChatPacer } from './pacer.js';
import { createLatestSync } from '../latest-sync.js';

/**
 * One reply that grows in place on a platform that can edit what the bot sent (Telegram, Slack,
 * Discord, and any adapter with `edit`): the first text is posted, later text edits that message
 * with the full text so far, and the final edit holds exactly the final text.
 *
 * - The text is split where `buffered` splits it (split.ts): when it outgrows the platform's limit
 *   the message is closed with its part and the reply goes on in a new message.
 * - A status line (the tool that runs now) sits under the last part while it fits, and is gone
 *   from the final text.
 * - Every call goes through the chat's pacer (pacer.ts): at most one per interval, a 429 waited
 *   out and tried again. Updates are coalesced: while a call waits, only the newest text is kept.
 * - An edit the platform refuses (the message was deleted, is too old, its formatting refused)
 *   leaves that message as it is; what it did not show goes on in new messages, so nothing is
 *   lost and nothing is sent twice.
 * - update() is best effort (a failure is logged; the next update carries the full text again);
 *   finish() reports failure.
 */
export interface LiveSurface {
  /** The channel key, for logs. */
  name: string;
  limit: MessageLimit;
  render(markdown: string): string;
  /** A new message of the reply (in the thread of the message answered). */
  post(markdown: string): Promise<SentMessage | undefined>;
  edit(message: SentMessage, markdown: string): Promise<void>;
  remove?(message: SentMessage): Promise<void>;
}

export interface LiveReplyOptions {
  pacer: ChatPacer;
  /** The chat the calls are paced in. */
  chat: string;
  log: Logger;
  /** Each message the reply posts, as soon as it exists. */
  onPosted?: (sent: SentMessage) => void;
}

export function openLiveReply(surface: LiveSurface, opts: LiveReplyOptions): ReplyStream {
  const { pacer, chat, log } = opts;
  /** Messages of the current run: message i shows part i of the text after `pinned`. */
  let msgs: Shown[] = [];
  /** Text shown by messages an edit was refused for (and the ones before them): never edited again. */
  let pinned = '';
  let want: { body: string; status: string | undefined } = { body: '', status: undefined };
  let finished = false;
  const syncing = createLatestSync(() => sync());

  const pace = <T>(op: () => Promise<T>, idempotent: boolean) => pacer.run(chat, op, { idempotent });

  async function sync(): Promise<void> {
    const { body, status } = want;
    const tail = textAfter(body, pinned);
    const parts = partsWithStatus(tail ?? body, status, surface.limit, surface.render);
    if (tail === undefined) log.warn(`${surface.name}: the final text differs from what was shown; it is sent whole`);
    for (let i = 0; i < parts.length; i++) {
      const text = parts[i] as string;
      const upTo = i === parts.length - 1 ? body : undefined;
      const shown = msgs[i];
      if (!shown) {
        const sent = await pace(() => surface.post(text), false);
        if (!sent) return; // nothing to show (an empty rendering): nothing to keep either
        msgs.push({ sent, markdown: text, upTo });
        opts.onPosted?.(sent);
        continue;
      }
      if (shown.markdown === text) {
        shown.upTo = upTo;
        continue;
      }
      try {
        await pace(() => surface.edit(shown.sent, text), true);
        shown.markdown = text;
        shown.upTo = upTo;
      } catch (err) {
        if (!isRefusal(err)) throw err;
        log.warn(`${surface.name}: an edit was refused (${errorMessage(err)}); the reply goes on in a new message`);
        // The open message showed all of `upTo`; a closed one (only re-edited for a differing final text) stays as it is.
        if (shown.upTo === undefined) continue;
        pinned = shown.upTo;
        msgs = [];
        return sync();
      }
    }
    if (finished) await dropExtras(msgs.splice(parts.length));
  }

  async function dropExtras(extra: Shown[]): Promise<void> {
    for (const m of extra) {
      const remove = surface.remove;
      if (!remove) continue;
      await pace(() => remove(m.sent), true).catch((err: unknown) => log.warn(`${surface.name}: could not delete a leftover message: ${errorMessage(err)}`));
    }
  }

  return {
    showsStatus: true,
    async update(markdown, status) {
      if (finished) return;
      want = { body: markdown, status };
      void syncing.request().catch((err: unknown) => log.warn(`${surface.name}: the growing reply could not be updated: ${errorMessage(err)}`));
    },
    async finish(markdown) {
      if (finished) return;
      finished = true;
      await syncing.settled();
      want = { body: markdown, status: undefined };
      await syncing.request();
    },
  };
}

/**
 * The reply's parts as `buffered` splits them, the status line under the last one where it fits
 * (or alone while there is no text yet).
 */
export function partsWithStatus(markdown: string, status: string | undefined, limit: MessageLimit, render: (md: string) => string): string[] {
  const parts = splitMessage(markdown, limit, render);
  if (!status) return parts;
  const last = parts.at(-1);
  const withStatus = last === undefined ? status : `${last}\n\n${status}`;
  if (measure(render(withStatus), limit.unit) > limit.max) return parts;
  if (last === undefined) parts.push(withStatus);
  else parts[parts.length - 1] = withStatus;
  return parts;
}

/**
 * `text` after its start `prefix`, compared without whitespace (the final text may join blocks
 * differently from the paragraphs shown while it grew); undefined when it does not start so.
 */
export function textAfter(text: string, prefix: string): string | undefined {
  let i = 0;
  // By UTF-16 units on both sides, so a character outside the BMP compares as its two units.
  for (const unit of prefix.split('')) {
    if (/\s/.test(unit)) continue;
    while (i < text.length && /\s/.test(text[i] as string)) i++;
    if (text[i] !== unit) return undefined;
    i++;
  }
  return text.slice(i).trim();
}

/** A refusal of this one call (the message, its text): anything but a wait, a network failure or a stopped adapter. */
export function isRefusal(err: unknown): boolean {
  return err instanceof ChannelError && !['rate_limited', 'network', 'not_connected', 'lifecycle'].includes(err.kind);
}

// --- internal ---

interface Shown {
  sent: SentMessage;
  /** What the message shows (its part, with the status line when it was the last). */
  markdown: string;
  /** The whole text it completed when it was last written as the last part; undefined for a closed part. */
  upTo: string | undefined;
}
