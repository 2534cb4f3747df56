import { Lexer, type Token, type Tokens } from 'marked';

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
      return tt.tokens ? inline(tt.tokens) : escapeSlack(decodeEntities(tt.text));
    }
    case 'code':
      return fence((t as Tokens.Code).text);
    case 'blockquote':
      return blocks((t as Tokens.Blockquote).tokens)
        .split('\n')
        .map((l) => (l ? `> ${l}` : '>'))
        .join('\n');
    case 'list':
      return list(t as Tokens.List, 0);
    case 'table':
      return fence(table(t as Tokens.Table));
    case 'hr':
      return '──────────';
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

const BULLETS = ['•', '◦', '▪'];

function list(t: Tokens.List, depth: number): string {
  const start = typeof t.start === 'number' ? t.start : 1;
  const indent = '    '.repeat(depth);
  return t.items
    .map((item, i) => {
      const marker = t.ordered ? `${start + i}.` : (BULLETS[depth % BULLETS.length] as string);
      const box = item.task ? (item.checked ? '☑ ' : '☐ ') : '';
      const lines: string[] = [`${indent}${marker} ${box}`.trimEnd()];
      let first = true;
      for (const child of item.tokens) {
        if (child.type === 'checkbox') continue;
        if (child.type === 'list') {
          lines.push(list(child as Tokens.List, depth + 1));
        } else {
          const s = block(child);
          if (!s) continue;
          const body = s.split('\n').join(`\n${indent}  `);
          // The item's first paragraph goes on the marker line, later blocks below it.
          if (first) lines[0] = `${indent}${marker} ${box}${body}`;
          else lines.push(`${indent}  ${body}`);
        }
        first = false;
      }
      return lines.join('\n');
    })
    .join('\n');
}

/** Tables have no mrkdwn form: lay them out as aligned plain text (shown in a code block). */
function layoutTable(t: Tokens.Table, cell: (tokens: Token[]) => string): string {
  const rows = [t.header.map((c) => cell(c.tokens)), ...t.rows.map((r) => r.map((c) => cell(c.tokens)))];
  const widths = t.header.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (t.align[i] === 'right' ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join(' | ')
      .trimEnd();
  const [head = [], ...body] = rows;
  return [line(head), widths.map((w) => '-'.repeat(w)).join('-+-'), ...body.map(line)].join('\n');
}

function table(t: Tokens.Table): string {
  return layoutTable(t, plain);
}

/** Visible text of inline tokens, without any markup. */
function plain(tokens: Token[] | undefined): string {
  return (tokens ?? [])
    .map((t) => {
      if (t.type === 'br') return '\n';
      if (t.type === 'image') return (t as Tokens.Image).text;
      if ('tokens' in t && Array.isArray(t.tokens) && t.tokens.length) return plain(t.tokens as Token[]);
      if (t.type === 'text' || t.type === 'escape' || t.type === 'codespan') return decodeEntities((t as Tokens.Text).text);
      return 'text' in t && typeof t.text === 'string' ? t.text : '';
    })
    .join('');
}

function inline(tokens: Token[] | undefined, ctx: Ctx = {}): string {
  return (tokens ?? []).map((t) => inlineToken(t, ctx)).join('');
}

function inlineToken(t: Token, ctx: Ctx): string {
  switch (t.type) {
    case 'text': {
      const tt = t as Tokens.Text;
      return tt.tokens ? inline(tt.tokens, ctx) : escapeSlack(decodeEntities(tt.text));
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
      return `\`${escapeAll(decodeEntities((t as Tokens.Codespan).text))}\``;
    case 'br':
      return '\n';
    case 'link': {
      const l = t as Tokens.Link;
      const label = plain(l.tokens);
      // Bare URLs and addresses: Slack links them itself, and `<mailto:…>` would only add noise.
      if (label === l.href || `mailto:${label}` === l.href) return escapeSlack(label);
      if (!LINKABLE.test(l.href)) return escapeSlack(label ? `${label} (${l.href})` : l.href);
      return `<${escapeUrl(l.href)}|${escapeAll(label || l.href)}>`;
    }
    case 'image': {
      const img = t as Tokens.Image;
      if (!LINKABLE.test(img.href)) return escapeSlack(img.text || img.href);
      return `<${escapeUrl(img.href)}|${escapeAll(img.text || img.href)}>`;
    }
    case 'html': {
      const text = (t as Tokens.HTML).text;
      return /^<br\s*\/?>$/i.test(text) ? '\n' : escapeSlack(text);
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

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** marked leaves character references in text tokens as written; Markdown means the character. */
function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : Number(ref.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED[ref.toLowerCase()] ?? whole;
  });
}
