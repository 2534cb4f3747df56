import type { Token, Tokens } from 'marked';
import { atxHeading, singleLine } from '../markdown.js';
import { renderMarkdownDialect, type MarkdownDialect } from '../markdown-dialect.js';

/**
 * WeCom's documented Markdown takes headings, bold, italic, links, inline code and quotes; its
 * markdown_v2 adds lists, nested quotes, images, rules and tables. The AI-bot stream bubble is
 * assumed to render the v2 set (unverified against a real client), so those are kept in standard
 * form; fenced code is kept too (its text stays readable where it is not styled). Reduced to their
 * text: strikethrough (WeCom shows the tildes) and raw HTML (shown as literal tags). A single "\n"
 * is a line break on WeCom, so soft breaks stay. Control characters are dropped.
 */
const WECOM: MarkdownDialect = {
  stripControls: true,
  text: (s) => s,
  heading: atxHeading,
  table: pipeTable,
  rule: '---',
  strikethrough: false,
  link: (l, label) => (l.autolink ? l.text : `[${label}](${l.href})`), // a bare URL or address as typed
  inlineImages: true,
  stripHtml: true,
  strictBlankLines: true,
};

/** Markdown → the Markdown the WeCom AI bot renders (pure). */
export function renderWecomMarkdown(markdown: string): string {
  return renderMarkdownDialect(markdown, WECOM);
}

/** A GFM pipe table, re-emitted with cells on one line and literal pipes escaped. */
function pipeTable(token: Tokens.Table, inline: (tokens: Token[]) => string): string {
  const cell = (c: Tokens.TableCell) => singleLine(inline(c.tokens)).replace(/\|/g, '\\|').trim();
  const rule = token.align.map((a) => (a === 'center' ? ':---:' : a === 'right' ? '---:' : a === 'left' ? ':---' : '---'));
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [row(token.header.map(cell)), row(rule), ...token.rows.map((r) => row(r.map(cell)))].join('\n');
}
