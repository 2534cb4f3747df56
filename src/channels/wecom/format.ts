import { Lexer, type Token, type Tokens } from 'marked';
import { atxHeading, quoteLines, renderMarkdownList, singleLine, stripControlCharacters, stripHtmlTags } from '../markdown.js';

/**
 * Markdown → the Markdown the WeCom AI bot renders (pure). WeCom's documented Markdown takes
 * headings, bold, italic, links, inline code and quotes; its markdown_v2 adds lists, nested quotes,
 * images, rules and tables. The AI-bot stream bubble is assumed to render the v2 set (unverified
 * against a real client), so those are kept in standard form; fenced code is kept too (its text
 * stays readable where it is not styled). Removed: strikethrough (WeCom shows the tildes) and raw
 * HTML (shown as literal tags) are reduced to their text; task-list boxes become ☐ / ☑. A single
 * "\n" is a line break on WeCom, so soft breaks stay. C0 control characters are dropped.
 */
export function renderWecomMarkdown(markdown: string): string {
  const src = stripControlCharacters(markdown.replace(/\r\n?/g, '\n'));
  const tokens = new Lexer({ gfm: true }).lex(src);
  return blocks(tokens).trim(); // blank lines inside fenced code are content: no global collapse
}

function blocks(tokens: Token[], separator = '\n\n'): string {
  return tokens.map(block).filter((s) => s !== '').join(separator);
}

function block(token: Token): string {
  switch (token.type) {
    case 'space':
    case 'def':
      return '';
    case 'heading': {
      const t = token as Tokens.Heading;
      return atxHeading(t.depth, inline(t.tokens));
    }
    case 'paragraph':
      return inline((token as Tokens.Paragraph).tokens);
    case 'text': {
      const t = token as Tokens.Text;
      return t.tokens ? inline(t.tokens) : t.text;
    }
    case 'code': {
      const t = token as Tokens.Code;
      return `\`\`\`${t.lang ?? ''}\n${t.text}\n\`\`\``;
    }
    case 'blockquote':
      return quoteLines(blocks((token as Tokens.Blockquote).tokens), { blankIfWhitespace: true });
    case 'list': {
      const t = token as Tokens.List;
      // A loose list keeps its items apart with a blank line, as the source had them.
      return renderMarkdownList(t, blocks, t.loose ? '\n\n' : '\n');
    }
    case 'table':
      return table(token as Tokens.Table);
    case 'hr':
      return '---';
    case 'html':
      return stripHtmlTags((token as Tokens.HTML).text).trim();
    default:
      return token.raw.trim();
  }
}

/** A GFM pipe table, re-emitted with cells on one line and literal pipes escaped. */
function table(token: Tokens.Table): string {
  const cell = (c: Tokens.TableCell) => singleLine(inline(c.tokens)).replace(/\|/g, '\\|').trim();
  const rule = token.align.map((a) => (a === 'center' ? ':---:' : a === 'right' ? '---:' : a === 'left' ? ':---' : '---'));
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [row(token.header.map(cell)), row(rule), ...token.rows.map((r) => row(r.map(cell)))].join('\n');
}

function inline(tokens: Token[]): string {
  return tokens.map(span).join('');
}

function span(token: Token): string {
  switch (token.type) {
    case 'text': {
      const t = token as Tokens.Text;
      return t.tokens ? inline(t.tokens) : t.text;
    }
    case 'escape':
      return token.raw;
    case 'strong':
      return `**${inline((token as Tokens.Strong).tokens)}**`;
    case 'em':
      return `*${inline((token as Tokens.Em).tokens)}*`;
    case 'del':
      return inline((token as Tokens.Del).tokens);
    case 'codespan':
      return `\`${(token as Tokens.Codespan).text}\``;
    case 'br':
      return '\n';
    case 'link': {
      const t = token as Tokens.Link;
      return t.autolink ? t.href : `[${inline(t.tokens)}](${t.href})`;
    }
    case 'image': {
      const t = token as Tokens.Image;
      return `![${t.text}](${t.href})`;
    }
    case 'html':
      return stripHtmlTags((token as Tokens.Tag).text);
    case 'checkbox':
      return '';
    default:
      return token.raw;
  }
}
