import { Lexer, type Token, type Tokens } from 'marked';
import { quoteLines, renderMarkdownList, stripControlCharacters } from '../markdown.js';
import { fenceCode, formatTableText } from '../markdown-table.js';

/**
 * Markdown → the text of a Lark `post` message's `md` tag (pure). The same text goes into the
 * `markdown` element of a streaming card. The md tag understands bold, italic, strikethrough, links,
 * inline code, fenced code, lists, quotes and `---`; the differences handled here:
 * - no headings: a heading becomes a bold line;
 * - no tables: a table becomes a code block with aligned columns;
 * - images need an uploaded image_key: a URL image becomes a link;
 * - `<at user_id="…">` in the text would ping people (even `all`): it is neutralised;
 * - control characters other than tab / newline are dropped, so JSON escaping at most doubles the
 *   byte size of the text (see LARK_LIMIT in outbound.ts).
 */
export function renderLarkMarkdown(markdown: string): string {
  const clean = stripControlCharacters(markdown);
  const tokens = new Lexer({ gfm: true }).lex(clean);
  return renderBlocks(tokens).trim();
}

// --- internal ---

/** `<at` (any case, any spacing) as a tag opener; a full-width `＜` keeps it readable but inert. */
function neutraliseAt(s: string): string {
  return s.replace(/<(\s*\/?\s*at\b)/gi, '＜$1');
}

function renderBlocks(tokens: Token[], sep = '\n\n'): string {
  const out: string[] = [];
  for (const t of tokens) {
    const s = renderBlock(t);
    if (s !== undefined) out.push(s);
  }
  return out.join(sep);
}

function renderBlock(t: Token): string | undefined {
  switch (t.type) {
    case 'space':
    case 'def':
      return undefined;
    case 'paragraph':
      return renderInline((t as Tokens.Paragraph).tokens);
    case 'text': {
      const tt = t as Tokens.Text;
      return tt.tokens ? renderInline(tt.tokens) : neutraliseAt(tt.text);
    }
    case 'heading':
      return `**${renderInline((t as Tokens.Heading).tokens)}**`;
    case 'code': {
      const c = t as Tokens.Code;
      return fenceCode(c.text, c.lang);
    }
    case 'blockquote':
      return quoteLines(renderBlocks((t as Tokens.Blockquote).tokens));
    case 'list':
      return renderMarkdownList(t as Tokens.List, renderBlocks);
    case 'table':
      return fenceCode(formatTableText(t as Tokens.Table));
    case 'hr':
      return '---';
    default:
      // block html and anything unknown: as written, minus mention tags
      return neutraliseAt(t.raw.replace(/\n+$/, ''));
  }
}

function renderInline(tokens: Token[]): string {
  return tokens.map(renderSpan).join('');
}

function renderSpan(t: Token): string {
  switch (t.type) {
    case 'strong':
      return `**${renderInline((t as Tokens.Strong).tokens)}**`;
    case 'em':
      return `*${renderInline((t as Tokens.Em).tokens)}*`;
    case 'del':
      return `~~${renderInline((t as Tokens.Del).tokens)}~~`;
    case 'link': {
      const l = t as Tokens.Link;
      if (l.autolink) return l.text; // the md tag links bare URLs itself; `<url>` brackets would show
      const text = renderInline(l.tokens);
      return text === l.href ? l.href : `[${text}](${l.href})`;
    }
    case 'image': {
      const img = t as Tokens.Image;
      return img.text ? `[${img.text}](${img.href})` : img.href;
    }
    case 'br':
      return '\n';
    case 'text': {
      const tt = t as Tokens.Text;
      return tt.tokens ? renderInline(tt.tokens) : neutraliseAt(tt.raw);
    }
    case 'html':
      return neutraliseAt(t.raw);
    default:
      return t.raw; // codespan, escape: as written
  }
}
