import { Lexer, type Token, type Tokens } from 'marked';
import { decodeCharacterReferences, isBreakTag, linkOrText, quoteLines, renderTextList, TEXT_RULE, type TextListStyle } from '../markdown.js';
import { formatTableText, VISIBLE_TEXT_TABLE_LAYOUT } from '../markdown-table.js';

/**
 * Standard Markdown → Slack mrkdwn (pure). Slack has no escape character: only `&`, `<` and `>`
 * are control characters and must become entities, everywhere (code included). Slack's own
 * mention tokens (`<@U…>`, `<#C…>`) are kept so the assistant can mention people it was shown.
 */
export function renderSlackMrkdwn(markdown: string): string {
  return blocks(Lexer.lex(markdown, { gfm: true })).trim();
}

/** Inbound Slack text → Markdown-ish plain text: links unwrapped, entities decoded, mentions kept. */
export function slackTextToMarkdown(text: string): string {
  const converted = text.replace(/<([^<>]+)>/g, (whole, inner: string) => {
    if (/^[@#]/.test(inner)) return whole;
    if (inner.startsWith('!')) return `@${inner.slice(1).split('|')[0] ?? ''}`;
    const [url = '', label] = inner.split('|', 2);
    if (!/^[a-z][a-z0-9+.-]*:/i.test(url)) return whole;
    if (label === undefined) return url.replace(/^mailto:/, '');
    // Slack wraps pasted addresses and URLs with their own text as the label: keep them as typed.
    const bare = url.replace(/^(mailto:|tel:|https?:\/\/)/, '');
    return label === url || label === bare ? label : `[${label}](${url})`;
  });
  return decodeSlackEntities(converted);
}

/** Slack escapes only these three in the text it sends; any other reference was typed by the user. */
function decodeSlackEntities(text: string): string {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

interface Ctx {
  bold?: boolean;
  italic?: boolean;
  strike?: boolean;
}

const SLACK_TOKEN = /(<[@#][A-Z0-9]+(?:\|[^<>]*)?>)/;

/** Escape Slack's three control characters, keeping Slack mention tokens intact. */
export function escapeSlack(text: string): string {
  return text
    .split(SLACK_TOKEN)
    .map((part, i) => (i % 2 === 1 ? part : escapeAll(part)))
    .join('');
}

const escapeAll = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function blocks(tokens: Token[], sep = '\n\n'): string {
  const out: string[] = [];
  for (const t of tokens) {
    const s = block(t);
    if (s !== undefined && s !== '') out.push(s);
  }
  return out.join(sep);
}

function block(t: Token): string | undefined {
  switch (t.type) {
    case 'space':
    case 'def':
      return undefined;
    case 'heading': {
      const inner = inline((t as Tokens.Heading).tokens, { bold: true });
      return wrap('*', inner);
    }
    case 'paragraph':
      return inline((t as Tokens.Paragraph).tokens);
    case 'text': {
      const tt = t as Tokens.Text;
      return tt.tokens ? inline(tt.tokens) : escapeSlack(decodeCharacterReferences(tt.text));
    }
    case 'code':
      return fence((t as Tokens.Code).text);
    case 'blockquote':
      return quoteLines(blocks((t as Tokens.Blockquote).tokens));
    case 'list':
      return renderTextList(t as Tokens.List, LIST_STYLE);
    case 'table':
      // Tables have no mrkdwn form: aligned plain text in a code block.
      return fence(formatTableText(t as Tokens.Table, VISIBLE_TEXT_TABLE_LAYOUT));
    case 'hr':
      return TEXT_RULE;
    case 'html':
      return escapeSlack((t as Tokens.HTML).text.trim());
    default:
      return 'raw' in t && typeof t.raw === 'string' ? escapeSlack(t.raw.trim()) : undefined;
  }
}

function fence(code: string): string {
  // No escape exists for ``` inside a Slack code block; a zero-width space keeps it from closing.
  return `\`\`\`\n${escapeAll(code.replace(/```/g, '``\u200b`'))}\n\`\`\``;
}

// Slack shows lists as plain text, so nesting is drawn with spaces (Telegram's step is three).
const LIST_STYLE: TextListStyle = { indent: '    ', renderBlock: block };

function inline(tokens: Token[] | undefined, ctx: Ctx = {}): string {
  return (tokens ?? []).map((t) => inlineToken(t, ctx)).join('');
}

function inlineToken(t: Token, ctx: Ctx): string {
  switch (t.type) {
    case 'text': {
      const tt = t as Tokens.Text;
      return tt.tokens ? inline(tt.tokens, ctx) : escapeSlack(decodeCharacterReferences(tt.text));
    }
    case 'escape':
      return escapeSlack((t as Tokens.Escape).text);
    case 'strong':
      return ctx.bold ? inline((t as Tokens.Strong).tokens, ctx) : wrap('*', inline((t as Tokens.Strong).tokens, { ...ctx, bold: true }));
    case 'em':
      return ctx.italic ? inline((t as Tokens.Em).tokens, ctx) : wrap('_', inline((t as Tokens.Em).tokens, { ...ctx, italic: true }));
    case 'del':
      return ctx.strike ? inline((t as Tokens.Del).tokens, ctx) : wrap('~', inline((t as Tokens.Del).tokens, { ...ctx, strike: true }));
    case 'codespan':
      return `\`${escapeAll(decodeCharacterReferences((t as Tokens.Codespan).text))}\``;
    case 'br':
      return '\n';
    case 'link':
    case 'image': {
      // Bare URLs and addresses stay text: Slack links them itself, and `<mailto:…>` would only add noise.
      const { text, url } = linkOrText(t as Tokens.Link | Tokens.Image, LINKABLE);
      return url === undefined ? escapeSlack(text) : `<${escapeUrl(url)}|${escapeAll(text)}>`;
    }
    case 'html': {
      const text = (t as Tokens.HTML).text;
      return isBreakTag(text) ? '\n' : escapeSlack(text);
    }
    default:
      return 'raw' in t && typeof t.raw === 'string' ? escapeSlack(t.raw) : '';
  }
}

/** Schemes Slack turns into links; a relative URL inside <…|…> would show as raw markup. */
const LINKABLE = /^(https?|mailto|tel|slack):/i;

function escapeUrl(url: string): string {
  return url.replace(/&/g, '&amp;').replace(/</g, '%3C').replace(/>/g, '%3E').replace(/\|/g, '%7C');
}

/** Markers must hug the text in Slack (`* x*` is not bold): move edge whitespace outside them. */
function wrap(marker: string, inner: string): string {
  const m = /^(\s*)([\s\S]*?)(\s*)$/.exec(inner);
  const [, lead = '', core = '', trail = ''] = m ?? [];
  return core ? `${lead}${marker}${core}${marker}${trail}` : inner;
}
