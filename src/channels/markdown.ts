import type { Token, Tokens } from 'marked';

/**
 * Pieces the per-platform Markdown renderers (each channel's `format.ts`) have in common. A rule
 * two or more platforms follow lives here once; where they follow it with a different detail (an
 * indent width, a separator, a body renderer) the detail is a parameter. The platforms that read
 * Markdown themselves share one renderer (markdown-dialect.ts) and state only their differences;
 * Slack and Telegram, which escape their own syntax, dispatch in their own files. Tables:
 * markdown-table.ts. Pure; depends only on marked's token types.
 */

// --- lists ---

/**
 * A list re-emitted as Markdown for platforms that parse Markdown lists (Discord, Lark, DingTalk,
 * WeCom): `- ` or `N. ` markers, task boxes as ☐ / ☑ characters (none of them renders `[ ]`), and
 * every further line of an item indented to the marker's width, since that column is where the
 * platform's parser looks for the item's continuation and its nested lists.
 * @param renderBody an item's blocks joined by the separator it is given (a blank line in a loose list)
 * @param itemSeparator between items: DingTalk and WeCom put a blank line between loose items, Discord and Lark do not
 */
export function renderMarkdownList(list: Tokens.List, renderBody: (tokens: Token[], separator: string) => string, itemSeparator = '\n'): string {
  const start = listStart(list);
  return list.items
    .map((item, i) => {
      const marker = list.ordered ? `${start + i}. ` : '- ';
      // A tight item's parts (its text, a nested list) stay on consecutive lines.
      const body = renderBody(itemBlocks(item), item.loose ? '\n\n' : '\n');
      const pad = ' '.repeat(marker.length);
      const [first = '', ...rest] = body.split('\n');
      return [`${marker}${taskBox(item)}${first}`, ...rest.map((l) => (l === '' ? '' : pad + l))].join('\n');
    })
    .join(itemSeparator);
}

/** How a text-only list is written: the details in which Slack and Telegram differ. */
export interface TextListStyle {
  /** The indentation one nesting level adds. */
  indent: string;
  /** Escapes a marker (`1.`, `•`) for the target syntax; MarkdownV2 must escape the dot. */
  escapeMarker?: (marker: string) => string;
  /** Renders one block of an item; '' or undefined leaves it out. */
  renderBlock: (token: Token) => string | undefined;
}

/**
 * A list laid out as text for platforms with no list syntax (Slack mrkdwn, Telegram MarkdownV2):
 * bullets •, ◦, ▪ by depth (a `-` would show as a dash), numbers from the list's start, ☐ / ☑ for
 * tasks. An item's first block goes on the marker line and later blocks below it, two spaces past
 * the marker's indentation; a nested list is indented one more `style.indent`.
 */
export function renderTextList(list: Tokens.List, style: TextListStyle, depth = 0): string {
  const start = listStart(list);
  const indent = style.indent.repeat(depth);
  const escapeText = style.escapeMarker ?? ((s: string) => s);
  return list.items
    .map((item, i) => {
      const marker = escapeText(list.ordered ? `${start + i}.` : (BULLETS[depth % BULLETS.length] as string));
      const head = `${indent}${marker} ${taskBox(item)}`;
      const lines = [head.trimEnd()];
      let first = true;
      for (const child of itemBlocks(item)) {
        if (child.type === 'list') {
          lines.push(renderTextList(child as Tokens.List, style, depth + 1));
        } else {
          const s = style.renderBlock(child);
          if (!s) continue;
          const body = s.split('\n').join(`\n${indent}  `);
          if (first) lines[0] = `${head}${body}`;
          else lines.push(`${indent}  ${body}`);
        }
        first = false;
      }
      return lines.join('\n');
    })
    .join('\n');
}

const BULLETS: readonly string[] = ['•', '◦', '▪'];

/** marked gives `start` as '' for a bullet list. */
function listStart(list: Tokens.List): number {
  return typeof list.start === 'number' ? list.start : 1;
}

/**
 * An item's blocks without its task checkbox token, which taskBox draws instead. marked puts that
 * token first in a tight item's tokens but first in the paragraph's inline tokens of a loose one.
 */
function itemBlocks(item: Tokens.ListItem): Token[] {
  const blocks = item.tokens.filter((t) => t.type !== 'checkbox');
  const head = blocks[0];
  if (!item.task || head?.type !== 'paragraph') return blocks;
  const inline = (head as Tokens.Paragraph).tokens;
  if (inline[0]?.type !== 'checkbox') return blocks;
  return [{ ...head, tokens: inline.slice(1) } as Tokens.Paragraph, ...blocks.slice(1)];
}

/** No platform renders GFM's `[ ]` / `[x]`, so a task item starts with a box character instead. */
function taskBox(item: Tokens.ListItem): string {
  return item.task ? (item.checked ? '☑ ' : '☐ ') : '';
}

// --- block helpers ---

/** The rule shown for `---` on platforms that have none (Slack, Telegram, Discord). */
export const TEXT_RULE = '──────────';

/**
 * Every line prefixed `> `, a blank line as a bare `>` so the quote is not cut in two.
 * @param options.blankIfWhitespace DingTalk and WeCom also treat a line of only spaces as blank
 */
export function quoteLines(text: string, options: { blankIfWhitespace?: boolean } = {}): string {
  const blank = options.blankIfWhitespace ? (l: string) => l.trim() === '' : (l: string) => l === '';
  return text
    .split('\n')
    .map((l) => (blank(l) ? '>' : `> ${l}`))
    .join('\n');
}

/** An ATX heading, level clamped to 1-6, on one line (a setext heading's text may span lines; ATX cannot). */
export function atxHeading(depth: number, text: string): string {
  return `${'#'.repeat(Math.min(Math.max(depth, 1), 6))} ${singleLine(text)}`;
}

/** Line breaks, with the spaces around them, as one space: for places that hold a single line. */
export function singleLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}

// --- text ---

// C0 controls except tab, newline and carriage return, plus DEL.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g;

/**
 * Drops control characters other than tab and line ends: they show as nothing useful, and JSON
 * escapes each to six bytes, which the byte limits of Lark, DingTalk and WeCom do not budget for.
 */
export function stripControlCharacters(text: string): string {
  return text.replace(CONTROL, '');
}

/** HTML tags and comments removed, their text kept, for platforms that would show tags literally. */
export function stripHtmlTags(html: string): string {
  return html.replace(/<\/?[A-Za-z][^>]*>/g, '').replace(/<!--[\s\S]*?-->/g, '');
}

/** `<br>`, `<br/>` or `<br />` as an inline HTML token: the one tag that text-only renderers turn into a line break. */
export function isBreakTag(html: string): boolean {
  return /^<br\s*\/?>$/i.test(html);
}

const NAMED: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/**
 * marked leaves character references in text tokens as written, but Markdown means the character;
 * renderers that escape for their own syntax (Slack, Telegram) must decode first or they would
 * show `&amp;amp;`. Unknown names and invalid code points stay as written.
 */
export function decodeCharacterReferences(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : Number(ref.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED[ref.toLowerCase()] ?? whole;
  });
}

/**
 * Visible text of inline tokens, without any markup: link labels (not targets), image alt text,
 * `<br>` tokens as newlines, character references decoded. For link labels and table cells on
 * platforms that escape their own syntax afterwards.
 */
export function visibleText(tokens: Token[] | undefined): string {
  return (tokens ?? [])
    .map((t) => {
      if (t.type === 'br') return '\n';
      if (t.type === 'image') return (t as Tokens.Image).text;
      if ('tokens' in t && Array.isArray(t.tokens) && t.tokens.length) return visibleText(t.tokens as Token[]);
      if (t.type === 'text' || t.type === 'escape' || t.type === 'codespan') return decodeCharacterReferences((t as Tokens.Text).text);
      return 'text' in t && typeof t.text === 'string' ? t.text : '';
    })
    .join('');
}

/**
 * How a platform with its own link syntax (Slack, Telegram) shows a link or an image: a link only
 * when the platform links the URL's scheme, with `url` set; otherwise text. A bare URL or address
 * stays text because the platform links it itself; an unlinkable target is shown after the label.
 * @param linkable the schemes the platform accepts in a link
 */
export function linkOrText(t: Tokens.Link | Tokens.Image, linkable: RegExp): { text: string; url?: string } {
  if (t.type === 'image') {
    const text = t.text || t.href;
    return linkable.test(t.href) ? { text, url: t.href } : { text };
  }
  const label = visibleText(t.tokens);
  if (label === t.href || `mailto:${label}` === t.href) return { text: label };
  if (!linkable.test(t.href)) return { text: label ? `${label} (${t.href})` : t.href };
  return { text: label || t.href, url: t.href };
}
