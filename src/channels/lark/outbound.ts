import type { Logger } from '../../core/logger.js';
import type { MessageLimit } from '../types.js';
import { isFormatRefusal, larkCode } from './errors.js';

/**
 * The size the bridge splits rendered text to, in UTF-8 bytes. Lark caps a post's `content` JSON at
 * 30,000 bytes. The rendered text goes into that JSON as a string, where escaping at most doubles
 * it (`"`, `\`, newline and tab become two bytes; render() drops the other control characters, the
 * only ones that would take six), plus about 60 bytes of post wrapper: 2 × 14,900 + 60 < 30,000.
 * Conservative on purpose: a chunk that fits here can never be refused for size.
 */
export const LARK_LIMIT: MessageLimit = { max: 14_900, unit: 'bytes' };

/**
 * Replies and sends are `post` messages with one `md` element, not cards: a post is an ordinary
 * chat message (selectable, quotable, forwardable), and it can be edited in place with
 * PUT /im/v1/messages/:id, which cards cannot. Only streaming uses a card (stream.ts).
 */
export function postContent(text: string): string {
  return JSON.stringify({ zh_cn: { title: '', content: [[{ tag: 'md', text }]] } });
}

export function textContent(text: string): string {
  return JSON.stringify({ text });
}

/**
 * Sends `text` as a post; when Lark refuses the post itself (bad content, too large as a post), sends
 * the same text once more as a plain `text` message (150 KB cap), so the reader still gets it.
 */
export async function sendWithPlainRetry<T>(text: string, send: (msgType: 'post' | 'text', content: string) => Promise<T>, log: Logger): Promise<T> {
  try {
    return await send('post', postContent(text));
  } catch (err) {
    if (!isFormatRefusal(err)) throw err;
    log.debug(`post refused (code ${larkCode(err) ?? '?'}); retrying as plain text`);
    return send('text', textContent(text));
  }
}
