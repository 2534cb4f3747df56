import type { Token, Tokens } from 'marked';
import { atxHeading, singleLine } from '../markdown.js';
import { renderMarkdownDialect, type MarkdownDialect } from '../markdown-dialect.js';

/**
 * DingTalk documents a Markdown subset: headings, quotes, bold, italic, links, images, ordered and
 * unordered lists. So: tables become one list item per row ("Header: value; …"), since a pipe table
 * shows as raw pipes; strikethrough and raw HTML are reduced to their text (no `~~`, no tags); line
 * breaks inside a paragraph are written "  \n" (DingTalk's own guidance: a bare "\n" is merged into
 * one line by some clients); fenced and inline code are kept (clients that do not style them still
 * show the text); bare URLs become `[url](url)` links, which every client makes clickable; control
 * characters are dropped (JSON would escape each to six bytes, which the byte limit in adapter.ts
 * does not budget for).
 */
const DINGTALK: MarkdownDialect = {
  stripControls: true,
  text: lineBreaks,
  heading: atxHeading,
  table: rowList,
  rule: '---',
  strikethrough: false,
  link: (l, label) => `[${l.autolink ? l.text : label}](${l.href})`, // `l.text`: an address without its mailto:
  inlineImages: true,
  stripHtml: true,
  strictBlankLines: true,
};

/** Markdown → DingTalk's robot Markdown (pure). */
export function renderDingtalkMarkdown(markdown: string): string {
  return renderMarkdownDialect(markdown, DINGTALK);
}

/**
 * The `title` DingTalk wants next to a Markdown body (shown in notifications and the chat list):
 * the first non-empty line of the rendered text without Markdown marks, at most 64 characters.
 */
export function dingtalkTitle(rendered: string, fallback = 'Reply'): string {
  for (const raw of rendered.split('\n')) {
    const line = raw
      .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/^\s*(#{1,6}\s+|>\s*|[-*+]\s+|\d+\.\s+)+/, '')
      .replace(/[*`]/g, '')
      .trim();
    if (line && !/^[-`]{3,}$/.test(line)) return [...line].slice(0, 64).join('');
  }
  return fallback;
}

/** A table as a list: one item per row, each cell labelled with its column header. */
function rowList(token: Tokens.Table, inline: (tokens: Token[]) => string): string {
  const oneLine = (tokens: Token[]) => singleLine(inline(tokens)).trim();
  const headers = token.header.map((c) => oneLine(c.tokens));
  return token.rows
    .map((row) => {
      const cells = row.map((c, i) => {
        const value = oneLine(c.tokens);
        const head = headers[i] ?? '';
        return head ? `${head}: ${value}` : value;
      });
      return `- ${cells.join('; ')}`;
    })
    .join('\n');
}

/** Soft line breaks as DingTalk wants them (two spaces before the newline). */
function lineBreaks(text: string): string {
  return text.replace(/ *\n/g, '  \n');
}
