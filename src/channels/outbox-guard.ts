import type { Logger } from '../core/logger.js';
import { PROGRESS_NOTE } from './delivery/buffered.js';
import { openGrowingReply } from './delivery/streamed.js';
import type { ReplyAdapter } from './reply-adapter.js';
import { conversationOf, isPermanentRefusal, type ReplyOutbox } from './reply-outbox.js';
import { splitMessage } from './split.js';
import type { ReplyStream, ReplyTarget } from './types.js';

/**
 * A message's reply adapter (reply-adapter.ts) as a turn's delivery uses it (answer-message.ts),
 * with the reply outbox behind its replies: a reply the platform refuses for a reason a retry can
 * cure is kept and retried, and the conversation's later replies queue behind it, so the person
 * gets every reply in order. A reply kept this way resolves with no message id (it has not been
 * sent yet). A refusal no retry cures (the formatting, the length, a chat that is gone) is thrown
 * as before. Everything else of the adapter is its own.
 *
 * - A reply that grows in one message (the adapter's own in-place stream, or posts and edits) is
 *   opened on the adapter without the guard, so its pacing waits out 429s as it does unguarded;
 *   if the platform refuses it on the way, or the conversation's replies wait, its final text is
 *   kept as replies (a part the person already saw grown may come again, whole; none is lost).
 * - The progress note of a long buffered turn is never kept: it would be stale by the time it
 *   went out. While the conversation's replies wait it is not sent at all.
 */
export function guardReplies(adapter: ReplyAdapter, chatKey: string, outbox: ReplyOutbox, log: Logger): ReplyAdapter {
  const keyOf = (to: ReplyTarget) => conversationOf(adapter.name, to.chatId, to.threadId);
  const keep = (to: ReplyTarget, text: string, cause?: unknown) =>
    outbox.keep({ channel: adapter.name, kind: 'reply', target: JSON.stringify(to), targetKey: keyOf(to), chatKey, text }, cause);
  /** A whole text, in parts under the platform's limit, the first refused (`cause`), the rest behind it. */
  const keepAll = async (to: ReplyTarget, markdown: string, cause: unknown) => {
    for (const [i, part] of splitMessage(markdown, adapter.limit, (md) => adapter.render(md)).entries()) await keep(to, part, i === 0 ? cause : undefined);
  };

  const reply: ReplyAdapter['reply'] = async (to, markdown) => {
    const held = outbox.holds(keyOf(to));
    if (markdown === PROGRESS_NOTE) return held ? undefined : adapter.reply(to, markdown);
    if (held) {
      await keep(to, markdown);
      return undefined;
    }
    try {
      return await adapter.reply(to, markdown);
    } catch (err) {
      if (isPermanentRefusal(err)) throw err;
      await keep(to, markdown, err);
      return undefined;
    }
  };

  /** A reply shown growing in place: if the platform refuses it on the way, its final text is kept as replies. */
  const openStream: NonNullable<ReplyAdapter['openStream']> = async (to, opts = {}) => {
    const refused: { cause?: unknown; yes: boolean } = { yes: outbox.holds(keyOf(to)) };
    const fail = (err: unknown) => {
      if (isPermanentRefusal(err)) throw err;
      Object.assign(refused, { yes: true, cause: err });
    };
    let stream: ReplyStream | undefined;
    if (!refused.yes) {
      try {
        stream = await openGrowingReply(adapter, to, { log, ...opts });
      } catch (err) {
        fail(err);
      }
    }
    return {
      ...(stream?.showsStatus ? { showsStatus: true } : {}),
      async update(markdown, status) {
        if (!refused.yes) await stream?.update(markdown, status).catch(fail);
      },
      async finish(markdown) {
        if (!refused.yes && stream) await stream.finish(markdown).catch(fail);
        if (refused.yes) await keepAll(to, markdown, refused.cause);
      },
    };
  };

  return { ...adapter, reply, ...(adapter.openStream || adapter.edit ? { openStream } : {}) };
}
