import type { Logger } from '../../core/logger.js';
import type { ReplyStream, ReplyTarget } from '../types.js';
import { larkCode, toLarkChannelError } from './errors.js';
import type { LarkRest, LarkSent } from './rest.js';
import { createLatestSync } from '../latest-sync.js';

export interface CardStreamDeps {
  /** The channel key, for errors. */
  channel: string;
  rest: LarkRest;
  render(markdown: string): string;
  log: Logger;
  /** UTF-8 bytes of rendered text one card shows; past it the stream continues in a new card. */
  maxBytes: number;
}

const ELEMENT_ID = 'content';
/** CardKit: "streaming mode is closed" (it closes by itself 10 minutes after being switched on). */
const STREAMING_CLOSED = 300309;

/**
 * A reply shown as a CardKit streaming card, updated in place with the full text so far.
 *
 * - Each update PUTs the element's whole content with a strictly increasing `sequence` (never the
 *   SDK's `append` merge, which drops overlapping text). Updates are serialised and coalesced: while
 *   one is in flight only the newest text is kept for the next.
 * - A card past `maxBytes` is finished at a paragraph boundary and the rest continues in a new card.
 * - CardKit closes streaming mode after 10 minutes; a long turn switches it back on and goes on.
 * - update() is best effort (a failure is logged; the next update carries the full text anyway);
 *   finish() reports failure, so the bridge knows the final text may not be shown.
 */
export async function openCardStream(deps: CardStreamDeps, to: ReplyTarget): Promise<ReplyStream> {
  const { rest, render, log, maxBytes } = deps;
  let replyTo = to.messageId;

  async function openCard(): Promise<Card> {
    const id = await rest.createCard({
      schema: '2.0',
      config: { streaming_mode: true, update_multi: true },
      body: { elements: [{ tag: 'markdown', element_id: ELEMENT_ID, content: PLACEHOLDER }] },
    });
    const ref = JSON.stringify({ type: 'card', data: { card_id: id } });
    let sent: LarkSent;
    if (replyTo) sent = await rest.reply(replyTo, 'interactive', ref, Boolean(to.threadId), to.chatId);
    else sent = await rest.create(to.chatId, 'interactive', ref);
    replyTo ??= sent.messageId; // later cards of a long stream answer the first one, keeping them together
    return { id, seq: 0, shown: PLACEHOLDER };
  }

  async function push(card: Card, text: string): Promise<void> {
    if (text === card.shown) return;
    try {
      await rest.cardContent(card.id, ELEMENT_ID, text, ++card.seq);
    } catch (err) {
      if (larkCode(err) !== STREAMING_CLOSED) throw err;
      await rest.cardSettings(card.id, { config: { streaming_mode: true } }, ++card.seq);
      await rest.cardContent(card.id, ELEMENT_ID, text, ++card.seq);
    }
    card.shown = text;
  }

  async function close(card: Card): Promise<void> {
    await rest.cardSettings(card.id, { config: { streaming_mode: false } }, ++card.seq);
  }

  let current = await openCard();
  let frozen = 0; // markdown characters shown by earlier, finished cards
  let latest = '';
  let finished = false;
  const syncing = createLatestSync(() => sync());

  const fits = (md: string) => Buffer.byteLength(render(md)) <= maxBytes;

  async function sync(): Promise<void> {
    for (;;) {
      const tail = latest.slice(frozen);
      if (fits(tail)) return push(current, render(tail) || PLACEHOLDER);
      const cut = cutMarkdown(tail, fits);
      await push(current, render(tail.slice(0, cut)));
      await close(current);
      frozen += cut;
      current = await openCard();
    }
  }

  return {
    async update(markdown) {
      if (finished) return;
      latest = markdown;
      await syncing.request().catch((err: unknown) => log.warn(`stream update failed: ${err instanceof Error ? err.message : String(err)}`));
    },
    async finish(markdown) {
      if (finished) return;
      finished = true;
      await syncing.settled();
      latest = markdown;
      try {
        await syncing.request();
      } catch (err) {
        throw toLarkChannelError(deps.channel, 'finish the stream card', err);
      } finally {
        await close(current).catch((err: unknown) => log.warn(`closing the stream card failed: ${String(err)}`));
      }
    },
  };
}

/**
 * Where to cut `md` so the head fits: the last paragraph break outside a code fence whose head fits,
 * else the last line break outside a fence, else the longest prefix that fits. Always ≥ 1, so a
 * stream makes progress. Pure.
 */
export function cutMarkdown(md: string, fits: (head: string) => boolean): number {
  const paragraphs: number[] = [];
  const lines: number[] = [];
  let inFence = false;
  let pos = 0;
  for (const line of md.split('\n')) {
    if (/^\s{0,3}(```|~~~)/.test(line)) inFence = !inFence;
    pos += line.length + 1;
    if (pos >= md.length) break;
    if (inFence) continue;
    lines.push(pos);
    if (line.trim() === '') paragraphs.push(pos);
  }
  for (const candidates of [paragraphs, lines]) {
    const best = lastFitting(candidates, (i) => fits(md.slice(0, i)));
    if (best !== undefined) return best;
  }
  let lo = 1;
  let hi = md.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(md.slice(0, mid))) lo = mid;
    else hi = mid - 1;
  }
  const code = md.charCodeAt(lo - 1);
  return code >= 0xd800 && code <= 0xdbff && lo > 1 ? lo - 1 : lo; // never split a surrogate pair
}

// --- internal ---

const PLACEHOLDER = '…';

interface Card {
  id: string;
  /** Last sequence used on this card (content and settings calls share it). */
  seq: number;
  shown: string;
}

/** The largest candidate that fits, by binary search (a longer head never renders smaller). */
function lastFitting(sorted: number[], fits: (i: number) => boolean): number | undefined {
  let lo = 0;
  let hi = sorted.length - 1;
  let best: number | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const i = sorted[mid] as number;
    if (fits(i)) {
      best = i;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}
