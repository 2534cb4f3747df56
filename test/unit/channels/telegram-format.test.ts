import { describe, expect, it } from 'vitest';
import { escapeV2, renderTelegramMarkdownV2, renderTelegramPlain } from '../../../src/channels/telegram/format.js';
import { parseText } from '../../fakes/platforms/channel-e-telegram-format.js';

const r = renderTelegramMarkdownV2;

/** What Telegram would store for the rendered text (the fake's MarkdownV2 parser); fails the test if it refuses. */
function parsed(md: string) {
  const out = parseText(r(md), 'MarkdownV2');
  if (!out.ok) throw new Error(`${out.error}\nrendered: ${r(md)}`);
  return out;
}

describe('Telegram MarkdownV2 rendering', () => {
  it('escapes every reserved character (and the backslash) outside entities', () => {
    expect(escapeV2('_*[]()~`>#+-=|{}.!\\')).toBe('\\_\\*\\[\\]\\(\\)\\~\\`\\>\\#\\+\\-\\=\\|\\{\\}\\.\\!\\\\');
    const text = 'Costs 1+1=2. Really! (yes) {x} [y] #h a|b -c a_b >d C:\\path';
    expect(r(text)).toBe('Costs 1\\+1\\=2\\. Really\\! \\(yes\\) \\{x\\} \\[y\\] \\#h a\\|b \\-c a\\_b \\>d C:\\\\path');
    expect(parsed(text).text).toBe(text);
  });

  it('escapes only ` and \\ inside code and pre', () => {
    expect(r('`a_b.c`')).toBe('`a_b.c`');
    expect(r('``a`b\\c``')).toBe('`a\\`b\\\\c`');
    expect(r('```py\nprint("a_b") # 1.0 `x` \\n\n```')).toBe('```py\nprint("a_b") # 1.0 \\`x\\` \\\\n\n```');
    // The closing fence on its own line is the documented form; the fake keeps that newline in the text.
    expect(parsed('```py\nprint("a_b") # 1.0 `x` \\n\n```')).toMatchObject({
      text: 'print("a_b") # 1.0 `x` \\n\n',
      entities: [{ type: 'pre', language: 'py' }],
    });
    expect(r('```weird lang!\ncode\n```')).toBe('```\ncode\n```');
  });

  it('maps styles, and closes them around code (bold cannot contain code)', () => {
    expect(r('**bold** _it_ ~~gone~~ `code`')).toBe('*bold* _it_ ~gone~ `code`');
    expect(r('**bold `code` more**')).toBe('*bold *`code`* more*');
    expect(parsed('**bold `code` more**').entities.map((e) => e.type)).toEqual(['bold', 'code', 'bold']);
    expect(r('*a **b** c*')).toBe('_a *b* c_');
  });

  it('never writes __ (Telegram reads it as underline) when italic ends next to more italic', () => {
    for (const md of ['**a _b_**_c_', '_a_ _b_', '***x*** *y*', '*a*~~*b*~~', '_x_**_y_**']) {
      expect(r(md)).not.toMatch(/(^|[^\\])__/);
      expect(parsed(md).entities.some((e) => e.type === 'underline')).toBe(false);
    }
    expect(parsed('**a _b_**_c_')).toMatchObject({
      text: 'a bc',
      entities: [
        { type: 'bold', offset: 0, length: 3 },
        { type: 'italic', offset: 2, length: 1 },
        { type: 'italic', offset: 3, length: 1 },
      ],
    });
  });

  it('writes links with only ) and \\ escaped in the URL; bare URLs and addresses stay text', () => {
    expect(r('[a.b](https://x.test/a_(b)?q=1.2)')).toBe('[a\\.b](https://x.test/a_(b\\)?q=1.2)');
    expect(parsed('[a.b](https://x.test/a_(b)?q=1.2)').entities).toEqual([{ type: 'text_link', offset: 0, length: 3, url: 'https://x.test/a_(b)?q=1.2' }]);
    expect(r('see https://x.test/a_b and a@b.com')).toBe('see https://x\\.test/a\\_b and a@b\\.com');
    expect(r('[rel](./f.md)')).toBe('rel \\(\\./f\\.md\\)');
  });

  it('renders headings as bold, lists, quotes, tables and rules, all accepted by the parser', () => {
    const md = '# Title 1.0\n\n- a\n  - b\n1. one\n2. two\n\n> quote.\n> more\n\n| k | v |\n|---|---|\n| a_b | 1.5 |\n\n---\n\nend!';
    expect(r(md)).toBe(
      '*Title 1\\.0*\n\n• a\n   ◦ b\n\n1\\. one\n2\\. two\n\n>quote\\.\n>more\n\n```\nk   | v\n----+----\na_b | 1.5\n```\n\n──────────\n\nend\\!',
    );
    const p = parsed(md);
    expect(p.entities.map((e) => e.type)).toEqual(['bold', 'blockquote', 'pre']);
    expect(r('1. [x] done\n\n2. [ ] todo')).toBe('1\\. ☑ done\n2\\. ☐ todo'); // loose: the box sits in the paragraph
  });

  it('handles a mixed reply the way the adapter sends it', () => {
    const md = 'Version 1.2 (beta) - costs $5! **bold** `a_b` [x](https://e.x/a_(b)) #tag';
    expect(parsed(md).text).toBe('Version 1.2 (beta) - costs $5! bold a_b x #tag');
  });

  it('plain text flavour drops markup and shows link targets', () => {
    expect(renderTelegramPlain('**v1.2** _it_ `c` [docs](https://d.x) https://e.x\n\n```\nx_y\n```')).toBe('v1.2 it c docs (https://d.x) https://e.x\n\nx_y');
    expect(renderTelegramPlain('> q')).toBe('> q');
  });

  it('every rendering of a mixed corpus is accepted and shows the same text as the plain flavour', () => {
    const corpus = [
      'plain',
      '1. a.b\n2. c!',
      '**x** and __y__ and ~~z~~',
      'a * b * c',
      'snake_case_name and 2*3*4',
      'C:\\dir\\file.txt',
      '`a\\b` and ``x`y``',
      '- [x] done.\n- [ ] todo!',
      'emoji 😀 **bold 😀**',
      '<b>html</b> &amp; &lt;',
      '*a **b _c_ d** e*',
      'x\\_y \\*z\\*',
      '***',
      '# h1\n## h2 #\n### h3 (x)',
    ];
    for (const md of corpus) expect(parsed(md).text).toBe(renderTelegramPlain(md));
  });
});
