/**
 * Telegram `parse_mode` handling for the fake Bot API (channel-e-telegram.ts): turns MarkdownV2,
 * legacy Markdown or HTML into the plain text plus `entities` (UTF-16 offsets) that Telegram
 * stores, and fails the way the Bot API does ("can't parse entities: ..."). Simplified but real:
 *  - MarkdownV2: `*bold*`, `_italic_`, `__underline__`, `~strike~`, `||spoiler||`, `` `code` ``,
 *    ```` ```lang\npre``` ````, `[text](url)`, `>` blockquote lines, and `\` escapes for any ASCII
 *    character. Any of `_*[]()~`>#+-=|{}.!` left unescaped outside those constructs is an error
 *    ("Character '.' is reserved and must be escaped with the preceding '\'"); an unclosed entity
 *    is "Can't find end of the entity starting at byte offset N" (UTF-8 byte offset, like Telegram).
 *  - Markdown (legacy): `*`, `_`, `` ` ``, ```` ``` ```` and `[text](url)`; no reserved characters.
 *  - HTML: b/strong, i/em, u/ins, s/strike/del, tg-spoiler, span class="tg-spoiler", a href, code,
 *    pre, blockquote, tg-emoji; &lt; &gt; &amp; &quot; and numeric entities. Custom emoji and nested
 *    pre/code languages are not modelled.
 */

export interface TgEntity {
  type: string;
  offset: number;
  length: number;
  url?: string;
  language?: string;
}

export type Parsed = { ok: true; text: string; entities: TgEntity[] } | { ok: false; error: string };

const V2_RESERVED = '_*[]()~`>#+-=|{}.!';
const bytes = (s: string, i: number): number => Buffer.byteLength(s.slice(0, i));

export function parseText(text: string, parseMode: string | undefined): Parsed {
  if (parseMode === undefined || parseMode === '') return { ok: true, text, entities: [] };
  if (parseMode === 'MarkdownV2') return parseMarkdown(text, true);
  if (parseMode === 'Markdown') return parseMarkdown(text, false);
  if (parseMode.toUpperCase() === 'HTML') return parseHtml(text);
  return { ok: false, error: `Bad Request: unsupported parse_mode` };
}

function parseMarkdown(src: string, v2: boolean): Parsed {
  let out = '';
  const entities: TgEntity[] = [];
  const open: Array<{ type: string; start: number; at: number }> = [];
  let quote: { start: number } | undefined;
  const fail = (msg: string): Parsed => ({ ok: false, error: `Bad Request: can't parse entities: ${msg}` });
  const add = (e: TgEntity) => {
    if (e.length > 0) entities.push(e);
  };
  const toggle = (type: string, at: number) => {
    const i = open.findIndex((o) => o.type === type);
    if (i < 0) return void open.push({ type, start: out.length, at });
    const [o] = open.splice(i, 1);
    if (o) add({ type, offset: o.start, length: out.length - o.start });
  };
  /** Scan to an unescaped terminator; `\` escapes the next character. Returns [content, index after terminator]. */
  const scanTo = (from: number, term: string): [string, number] | undefined => {
    let s = '';
    for (let j = from; j < src.length; j++) {
      if (src[j] === '\\' && v2 && j + 1 < src.length) s += src[++j];
      else if (src.startsWith(term, j)) return [s, j + term.length];
      else s += src[j];
    }
    return undefined;
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    const lineStart = i === 0 || src[i - 1] === '\n';
    if (c === '\n' && quote) {
      if (src[i + 1] !== '>') {
        add({ type: 'blockquote', offset: quote.start, length: out.length - quote.start });
        quote = undefined;
      }
      out += c;
      i++;
    } else if (c === '\\' && (v2 || (i + 1 < src.length && '_*`['.includes(src[i + 1] as string)))) {
      const n = src[i + 1];
      if (n === undefined) return fail(`Character '\\' is reserved and must be escaped with the preceding '\\'`);
      out += n;
      i += 2;
    } else if (c === '`') {
      const pre = src.startsWith('```', i);
      let from = i + (pre ? 3 : 1);
      let language: string | undefined;
      if (pre) {
        const nl = src.indexOf('\n', from);
        const lang = nl < 0 ? '' : src.slice(from, nl);
        if (nl >= 0 && /^[\w+#.-]*$/.test(lang)) {
          language = lang || undefined;
          from = nl + 1;
        }
      }
      const found = scanTo(from, pre ? '```' : '`');
      if (!found) return fail(`Can't find end of ${pre ? 'Pre' : 'Code'} entity at byte offset ${bytes(src, i)}`);
      add({ type: pre ? 'pre' : 'code', offset: out.length, length: found[0].length, ...(language ? { language } : {}) });
      out += found[0];
      i = found[1];
    } else if (c === '*' || c === '_' || (v2 && (c === '~' || (c === '|' && src[i + 1] === '|')))) {
      const double = v2 && (c === '_' || c === '|') && src[i + 1] === c;
      const type = { '*': 'bold', '~': 'strikethrough', '|': 'spoiler', _: double ? 'underline' : 'italic' }[c] as string;
      toggle(type, i);
      i += double ? 2 : 1;
    } else if (c === '[') {
      open.push({ type: 'text_link', start: out.length, at: i });
      i++;
    } else if (c === ']' && open.at(-1)?.type === 'text_link') {
      const o = open.pop() as { start: number; at: number };
      if (src[i + 1] !== '(') return fail(`Can't find end of the entity starting at byte offset ${bytes(src, o.at)}`);
      const found = scanTo(i + 2, ')');
      if (!found) return fail(`Can't find end of a URL at byte offset ${bytes(src, i + 2)}`);
      add({ type: 'text_link', offset: o.start, length: out.length - o.start, url: found[0] });
      i = found[1];
    } else if (v2 && c === '>' && lineStart) {
      quote ??= { start: out.length };
      i++;
    } else if (v2 && V2_RESERVED.includes(c)) {
      return fail(`Character '${c}' is reserved and must be escaped with the preceding '\\'`);
    } else {
      out += c;
      i++;
    }
  }
  if (quote) add({ type: 'blockquote', offset: quote.start, length: out.length - quote.start });
  const first = open[0];
  if (first) return fail(`Can't find end of the entity starting at byte offset ${bytes(src, first.at)}`);
  entities.sort((a, b) => a.offset - b.offset || b.length - a.length);
  return { ok: true, text: out, entities };
}

const HTML_TYPES: Record<string, string> = {
  b: 'bold',
  strong: 'bold',
  i: 'italic',
  em: 'italic',
  u: 'underline',
  ins: 'underline',
  s: 'strikethrough',
  strike: 'strikethrough',
  del: 'strikethrough',
  'tg-spoiler': 'spoiler',
  span: 'spoiler',
  a: 'text_link',
  code: 'code',
  pre: 'pre',
  blockquote: 'blockquote',
  'tg-emoji': 'custom_emoji',
};
const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"' };

function parseHtml(src: string): Parsed {
  let out = '';
  const entities: TgEntity[] = [];
  const open: Array<{ name: string; start: number; url?: string }> = [];
  const fail = (msg: string): Parsed => ({ ok: false, error: `Bad Request: can't parse entities: ${msg}` });
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '<') {
      const m = /^<(\/?)([a-zA-Z][\w-]*)([^>]*)>/.exec(src.slice(i));
      if (!m) return fail(`Unclosed start tag at byte offset ${bytes(src, i)}`);
      const [whole, slash, rawName, attrs = ''] = m;
      const name = (rawName ?? '').toLowerCase();
      if (!slash) {
        const type = HTML_TYPES[name];
        if (!type || (name === 'span' && !/class\s*=\s*"tg-spoiler"/.test(attrs))) {
          return fail(`Unsupported start tag "${name}" at byte offset ${bytes(src, i)}`);
        }
        const url = name === 'a' ? /href\s*=\s*"([^"]*)"/.exec(attrs)?.[1] : undefined;
        open.push({ name, start: out.length, ...(url !== undefined ? { url } : {}) });
      } else {
        const top = open.pop();
        if (!top || top.name !== name) {
          return fail(`Unmatched end tag at byte offset ${bytes(src, i)}, expected "</${top?.name ?? ''}>", found "</${name}>"`);
        }
        const e: TgEntity = { type: HTML_TYPES[name] as string, offset: top.start, length: out.length - top.start };
        if (top.url !== undefined) e.url = top.url;
        if (e.length > 0) entities.push(e);
      }
      i += whole.length;
    } else if (c === '&') {
      const m = /^&(#x[0-9a-fA-F]+|#\d+|[a-z]+);/.exec(src.slice(i));
      const name = m?.[1];
      const ch = !name
        ? undefined
        : name.startsWith('#x')
          ? String.fromCodePoint(parseInt(name.slice(2), 16))
          : name.startsWith('#')
            ? String.fromCodePoint(Number(name.slice(1)))
            : NAMED[name];
      out += ch ?? '&';
      i += ch !== undefined && m ? m[0].length : 1;
    } else {
      out += c;
      i++;
    }
  }
  const left = open[0];
  if (left) return fail(`Can't find end tag corresponding to start tag "${left.name}"`);
  entities.sort((a, b) => a.offset - b.offset || b.length - a.length);
  return { ok: true, text: out, entities };
}
