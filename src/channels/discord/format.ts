import { Lexer, type Token, type Tokens } from 'marked';
import { quoteLines, renderMarkdownList, TEXT_RULE } from '../markdown.js';
import { fenceCode, formatTableText } from '../markdown-table.js';

/**
 * Markdown → Discord's flavour (pure). Discord's Markdown is close to CommonMark, so most syntax is
 * re-emitted as written; the differences handled here:
 * - `__x__` is underline on Discord, not bold: strong is always written `**x**`;
 * - headings exist only for levels 1-3 (`#`..`###`); deeper ones become bold lines;
 * - there are no tables: a table becomes a code block with aligned columns;
 * - `---` is not a rule on Discord: it becomes a line of box-drawing characters;
 * - images cannot be inlined by URL in a bot message's text: they become links.
 */
export function renderDiscordMarkdown(markdown: string): string {
  const tokens = new Lexer({ gfm: true }).lex(markdown);
  return renderBlocks(tokens).trim();
}

/** The rule Discord shows for `---` (it has no horizontal rule of its own). */
export const DISCORD_RULE = TEXT_RULE;

// --- internal ---

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
      return tt.tokens ? renderInline(tt.tokens) : tt.text;
    }
    case 'heading': {
      const h = t as Tokens.Heading;
      const inner = renderInline(h.tokens);
      return h.depth <= 3 ? `${'#'.repeat(h.depth)} ${inner}` : `**${inner}**`;
    }
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
      return DISCORD_RULE;
    case 'html':
      return (t as Tokens.HTML).text.replace(/\n+$/, '');
    default:
      return t.raw.replace(/\n+$/, '');
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
      if (l.autolink) return l.raw; // `<url>` stays (Discord shows it without an embed); bare URLs and e-mails too
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
      return tt.tokens ? renderInline(tt.tokens) : tt.raw;
    }
    default:
      // codespan, escape, inline html: as written (Discord reads backslash escapes and backticks the same way)
      return t.raw;
  }
}
