// A reply's Markdown as DOM nodes. marked only tokenizes (its lexer); every node is built here
// with createElement and textContent, so nothing from a reply is ever parsed as HTML: a tag the
// agent writes (`<img onerror=…>`, `<script>`) arrives as an `html` token and is shown as text.
// Links open in a new tab without a referrer or opener, and only for http(s) and mailto targets;
// images are links (nothing is loaded from where a reply points); code blocks get a copy button.
import { copyText, el } from './api.js';
import { Lexer } from './vendor/marked.js';

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** Markdown's character references (`&amp;`, `&#39;`) as the characters they stand for. */
function decodeEntities(text) {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]+);/gi, (whole, name) => {
    if (name[0] !== '#') return ENTITIES[name.toLowerCase()] ?? whole;
    const code = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** A target a link may have: http(s), mailto, or a path on this origin; never `javascript:` or `data:`. */
export function linkTarget(href) {
  const url = String(href ?? '').trim();
  if (/^(https?:|mailto:)/i.test(url)) return url;
  if (/^\/(?!\/)/.test(url) || url.startsWith('#')) return url;
  return undefined;
}

function link(href, title, children) {
  const target = linkTarget(href);
  if (!target) return el('span', { class: 'md-badlink', attrs: { title: `link not opened: ${href}` } }, children);
  return el('a', { attrs: { href: target, target: '_blank', rel: 'noopener noreferrer', title: title || undefined } }, children);
}

function inline(tokens = []) {
  return tokens.map((t) => {
    switch (t.type) {
      case 'text':
        return t.tokens ? el('span', {}, inline(t.tokens)) : document.createTextNode(decodeEntities(t.text));
      case 'escape':
        return document.createTextNode(t.text);
      case 'strong':
        return el('strong', {}, inline(t.tokens));
      case 'em':
        return el('em', {}, inline(t.tokens));
      case 'del':
        return el('del', {}, inline(t.tokens));
      case 'codespan':
        return el('code', { text: t.text });
      case 'br':
        return el('br');
      case 'link':
        return link(t.href, t.title, inline(t.tokens));
      case 'image':
        return link(t.href, t.title, [document.createTextNode(`[image: ${t.text || t.href}]`)]);
      case 'checkbox':
        return el('input', { attrs: { type: 'checkbox', disabled: '', ...(t.checked ? { checked: '' } : {}) } });
      default:
        // `html` (a tag in the reply) and anything unknown: the source text, as text.
        return document.createTextNode(t.raw ?? t.text ?? '');
    }
  });
}

function codeBlock(t) {
  const code = el('code', { text: t.text, attrs: t.lang ? { 'data-lang': t.lang } : {} });
  const note = el('span', { class: 'copy-note muted', attrs: { 'aria-live': 'polite' } });
  const button = el('button', {
    class: 'secondary copy-code',
    text: 'Copy',
    attrs: { type: 'button', 'aria-label': 'Copy code' },
    on: {
      click: async () => {
        const ok = await copyText(t.text);
        note.textContent = ok ? 'copied' : 'select the text to copy';
        if (!ok) getSelection()?.selectAllChildren(code);
        setTimeout(() => (note.textContent = ''), 2_000);
      },
    },
  });
  const head = el('div', { class: 'code-head' }, [el('span', { class: 'muted', text: t.lang || 'code' }), note, button]);
  return el('div', { class: 'code-block' }, [head, el('pre', {}, [code])]);
}

function list(t) {
  const items = t.items.map((item) => el('li', {}, item.loose ? blocks(item.tokens) : inlineOrBlocks(item.tokens)));
  const start = t.ordered && t.start !== '' && t.start !== 1 ? { start: t.start } : {};
  return el(t.ordered ? 'ol' : 'ul', { attrs: start }, items);
}

/** A tight list item holds `text` tokens (inline content) and maybe nested lists. */
function inlineOrBlocks(tokens) {
  return tokens.flatMap((t) => (t.type === 'text' ? inline(t.tokens ?? [t]) : t.type === 'checkbox' ? inline([t]) : blocks([t])));
}

function table(t) {
  const cell = (tag, c, i) => el(tag, { attrs: { 'data-align': t.align[i] } }, inline(c.tokens));
  const head = el('thead', {}, [
    el(
      'tr',
      {},
      t.header.map((c, i) => cell('th', c, i)),
    ),
  ]);
  const body = el(
    'tbody',
    {},
    t.rows.map((row) =>
      el(
        'tr',
        {},
        row.map((c, i) => cell('td', c, i)),
      ),
    ),
  );
  return el('div', { class: 'table-wrap' }, [el('table', {}, [head, body])]);
}

function blocks(tokens = []) {
  return tokens.flatMap((t) => {
    switch (t.type) {
      case 'space':
      case 'def':
        return [];
      case 'paragraph':
        return [el('p', {}, inline(t.tokens))];
      case 'heading':
        // A reply's headings sit inside a message: h1 is shown as the page's fourth level, and so on.
        return [el(`h${Math.min(6, t.depth + 3)}`, { class: 'md-heading' }, inline(t.tokens))];
      case 'code':
        return [codeBlock(t)];
      case 'blockquote':
        return [el('blockquote', {}, blocks(t.tokens))];
      case 'list':
        return [list(t)];
      case 'table':
        return [table(t)];
      case 'hr':
        return [el('hr')];
      case 'text':
        return [el('p', {}, inline(t.tokens ?? [t]))];
      case 'checkbox':
        return inline([t]);
      default:
        // A block of HTML (`<script>…</script>` on its own lines) and anything unknown: shown as it was written.
        return [el('p', { class: 'md-raw', text: t.raw ?? t.text ?? '' })];
    }
  });
}

/** The nodes of a Markdown text, ready to append; an unreadable text is shown as it is. */
export function renderMarkdown(text) {
  try {
    return blocks(Lexer.lex(String(text ?? ''), { gfm: true, breaks: true }));
  } catch {
    return [el('p', { class: 'md-raw', text })];
  }
}
