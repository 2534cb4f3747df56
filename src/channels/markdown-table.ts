import type { Token, Tokens } from 'marked';
import { visibleText } from './markdown.js';

/**
 * Helpers shared by the per-platform Markdown renderers (each channel's `format.ts`), for the
 * platforms whose chat Markdown has no tables: a table is shown as aligned monospace text.
 * Pure; depends only on marked's token types and the text helpers of markdown.ts.
 */

/** A fenced code block; a fence inside the code is broken with a zero-width space so it cannot end the block early. */
export function fenceCode(code: string, lang = ''): string {
  return `\`\`\`${lang}\n${code.replace(/```/g, '`\u200b``')}\n\`\`\``;
}

/** How a table becomes text: the details in which the platforms' layouts differ. */
export interface TableTextLayout {
  /** A cell's inline tokens as text. */
  cellText: (tokens: Token[]) => string;
  /** The columns a cell's text takes up in a monospace font. */
  width: (text: string) => number;
  /** The narrowest a column may be (one whose cells are all empty). */
  minWidth: number;
  /** What joins two columns' dashes in the rule under the header. */
  ruleJoin: string;
}

/**
 * Slack's and Telegram's layout: cells show link labels only, with character references decoded
 * (the renderer escapes the text afterwards); widths count UTF-16 code units, so wide characters
 * misalign (unlike the default layout, which Discord and Lark use); the rule crosses with `+`.
 */
export const VISIBLE_TEXT_TABLE_LAYOUT: TableTextLayout = {
  cellText: visibleText,
  width: (text) => text.length,
  minWidth: 0,
  ruleJoin: '-+-',
};

/**
 * A GFM table as plain rows with columns padded to the widest cell (put it in a code block). By
 * default cells keep link targets and wide characters count two columns.
 */
export function formatTableText(table: Tokens.Table, layout: TableTextLayout = DEFAULT_LAYOUT): string {
  const rows = [table.header, ...table.rows].map((r) => r.map((c) => layout.cellText(c.tokens)));
  const widths = table.header.map((_, i) => Math.max(layout.minWidth, ...rows.map((r) => layout.width(r[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => {
        const gap = ' '.repeat(Math.max(0, (widths[i] ?? 0) - layout.width(c)));
        return table.align[i] === 'right' ? gap + c : c + gap;
      })
      .join(' | ')
      .trimEnd();
  const [head = [], ...body] = rows;
  return [line(head), widths.map((w) => '-'.repeat(w)).join(layout.ruleJoin), ...body.map(line)].join('\n');
}

// --- internal ---

const DEFAULT_LAYOUT: TableTextLayout = { cellText: plainInline, width: displayWidth, minWidth: 1, ruleJoin: '-|-' };

/** Inline tokens as text without markup (inside a code block, Markdown would show literally). */
function plainInline(tokens: Token[]): string {
  return tokens
    .map((t) => {
      switch (t.type) {
        case 'codespan':
        case 'escape':
          return (t as Tokens.Codespan).text;
        case 'link': {
          const l = t as Tokens.Link;
          const text = plainInline(l.tokens);
          return l.autolink || text === l.href ? text : `${text} (${l.href})`;
        }
        case 'image':
          return (t as Tokens.Image).text;
        case 'br':
          return ' ';
        default:
          return 'tokens' in t && t.tokens ? plainInline(t.tokens) : t.raw;
      }
    })
    .join('');
}

const WIDE = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]|[\u{1f300}-\u{1faff}]/u;

/** East Asian wide characters and emoji take two columns in a monospace font. */
function displayWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += WIDE.test(ch) ? 2 : 1;
  return w;
}
