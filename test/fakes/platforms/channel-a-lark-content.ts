/**
 * Lark message content: limits, decoding `content` JSON strings into the text a user sees, building
 * the content of inbound (user) messages, and walking card JSON.
 *
 * Limits (request-size caps widely cited from the Lark docs: "text 150 KB, post/card 30 KB"). The fake
 * measures the UTF-8 bytes of the `content` JSON string and uses decimal KB, which is slightly stricter
 * than 1024-based KB, so an adapter that passes here passes on the real platform:
 *   text                      > 150,000 bytes -> 230025 (code unverified)
 *   post / interactive        >  30,000 bytes -> 230025 (code unverified)
 *   CardKit element content   >  30,000 chars -> 230099 (the SDK's own DEFAULT_MAX_ELEMENT_CHARS)
 *   edits per message         >  20           -> 230072 (seen in third-party reports)
 */

export const TEXT_MAX_BYTES = 150_000;
export const POST_MAX_BYTES = 30_000;
export const CARD_MAX_BYTES = 30_000;
export const ELEMENT_MAX_CHARS = 30_000;
export const MAX_EDITS = 20;
/** CardKit closes streaming mode 10 minutes after it was switched on (SDK comment, third-party reports). */
export const STREAMING_MAX_MS = 10 * 60 * 1000;

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export function maxBytesFor(msgType: string): number | undefined {
  if (msgType === 'text') return TEXT_MAX_BYTES;
  if (msgType === 'post') return POST_MAX_BYTES;
  if (msgType === 'interactive') return CARD_MAX_BYTES;
  return undefined;
}

export function parseJson(s: unknown): unknown {
  if (typeof s !== 'string') return undefined;
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return undefined;
  }
}

/** The body of a post: locale-wrapped (`{zh_cn:{title,content}}`, what senders use) or bare (what events carry). */
export function postBody(p: unknown): { title?: string; content?: unknown[][] } | undefined {
  if (!isObj(p)) return undefined;
  if (isObj(p.post)) return postBody(p.post);
  if ('content' in p || 'title' in p) return p as { title?: string; content?: unknown[][] };
  for (const loc of ['zh_cn', 'en_us', 'ja_jp']) if (isObj(p[loc])) return p[loc] as { title?: string; content?: unknown[][] };
  const first = Object.values(p).find(isObj);
  return first as { title?: string; content?: unknown[][] } | undefined;
}

function postElementText(el: unknown): string {
  if (!isObj(el)) return '';
  const s = (k: string): string => (typeof el[k] === 'string' ? (el[k] as string) : '');
  switch (el.tag) {
    case 'text':
    case 'a':
    case 'md':
      return s('text');
    case 'at':
      return `@${s('user_name') || s('user_id')}`;
    case 'img':
      return '[image]';
    case 'media':
      return '[media]';
    case 'emotion':
      return `:${s('emoji_type')}:`;
    case 'hr':
      return '---';
    case 'code_block':
      return `\`\`\`${s('language').toLowerCase()}\n${s('text')}\n\`\`\``;
    default:
      return s('text');
  }
}

export function postText(p: unknown): string {
  const body = postBody(p);
  if (!body) return '';
  const lines = (Array.isArray(body.content) ? body.content : []).map((par) => (Array.isArray(par) ? par.map(postElementText).join('') : ''));
  return (body.title ? [body.title, ...lines] : lines).join('\n');
}

function walkCard(el: unknown, out: string[]): void {
  if (Array.isArray(el)) {
    for (const e of el) walkCard(e, out);
    return;
  }
  if (!isObj(el)) return;
  const tag = el.tag;
  if ((tag === 'markdown' || tag === 'lark_md' || tag === 'plain_text') && typeof el.content === 'string') {
    out.push(el.content);
    return;
  }
  if (tag === 'div') {
    walkCard(el.text, out);
    if (Array.isArray(el.fields)) for (const f of el.fields) if (isObj(f)) walkCard(f.text, out);
    return;
  }
  for (const k of ['elements', 'columns']) if (Array.isArray(el[k])) walkCard(el[k], out);
}

/** The visible text of a card: its markdown / lark_md / plain_text elements, joined by newlines (header excluded). */
export function cardText(card: unknown, lookupCard?: (cardId: string) => unknown): string {
  if (!isObj(card)) return '';
  if (card.type === 'card' && isObj(card.data)) {
    const ref = lookupCard?.(String(card.data.card_id));
    return ref ? cardText(ref) : '';
  }
  if (card.type === 'template') return '';
  const out: string[] = [];
  if (isObj(card.body) && Array.isArray(card.body.elements)) walkCard(card.body.elements, out);
  else if (Array.isArray(card.elements)) walkCard(card.elements, out);
  else if (isObj(card.i18n_elements)) {
    const i18n = card.i18n_elements;
    walkCard(i18n.zh_cn ?? i18n.en_us ?? Object.values(i18n)[0], out);
  }
  return out.join('\n');
}

/** A callback button of a card: its label, and the `value` a press sends back (an object, or a string). */
export interface CardButton {
  label: string;
  value: unknown;
}

/** The callback buttons of a card (JSON 1.0 `action` elements, or buttons placed directly in JSON 2.0 `body.elements`), in order. */
export function cardButtons(card: unknown): CardButton[] {
  const out: CardButton[] = [];
  const walk = (el: unknown): void => {
    if (Array.isArray(el)) {
      for (const e of el) walk(e);
      return;
    }
    if (!isObj(el)) return;
    if (el.tag === 'button') {
      const label = isObj(el.text) && typeof el.text.content === 'string' ? el.text.content : '';
      // JSON 2.0 puts the value under behaviors[{type: 'callback', value}]
      const behaviour = Array.isArray(el.behaviors) ? el.behaviors.find((b) => isObj(b) && b.type === 'callback') : undefined;
      const value = isObj(behaviour) ? behaviour.value : el.value;
      if (value !== undefined) out.push({ label, value });
      return;
    }
    for (const k of ['elements', 'actions', 'columns']) if (Array.isArray(el[k])) walk(el[k]);
    if (isObj(el.body)) walk(el.body);
  };
  walk(card);
  return out;
}

/** Find an element by element_id anywhere in a card. */
export function findElement(el: unknown, id: string): Json | undefined {
  if (Array.isArray(el)) {
    for (const e of el) {
      const hit = findElement(e, id);
      if (hit) return hit;
    }
    return undefined;
  }
  if (!isObj(el)) return undefined;
  if (el.element_id === id) return el;
  for (const v of Object.values(el)) {
    if (typeof v === 'object' && v !== null) {
      const hit = findElement(v, id);
      if (hit) return hit;
    }
  }
  return undefined;
}

export function elementIds(el: unknown, out: string[] = []): string[] {
  if (Array.isArray(el)) for (const e of el) elementIds(e, out);
  else if (isObj(el)) {
    if (typeof el.element_id === 'string') out.push(el.element_id);
    for (const v of Object.values(el)) if (typeof v === 'object' && v !== null) elementIds(v, out);
  }
  return out;
}

/** Decode a sent message's content into the text a user would see. */
export function decodeContent(msgType: string, content: string, lookupCard?: (cardId: string) => unknown): string {
  const parsed = parseJson(content);
  switch (msgType) {
    case 'text':
      return isObj(parsed) && typeof parsed.text === 'string' ? parsed.text : '';
    case 'post':
      return postText(parsed);
    case 'interactive':
      return cardText(parsed, lookupCard);
    default:
      return `[${msgType}]`;
  }
}

/** Content of a user's message as `im.message.receive_v1` carries it. */
export function inboundContent(
  text: string,
  mentionKeys: Array<{ key: string; name: string }>,
  botKey: string | undefined,
  imageKeys: string[],
): { messageType: string; content: string } {
  const otherKeys = mentionKeys.filter((m) => m.key !== botKey);
  if (imageKeys.length === 0) {
    const parts = [botKey, text, ...otherKeys.map((m) => m.key)].filter((p): p is string => !!p);
    return { messageType: 'text', content: JSON.stringify({ text: parts.join(' ') }) };
  }
  if (!text && mentionKeys.length === 0 && imageKeys.length === 1) {
    return { messageType: 'image', content: JSON.stringify({ image_key: imageKeys[0] }) };
  }
  // Text plus images arrives as a post (bare, not locale-wrapped); mentions are `at` tags with the placeholder key.
  const first: Json[] = [];
  const bot = mentionKeys.find((m) => m.key === botKey);
  if (bot) first.push({ tag: 'at', user_id: bot.key, user_name: bot.name });
  if (text) first.push({ tag: 'text', text: bot ? ` ${text}` : text });
  for (const m of otherKeys) first.push({ tag: 'text', text: ' ' }, { tag: 'at', user_id: m.key, user_name: m.name });
  const paragraphs: Json[][] = first.length ? [first] : [];
  for (const k of imageKeys) paragraphs.push([{ tag: 'img', image_key: k }]);
  return { messageType: 'post', content: JSON.stringify({ title: '', content: paragraphs }) };
}
