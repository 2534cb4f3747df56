import { Lexer, type Token, type Tokens } from 'marked';
import { quoteLines, renderMarkdownList, stripControlCharacters, stripHtmlTags } from './markdown.js';
import { fenceCode } from './markdown-table.js';

/**
 * What a platform that reads Markdown itself (Discord, Lark, DingTalk, WeCom) needs written
 * differently from standard Markdown. Everything a dialect does not name is re-emitted in standard
 * form: paragraphs, `**bold**`, `*italic*`, inline code and escapes as written, fenced code (a
 * fence inside the code broken so it cannot close the block), quotes and lists.
 */
export interface MarkdownDialect {
  /** Drop C0 control characters first: JSON escapes each to six bytes, which byte limits do not budget for. */
  stripControls: boolean;
  /** Plain text as the platform wants it (its line breaks, neutralised tags); hard breaks go through it too. */
  text: (text: string) => string;
  heading: (depth: number, text: string) => string;
  table: (table: Tokens.Table, inline: (tokens: Token[]) => string) => string;
  /** What `---` becomes. */
  rule: string;
  /** Whether `~~x~~` shows as strikethrough; if not, only the text is kept. */
  strikethrough: boolean;
  /** A link, its label already rendered; `link.autolink` marks a bare URL or `<url>`. */
  link: (link: Tokens.Link, label: string) => string;
  /** Whether `![alt](url)` shows the image; if not, it becomes a link to it. */
  inlineImages: boolean;
  /** Whether raw HTML shows as tags (then it is reduced to its text). */
  stripHtml: boolean;
  /** DingTalk and WeCom: blank lines between loose list items, and whitespace-only quote lines as blank. */
  strictBlankLines: boolean;
}

/** Markdown → the dialect's Markdown (pure). */
export function renderMarkdownDialect(markdown: string, dialect: MarkdownDialect): string {
  const source = dialect.stripControls ? stripControlCharacters(markdown) : markdown;
  const tokens = new Lexer({ gfm: true }).lex(source);
  // Blank lines inside fenced code are content, so only the ends are trimmed.
  return new DialectRenderer(dialect, closedTagNames(source)).blocks(tokens).trim();
}

class DialectRenderer {
  constructor(
    private readonly d: MarkdownDialect,
    /** Tag names the message closes somewhere (`</b>`): an opening tag of another name is a placeholder. */
    private readonly closed: ReadonlySet<string>,
  ) {}

  blocks = (tokens: Token[], separator = '\n\n'): string =>
    tokens
      .map((t) => this.block(t))
      .filter((s) => s !== '')
      .join(separator);

  inline = (tokens: Token[]): string => tokens.map((t) => this.span(t)).join('');

  private block(token: Token): string {
    const d = this.d;
    switch (token.type) {
      case 'space':
      case 'def':
        return '';
      case 'heading': {
        const t = token as Tokens.Heading;
        return d.heading(t.depth, this.inline(t.tokens));
      }
      case 'paragraph':
        return this.inline((token as Tokens.Paragraph).tokens);
      case 'text': {
        const t = token as Tokens.Text;
        return t.tokens ? this.inline(t.tokens) : d.text(t.text);
      }
      case 'code': {
        const t = token as Tokens.Code;
        return fenceCode(t.text, t.lang);
      }
      case 'blockquote':
        return quoteLines(this.blocks((token as Tokens.Blockquote).tokens), { blankIfWhitespace: d.strictBlankLines });
      case 'list': {
        const t = token as Tokens.List;
        return renderMarkdownList(t, this.blocks, d.strictBlankLines && t.loose ? '\n\n' : '\n');
      }
      case 'table':
        return d.table(token as Tokens.Table, this.inline);
      case 'hr':
        return d.rule;
      default:
        // block HTML, and anything an extension adds: as text
        return this.html(token.raw).trim();
    }
  }

  private span(token: Token): string {
    const d = this.d;
    switch (token.type) {
      case 'text': {
        const t = token as Tokens.Text;
        return t.tokens ? this.inline(t.tokens) : d.text(t.text);
      }
      case 'strong':
        return `**${this.inline((token as Tokens.Strong).tokens)}**`;
      case 'em':
        return `*${this.inline((token as Tokens.Em).tokens)}*`;
      case 'del': {
        const inner = this.inline((token as Tokens.Del).tokens);
        return d.strikethrough ? `~~${inner}~~` : inner;
      }
      case 'br':
        return d.text('\n');
      case 'link': {
        const t = token as Tokens.Link;
        return d.link(t, this.inline(t.tokens));
      }
      case 'image': {
        const t = token as Tokens.Image;
        if (d.inlineImages) return `![${t.text}](${t.href})`;
        return t.text ? `[${t.text}](${t.href})` : t.href;
      }
      case 'html':
        return this.html(token.raw);
      default:
        // codespan and escape: as written, which keeps their backticks and backslashes exact
        return token.raw;
    }
  }

  private html(raw: string): string {
    return this.d.text(this.d.stripHtml && !this.isPlaceholder(raw) ? stripHtmlTags(raw) : raw);
  }

  /** `<id>` in "/cron run <id>": a bare opening tag that nothing closes and no HTML element is self-closing by. */
  private isPlaceholder(raw: string): boolean {
    const name = /^<([a-z][a-z0-9_-]*)>$/i.exec(raw)?.[1]?.toLowerCase();
    return name !== undefined && !this.closed.has(name) && !VOID_ELEMENTS.has(name);
  }
}

/** `[label](url)`, or the URL alone where the label is the URL; a bare URL or `<url>` as written. */
export function linkUnlessBare(link: Tokens.Link, label: string): string {
  if (link.autolink) return link.raw;
  return label === link.href ? link.href : `[${label}](${link.href})`;
}

// --- internal ---

/** HTML elements that never have a closing tag: `<br>` alone is a line break, not a placeholder. */
const VOID_ELEMENTS = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr']);

function closedTagNames(source: string): Set<string> {
  return new Set([...source.matchAll(/<\/([a-z][a-z0-9_-]*)\s*>/gi)].map((m) => (m[1] ?? '').toLowerCase()));
}
