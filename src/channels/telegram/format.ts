import { Lexer, type Token, type Tokens } from 'marked';
import { decodeCharacterReferences, isBreakTag, linkOrText, renderTextList, TEXT_RULE } from '../markdown.js';
import { formatTableText, VISIBLE_TEXT_TABLE_LAYOUT } from '../markdown-table.js';

/**
 * Standard Markdown → Telegram MarkdownV2 (pure), and the same document as plain text for the
 * retry after Telegram refuses the formatting. Inline content is flattened into styled runs and
 * written with a stack of open styles, because MarkdownV2 cannot put code inside bold/italic and
 * `__` is always read as underline: the writer closes styles around code and never closes and
 * reopens italic back to back.
 */
export function renderTelegramMarkdownV2(markdown: string): string {
  return render(markdown, 'v2');
}

export function renderTelegramPlain(markdown: string): string {
  return render(markdown, 'plain');
}

type Flavour = 'v2' | 'plain';
type Style = 'bold' | 'italic' | 'strike';
type Run = { kind: 'text'; text: string; styles: Style[] } | { kind: 'link'; text: string; url: string; styles: Style[] } | { kind: 'code'; text: string };

/** Schemes Telegram accepts in a text link; a relative or odd URL stays visible as text. */
const LINKABLE = /^(https?|tg):\/\//i;
const MARK: Record<Style, string> = { bold: '*', italic: '_', strike: '~' };
const RESERVED = /[_*[\]()~`>#+\-=|{}.!\\]/g;

/** Outside entities every reserved character (and the backslash itself) takes a backslash. */
export const escapeV2 = (s: string): string => s.replace(RESERVED, '\\$&');
/** Inside code and pre only the backtick and the backslash are special. */
export const escapeV2Code = (s: string): string => s.replace(/[`\\]/g, '\\$&');
/** Inside the (…) of a link only `)` and the backslash are special. */
const escapeV2Url = (s: string): string => s.replace(/[)\\]/g, '\\$&');

function render(markdown: string, f: Flavour): string {
  return blocks(Lexer.lex(markdown, { gfm: true }), f).trim();
}

function blocks(tokens: Token[], f: Flavour): string {
  const out: string[] = [];
  for (const t of tokens) {
    const s = block(t, f);
    if (s) out.push(s);
  }
  return out.join('\n\n');
}

function block(t: Token, f: Flavour): string | undefined {
  switch (t.type) {
    case 'space':
    case 'def':
      return undefined;
    case 'heading':
      return write(runs((t as Tokens.Heading).tokens, ['bold']), f);
    case 'paragraph':
      return write(runs((t as Tokens.Paragraph).tokens, []), f);
    case 'text': {
      const tt = t as Tokens.Text;
      return write(tt.tokens ? runs(tt.tokens, []) : [{ kind: 'text', text: decodeCharacterReferences(tt.text), styles: [] }], f);
    }
    case 'code':
      return pre((t as Tokens.Code).text, (t as Tokens.Code).lang, f);
    case 'blockquote': {
      const inner = blocks((t as Tokens.Blockquote).tokens, f);
      return inner
        .split('\n')
        .map((l) => (f === 'v2' ? `>${l}` : `> ${l}`).trimEnd())
        .join('\n');
    }
    case 'list':
      return renderTextList(t as Tokens.List, {
        indent: '   ',
        escapeMarker: (m) => text(m, f),
        renderBlock: (child) => block(child, f),
      });
    case 'table':
      // Tables have no MarkdownV2 form: aligned plain text in a pre block.
      return pre(formatTableText(t as Tokens.Table, VISIBLE_TEXT_TABLE_LAYOUT), undefined, f);
    case 'hr':
      return TEXT_RULE;
    case 'html':
      return text((t as Tokens.HTML).text.trim(), f);
    default:
      return 'raw' in t && typeof t.raw === 'string' ? text(t.raw.trim(), f) : undefined;
  }
}

const text = (s: string, f: Flavour): string => (f === 'v2' ? escapeV2(s) : s);

function pre(code: string, lang: string | undefined, f: Flavour): string {
  if (f === 'plain') return code;
  // Telegram reads the rest of the opening line as the language; anything odd there would be code.
  const language = lang && /^[\w+#.-]+$/.test(lang) ? lang : '';
  return `\`\`\`${language}\n${escapeV2Code(code)}\n\`\`\``;
}

/** Flatten inline tokens into runs of text that share one set of styles. */
function runs(tokens: Token[] | undefined, styles: Style[], out: Run[] = []): Run[] {
  const add = (s: Style) => (styles.includes(s) ? styles : [...styles, s]);
  for (const t of tokens ?? []) {
    switch (t.type) {
      case 'text': {
        const tt = t as Tokens.Text;
        if (tt.tokens) runs(tt.tokens, styles, out);
        else out.push({ kind: 'text', text: decodeCharacterReferences(tt.text), styles });
        break;
      }
      case 'escape':
        out.push({ kind: 'text', text: (t as Tokens.Escape).text, styles });
        break;
      case 'strong':
        runs((t as Tokens.Strong).tokens, add('bold'), out);
        break;
      case 'em':
        runs((t as Tokens.Em).tokens, add('italic'), out);
        break;
      case 'del':
        runs((t as Tokens.Del).tokens, add('strike'), out);
        break;
      case 'codespan':
        out.push({ kind: 'code', text: decodeCharacterReferences((t as Tokens.Codespan).text) });
        break;
      case 'br':
        out.push({ kind: 'text', text: '\n', styles });
        break;
      case 'link':
      case 'image': {
        // Bare URLs and addresses stay text: Telegram links them itself.
        const shown = linkOrText(t as Tokens.Link | Tokens.Image, LINKABLE);
        if (shown.url === undefined) out.push({ kind: 'text', text: shown.text, styles });
        else out.push({ kind: 'link', text: shown.text, url: shown.url, styles });
        break;
      }
      case 'html': {
        const h = (t as Tokens.HTML).text;
        out.push({ kind: 'text', text: isBreakTag(h) ? '\n' : h, styles });
        break;
      }
      default:
        if ('raw' in t && typeof t.raw === 'string') out.push({ kind: 'text', text: t.raw, styles });
    }
  }
  return out;
}

function write(list: Run[], f: Flavour): string {
  if (f === 'plain') {
    return list.map((r) => (r.kind === 'link' && r.text !== r.url ? `${r.text} (${r.url})` : r.text)).join('');
  }
  let out = '';
  let open: Style[] = [];
  /** Close styles from the top until only wanted ones remain, then open the missing ones. */
  const moveTo = (target: Style[]) => {
    let keep = 0;
    while (keep < open.length && target.includes(open[keep] as Style)) keep++;
    for (let i = open.length - 1; i >= keep; i--) out += MARK[open[i] as Style];
    open = open.slice(0, keep);
    for (const s of target) {
      if (open.includes(s)) continue;
      out += MARK[s];
      open.push(s);
    }
  };
  for (const r of list) {
    if (r.text === '') continue;
    if (r.kind === 'code') {
      moveTo([]);
      out += `\`${escapeV2Code(r.text)}\``;
      continue;
    }
    // Whitespace never needs a style of its own: it may close styles but never opens one.
    if (r.kind === 'text' && r.text.trim() === '') {
      moveTo(open.filter((s) => r.styles.includes(s)));
      out += r.text;
      continue;
    }
    moveTo(r.styles);
    out += r.kind === 'link' ? `[${escapeV2(r.text)}](${escapeV2Url(r.url)})` : escapeV2(r.text);
  }
  moveTo([]);
  return out;
}
