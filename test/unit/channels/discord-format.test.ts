import { describe, expect, it } from 'vitest';
import { DISCORD_RULE, renderDiscordMarkdown as render } from '../../../src/channels/discord/format.js';

describe('renderDiscordMarkdown', () => {
  it('keeps what Discord reads as CommonMark does', () => {
    expect(render('**b** *i* ~~s~~ `c` [link](https://x.dev)')).toBe('**b** *i* ~~s~~ `c` [link](https://x.dev)');
    expect(render('a\\*b\\* and \\_c\\_')).toBe('a\\*b\\* and \\_c\\_');
    expect(render('line one\nline two')).toBe('line one\nline two');
  });

  it('writes bold as ** because __x__ is underline on Discord, and italic as *', () => {
    expect(render('__strong__ and _em_')).toBe('**strong** and *em*');
  });

  it('keeps headings 1-3 and turns deeper ones into bold lines', () => {
    expect(render('# One\n\n## Two\n\n### Three\n\n#### Four **x**')).toBe('# One\n\n## Two\n\n### Three\n\n**Four **x****');
    expect(render('Two\nlines\n===')).toBe('# Two lines'); // an ATX heading ends at the line break
  });

  it('renders a table as an aligned code block (right alignment, wide CJK cells)', () => {
    const md = '| name | qty |\n|---|--:|\n| 苹果 | 2 |\n| pear **x** | 10 |';
    expect(render(md)).toBe(['```', 'name   | qty', '-------|----', '苹果   |   2', 'pear x |  10', '```'].join('\n'));
  });

  it('lists: bullets, numbering from the start value, nesting, task boxes', () => {
    expect(render('- a\n- b\n  1. c\n  2. d')).toBe('- a\n- b\n  1. c\n  2. d');
    expect(render('3. three\n4. four')).toBe('3. three\n4. four');
    expect(render('- [ ] todo\n- [x] done')).toBe('- ☐ todo\n- ☑ done');
    expect(render('1. [x] done\n\n2. [ ] todo')).toBe('1. ☑ done\n2. ☐ todo'); // loose: the box sits in the paragraph
  });

  it('quotes every line of a block quote, blank lines included', () => {
    expect(render('> q\n> r\n>\n> s')).toBe('> q\n> r\n>\n> s');
  });

  it('keeps fenced code with its language and breaks a fence inside the code', () => {
    expect(render('```js\nconst a = 1;\n```')).toBe('```js\nconst a = 1;\n```');
    expect(render('````\na ``` b\n````')).toBe('```\na `\u200b`` b\n```');
  });

  it('replaces --- (not a rule on Discord) and links images', () => {
    expect(render('a\n\n---\n\nb')).toBe(`a\n\n${DISCORD_RULE}\n\nb`);
    expect(render('![chart](https://x.dev/c.png) ![](https://x.dev/d.png)')).toBe('[chart](https://x.dev/c.png) https://x.dev/d.png');
  });

  it('keeps autolinks and e-mail addresses as written', () => {
    expect(render('see <https://x.dev> or https://y.dev, mail me@example.com')).toBe('see <https://x.dev> or https://y.dev, mail me@example.com');
  });

  it('passes HTML and Discord-only syntax through, and trims blank edges', () => {
    expect(render('<b>x</b> ||spoiler||')).toBe('<b>x</b> ||spoiler||');
    expect(render('\n\n  hi  \n\n')).toBe('hi');
    expect(render('')).toBe('');
  });
});
