import { linkUnlessBare, renderMarkdownDialect, type MarkdownDialect } from '../markdown-dialect.js';
import { fenceCode, formatTableText } from '../markdown-table.js';

/** `<at` (any case, any spacing) as a tag opener; a full-width `＜` keeps it readable but inert. */
function neutraliseAt(s: string): string {
  return s.replace(/<(\s*\/?\s*at\b)/gi, '＜$1');
}

/**
 * The md tag of a Lark `post` (and the `markdown` element of a streaming card) understands bold,
 * italic, strikethrough, links, inline code, fenced code, lists, quotes and `---`; the differences:
 * no headings, a heading becomes a bold line; no tables, a table becomes a code block with aligned
 * columns; images need an uploaded image_key, a URL image becomes a link; `<at user_id="…">` in the
 * text would ping people (even `all`), so it is neutralised; control characters are dropped so
 * JSON escaping at most doubles the byte size of the text (see LARK_LIMIT in outbound.ts).
 */
const LARK: MarkdownDialect = {
  stripControls: true,
  text: neutraliseAt,
  heading: (_depth, text) => `**${text}**`,
  table: (t) => fenceCode(formatTableText(t)),
  rule: '---',
  strikethrough: true,
  // The md tag links bare URLs itself; `<url>` brackets would show.
  link: (l, label) => (l.autolink ? l.text : linkUnlessBare(l, label)),
  inlineImages: false,
  stripHtml: false,
  strictBlankLines: false,
};

/** Markdown → the text of a Lark `post` message's `md` tag (pure). */
export function renderLarkMarkdown(markdown: string): string {
  return renderMarkdownDialect(markdown, LARK);
}
