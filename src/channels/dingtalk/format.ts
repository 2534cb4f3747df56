import { Lexer, type Token, type Tokens } from 'marked';
import { atxHeading, quoteLines, renderMarkdownList, singleLine, stripControlCharacters, stripHtmlTags } from '../markdown.js';

/**
 * Markdown → DingTalk's robot Markdown (pure). DingTalk documents a subset: headings, quotes, bold,
 * italic, links, images, ordered and unordered lists. So:
 * - tables become one list item per row ("Header: value; …"), since a pipe table shows as raw pipes;
 * - strikethrough and raw HTML are reduced to their text (no `~~`, no tags);
 * - line breaks inside a paragraph are written "  \n": DingTalk's own guidance, a bare "\n" is
 *   merged into one line by some clients;
 * - fenced code and inline code are kept (clients that do not style them still show the text);
 * - bare URLs become `[url](url)` links, which every client makes clickable;
 * - C0 control characters are dropped: JSON would escape each to six bytes, which the byte limit
 *   (see adapter.ts) does not budget for.
 */
export function renderDingtalkMarkdown(markdown: string): string {
  const src = stripControlCharacters(markdown.replace(/\r\n?/g, '\n'));
  const tokens = new Lexer({ gfm: true }).lex(src);
  return blocks(tokens).trim(); // blank lines inside fenced code are content: no global collapse
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
      return t.tokens ? inline(t.tokens) : lineBreaks(t.text);
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
      return lineBreaks(stripHtmlTags((token as Tokens.HTML).text).trim());
    default:
      return token.raw.trim();
  }
}

/** A table as a list: one item per row, each cell labelled with its column header. */
function table(token: Tokens.Table): string {
  const headers = token.header.map((c) => oneLine(inline(c.tokens)));
  return token.rows
    .map((row) => {
      const cells = row.map((c, i) => {
        const value = oneLine(inline(c.tokens));
        const head = headers[i] ?? '';
        return head ? `${head}: ${value}` : value;
      });
      return `- ${cells.join('; ')}`;
    })
    .join('\n');
}

function inline(tokens: Token[]): string {
  return tokens.map(span).join('');
}

function span(token: Token): string {
  switch (token.type) {
    case 'text': {
      const t = token as Tokens.Text;
      return t.tokens ? inline(t.tokens) : lineBreaks(t.text);
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
      return '  \n';
    case 'link': {
      const t = token as Tokens.Link;
      const text = t.autolink ? t.href : inline(t.tokens);
      return `[${text}](${t.href})`;
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

/** Soft line breaks as DingTalk wants them (two spaces before the newline). */
function lineBreaks(text: string): string {
  return text.replace(/ *\n/g, '  \n');
}

function oneLine(text: string): string {
  return singleLine(text).trim();
}
