import { describe, expect, it } from 'vitest';
import { renderLarkMarkdown as render } from '../../../src/channels/lark/format.js';
import { LARK_LIMIT, postContent, textContent } from '../../../src/channels/lark/outbound.js';
import { cutMarkdown } from '../../../src/channels/lark/stream.js';

describe('renderLarkMarkdown (post md tag)', () => {
  it('keeps bold, italic, strikethrough, code, links, lists and quotes', () => {
    expect(render('**b** _i_ ~~s~~ `c` [l](https://x.dev)')).toBe('**b** *i* ~~s~~ `c` [l](https://x.dev)');
    expect(render('- a\n  - b\n1. c')).toBe('- a\n  - b\n\n1. c');
    expect(render('> q\n>\n> r')).toBe('> q\n>\n> r');
    expect(render('- [x] a\n\n- [ ] b')).toBe('- ☑ a\n- ☐ b'); // a loose task list's box sits in the paragraph
    expect(render('```py\nprint(1)\n```')).toBe('```py\nprint(1)\n```');
  });

  it('turns headings (not in the md tag) into bold lines', () => {
    expect(render('# Title\n\n### Sub *x*')).toBe('**Title**\n\n**Sub *x***');
  });

  it('renders a table as an aligned code block', () => {
    expect(render('| 名称 | n |\n|:--|--:|\n| 苹果 | 12 |')).toBe(['```', '名称 |  n', '-----|---', '苹果 | 12', '```'].join('\n'));
  });

  it('keeps --- as a rule and turns URL images into links (the md tag needs an uploaded image_key)', () => {
    expect(render('a\n\n---\n\nb')).toBe('a\n\n---\n\nb');
    expect(render('![chart](https://x.dev/c.png)')).toBe('[chart](https://x.dev/c.png)');
  });

  it('writes autolinks bare (the md tag links URLs itself) and leaves e-mail addresses alone', () => {
    expect(render('<https://x.dev> and https://y.dev, me@example.com')).toBe('https://x.dev and https://y.dev, me@example.com');
  });

  it('neutralises <at> tags so model output cannot ping anyone, inline or as a block', () => {
    expect(render('hi <at user_id="all"></at>!')).toBe('hi ＜at user_id="all">＜/at>!');
    expect(render('<AT user_id="ou_1">x</AT>')).toBe('＜AT user_id="ou_1">x＜/AT>');
    expect(render('`<at user_id="all">` stays code')).toBe('`<at user_id="all">` stays code');
  });

  it('drops control characters other than tab and newline', () => {
    expect(render('a\u0000b\u0007c\td\u001be\u007f')).toBe('abc\tde');
  });
});

describe('post content and LARK_LIMIT', () => {
  it('wraps the text in one md element of a zh_cn post; text messages are {"text"}', () => {
    expect(JSON.parse(postContent('**x**'))).toEqual({ zh_cn: { title: '', content: [[{ tag: 'md', text: '**x**' }]] } });
    expect(JSON.parse(textContent('x'))).toEqual({ text: 'x' });
  });

  it('a chunk at the limit fits the 30,000-byte post cap even when every byte needs escaping', () => {
    for (const ch of ['"', '\\', '\n', '\t', 'a']) {
      const text = ch.repeat(LARK_LIMIT.max);
      expect(Buffer.byteLength(postContent(text))).toBeLessThanOrEqual(30_000);
    }
    const cjk = '字'.repeat(Math.floor(LARK_LIMIT.max / 3));
    expect(Buffer.byteLength(postContent(render(cjk)))).toBeLessThanOrEqual(30_000);
  });
});

describe('cutMarkdown (stream card rollover)', () => {
  const under = (n: number) => (s: string) => s.length <= n;

  it('cuts after the last paragraph break that fits', () => {
    const md = 'aaaa\n\nbbbb\n\ncccc';
    expect(md.slice(0, cutMarkdown(md, under(12)))).toBe('aaaa\n\nbbbb\n\n');
    expect(md.slice(0, cutMarkdown(md, under(7)))).toBe('aaaa\n\n');
  });

  it('never cuts inside a code fence when a break outside one fits', () => {
    const md = 'intro\n\n```\nx\n\ny\n```\nafter';
    expect(md.slice(0, cutMarkdown(md, under(20)))).toBe('intro\n\n');
  });

  it('falls back to a line break, then to the longest prefix, and never splits a surrogate pair', () => {
    expect('one\ntwo\nthree'.slice(0, cutMarkdown('one\ntwo\nthree', under(9)))).toBe('one\ntwo\n');
    expect(cutMarkdown('abcdefgh', under(5))).toBe(5);
    const emoji = 'ab😀cd';
    expect(cutMarkdown(emoji, under(3))).toBe(2);
    expect(cutMarkdown('xyz', () => false)).toBe(1);
  });
});
