import { conversationOf, isPermanentRefusal, type ReplyOutbox } from './reply-outbox.js';
import { splitMessage } from './split.js';
import type { ChannelAdapter, ReplyStream, ReplyTarget } from './types.js';

/**
 * The adapter as a turn's delivery uses it (bridge.ts), with the reply outbox behind its replies:
 * a reply the platform refuses for a reason a retry can cure is kept and retried, and the
 * conversation's later replies queue behind it, so the person gets every reply in order. A reply
 * kept this way resolves with no message id (it has not been sent yet). A refusal no retry
 * cures (the formatting, the length, a chat that is gone) is thrown as before. Everything else
 * of the adapter is its own.
 */
export function guardReplies(adapter: ChannelAdapter, chatKey: string, outbox: ReplyOutbox): ChannelAdapter {
  const keyOf = (to: ReplyTarget) => conversationOf(adapter.name, to.chatId, to.threadId);
  const keep = (to: ReplyTarget, text: string, cause?: unknown) =>
    outbox.keep({ channel: adapter.name, kind: 'reply', target: JSON.stringify(to), targetKey: keyOf(to), chatKey, text }, cause);
  /** A whole text, in parts under the platform's limit, the first refused (`cause`), the rest behind it. */
  const keepAll = async (to: ReplyTarget, markdown: string, cause: unknown) => {
    for (const [i, part] of splitMessage(markdown, adapter.limit, (md) => adapter.render(md)).entries()) await keep(to, part, i === 0 ? cause : undefined);
  };

  const reply: ChannelAdapter['reply'] = async (to, markdown) => {
    if (outbox.holds(keyOf(to))) {
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

  /** A reply shown growing in place: if the platform refuses it on the way, its final text is kept as a reply. */
  const openStream = async (to: ReplyTarget): Promise<ReplyStream> => {
    const refused: { cause?: unknown; yes: boolean } = { yes: outbox.holds(keyOf(to)) };
    let stream: ReplyStream | undefined;
    if (!refused.yes) {
      try {
        stream = await adapter.openStream?.(to);
      } catch (err) {
        if (isPermanentRefusal(err)) throw err;
        Object.assign(refused, { yes: true, cause: err });
      }
    }
    const fail = (err: unknown) => {
      if (isPermanentRefusal(err)) throw err;
      Object.assign(refused, { yes: true, cause: err });
    };
    return {
      async update(markdown) {
        if (!refused.yes) await stream?.update(markdown).catch(fail);
      },
      async finish(markdown) {
        if (!refused.yes && stream) await stream.finish(markdown).catch(fail);
        if (refused.yes) await keepAll(to, markdown, refused.cause);
      },
    };
  };

  return new Proxy(adapter, {
    get(target, prop) {
      if (prop === 'reply') return reply;
      if (prop === 'openStream') return target.openStream ? openStream : undefined;
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
