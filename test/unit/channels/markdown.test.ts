import { Lexer, type Token, type Tokens } from 'marked';
import { describe, expect, it } from 'vitest';
import {
  atxHeading,
  decodeCharacterReferences,
  isBreakTag,
  linkOrText,
  quoteLines,
  renderMarkdownList,
  renderTextList,
  singleLine,
  stripControlCharacters,
  stripHtmlTags,
  visibleText,
} from '../../../src/channels/markdown.js';
import { formatTableText, VISIBLE_TEXT_TABLE_LAYOUT } from '../../../src/channels/markdown-table.js';

const lex = (md: string) => Lexer.lex(md, { gfm: true });
const first = <T extends Token>(md: string, type: T['type']): T => {
  const t = lex(md).find((x) => x.type === type);
  if (!t) throw new Error(`no ${type} in ${md}`);
  return t as T;
};
const inlineOf = (md: string) => first<Tokens.Paragraph>(md, 'paragraph').tokens;

/** A body renderer as simple as possible: each block's raw text, trailing newlines dropped. */
const rawBlocks = (tokens: Token[], separator: string): string =>
  tokens
    .filter((t) => t.type !== 'space')
    .map((t) => (t.type === 'list' ? renderMarkdownList(t as Tokens.List, rawBlocks) : t.raw.replace(/\n+$/, '')))
    .join(separator);

describe('renderMarkdownList (platforms that parse Markdown lists)', () => {
  it('numbers from the start value, boxes tasks and indents continuation lines to the marker width', () => {
    expect(renderMarkdownList(first<Tokens.List>('9. a\n10. b', 'list'), rawBlocks)).toBe('9. a\n10. b');
    expect(renderMarkdownList(first<Tokens.List>('- [x] done\n- [ ] todo', 'list'), rawBlocks)).toBe('- ☑ done\n- ☐ todo');
    expect(renderMarkdownList(first<Tokens.List>('1. a\n   - b\n   - c', 'list'), rawBlocks)).toBe('1. a\n   - b\n   - c');
  });

  it("separates a loose item's blocks with a blank line (left unindented) and items as the caller says", () => {
    const loose = first<Tokens.List>('- a\n\n  more\n- b', 'list');
    expect(renderMarkdownList(loose, rawBlocks)).toBe('- a\n\n  more\n- b');
    expect(renderMarkdownList(loose, rawBlocks, '\n\n')).toBe('- a\n\n  more\n\n- b');
  });

  it('boxes the tasks of a loose list too, where marked puts the checkbox inside the paragraph', () => {
    // Paragraphs rendered from their inline tokens, as the platform renderers do.
    const inlineBlocks = (tokens: Token[], separator: string): string =>
      tokens
        .filter((t) => t.type !== 'space')
        .map((t) => ('tokens' in t && t.tokens ? (t.tokens as Token[]).map((x) => x.raw).join('') : t.raw).replace(/\n+$/, ''))
        .join(separator);
    const loose = first<Tokens.List>('1. [x] done\n\n2. [ ] todo', 'list');
    expect(renderMarkdownList(loose, inlineBlocks)).toBe('1. ☑ done\n2. ☐ todo');
    const style = { indent: '  ', renderBlock: (t: Token) => inlineBlocks([t], '') };
    expect(renderTextList(loose, style)).toBe('1. ☑ done\n2. ☐ todo');
  });
});

describe('renderTextList (platforms without list syntax)', () => {
  const style = { indent: '  ', renderBlock: (t: Token) => t.raw.replace(/\n+$/, '') };

  it('draws bullets by depth, indents a fixed step per level and puts later blocks under the marker', () => {
    expect(renderTextList(first<Tokens.List>('- a\n  - b\n    - c\n      - d', 'list'), style)).toBe('• a\n  ◦ b\n    ▪ c\n      • d');
    expect(renderTextList(first<Tokens.List>('- a\n\n  more', 'list'), style)).toBe('• a\n  more');
    expect(renderTextList(first<Tokens.List>('- [ ] t', 'list'), style)).toBe('• ☐ t');
  });

  it('escapes markers with the given escaper', () => {
    const escaped = { ...style, escapeMarker: (m: string) => m.replace('.', '\\.') };
    expect(renderTextList(first<Tokens.List>('3. x\n4. y', 'list'), escaped)).toBe('3\\. x\n4\\. y');
  });
});

describe('block helpers', () => {
  it('quotes every line, blank ones as a bare >, whitespace-only ones too on request', () => {
    expect(quoteLines('a\n\nb\n  ')).toBe('> a\n>\n> b\n>   ');
    expect(quoteLines('a\n\nb\n  ', { blankIfWhitespace: true })).toBe('> a\n>\n> b\n>');
  });

  it('writes ATX headings clamped to 1-6 on one line', () => {
    expect(atxHeading(0, 'x')).toBe('# x');
    expect(atxHeading(9, 'a \n b')).toBe('###### a b');
    expect(singleLine(' a\n  b \nc ')).toBe(' a b c ');
  });
});

describe('text helpers', () => {
  it('drops control characters but keeps tab, newline and carriage return', () => {
    expect(stripControlCharacters('a\u0000b\u0007c\td\ne\rf\u001b\u007f')).toBe('abc\td\ne\rf');
  });

  it('strips tags and comments, keeps their text; recognises only <br> as a break', () => {
    expect(stripHtmlTags('<b>x</b> <!-- c --> 1 < 2 <br/>')).toBe('x  1 < 2 ');
    expect([isBreakTag('<br>'), isBreakTag('<BR />'), isBreakTag('<b>')]).toEqual([true, true, false]);
  });

  it('decodes named and numeric references, leaving unknown or invalid ones as written', () => {
    expect(decodeCharacterReferences('&amp; &lt;&gt; &#65;&#x42; &nbsp;')).toBe('& <> AB \u00a0');
    expect(decodeCharacterReferences('&bogus; &#0; &#x110000;')).toBe('&bogus; &#0; &#x110000;');
  });

  it('gives the visible text of inline tokens: labels, alt text, breaks, decoded references', () => {
    expect(visibleText(inlineOf('**a** [l](http://x) ![alt](i.png) `c` &lt;\\*'))).toBe('a l alt c <*');
    expect(visibleText(undefined)).toBe('');
  });

  it('shows a link as a link only for linkable schemes, bare URLs and addresses as text', () => {
    const link = (md: string) => inlineOf(md).find((t) => t.type === 'link' || t.type === 'image') as Tokens.Link | Tokens.Image;
    const web = /^https?:/i;
    expect(linkOrText(link('[docs](https://d.x)'), web)).toEqual({ text: 'docs', url: 'https://d.x' });
    expect(linkOrText(link('[](https://d.x)'), web)).toEqual({ text: 'https://d.x', url: 'https://d.x' });
    expect(linkOrText(link('see https://d.x'), web)).toEqual({ text: 'https://d.x' });
    expect(linkOrText(link('mail a@b.c'), web)).toEqual({ text: 'a@b.c' });
    expect(linkOrText(link('[rel](./f.md)'), web)).toEqual({ text: 'rel (./f.md)' });
    expect(linkOrText(link('![p](https://i/p.png)'), web)).toEqual({ text: 'p', url: 'https://i/p.png' });
    expect(linkOrText(link('![](./p.png)'), web)).toEqual({ text: './p.png' });
  });
});

describe('formatTableText layouts', () => {
  const table = (md: string) => first<Tokens.Table>(md, 'table');

  it('by default counts wide characters as two columns and keeps link targets', () => {
    expect(formatTableText(table('| 名 | [l](http://x) |\n|---|--:|\n| ab | 1 |'))).toBe(
      ['名 | l (http://x)', '---|-------------', 'ab |            1'].join('\n'),
    );
  });

  it('the visible-text layout counts code units, shows labels only, allows empty columns and crosses with +', () => {
    expect(formatTableText(table('| | [l](http://x) |\n|---|--:|\n| | &amp; |'), VISIBLE_TEXT_TABLE_LAYOUT)).toBe([' | l', '-+--', ' | &'].join('\n'));
    expect(formatTableText(table('| 名 | n |\n|---|---|\n| ab | 1 |'), VISIBLE_TEXT_TABLE_LAYOUT)).toBe(['名  | n', '---+--', 'ab | 1'].join('\n'));
  });
});
