import { describe, expect, it } from 'vitest';
import { escapeSlack, renderSlackMrkdwn, slackTextToMarkdown } from '../../../src/channels/slack/format.js';

const r = renderSlackMrkdwn;

describe('Slack mrkdwn rendering', () => {
  it('maps inline styles to mrkdwn markers', () => {
    expect(r('**bold** _it_ *it too* ~~gone~~ `code`')).toBe('*bold* _it_ _it too_ ~gone~ `code`');
    expect(r('***both***')).toBe('_*both*_');
    expect(r('**bold with `code` inside**')).toBe('*bold with `code` inside*');
  });

  it('renders headings as bold lines without nesting bold inside bold', () => {
    expect(r('# Title\n\n## Sub **strong** part\n\ntext')).toBe('*Title*\n\n*Sub strong part*\n\ntext');
  });

  it('escapes &, < and > everywhere, code included, and decodes Markdown character references first', () => {
    expect(r('a < b && c > d')).toBe('a &lt; b &amp;&amp; c &gt; d');
    expect(r('`<tag a="1">` & more')).toBe('`&lt;tag a="1"&gt;` &amp; more');
    expect(r('```html\n<p>&amp;</p>\n```')).toBe('```\n&lt;p&gt;&amp;amp;&lt;/p&gt;\n```');
    expect(r('AT&amp;T &lt;3')).toBe('AT&amp;T &lt;3');
    expect(r('<div>raw html</div>')).toBe('&lt;div&gt;raw html&lt;/div&gt;');
  });

  it('keeps Slack user and channel mentions, but not broadcast mentions', () => {
    expect(r('ask <@U0123ABC> in <#C0456|general>')).toBe('ask <@U0123ABC> in <#C0456|general>');
    expect(escapeSlack('<!channel> look')).toBe('&lt;!channel&gt; look');
  });

  it('writes links as <url|text>, leaves bare URLs and addresses to Slack, and shows odd URLs as text', () => {
    expect(r('[the docs](https://x.test/a?b=1&c=2)')).toBe('<https://x.test/a?b=1&amp;c=2|the docs>');
    expect(r('[pipe](https://x.test/a|b>c)')).toBe('<https://x.test/a%7Cb%3Ec|pipe>');
    expect(r('see https://x.test and mail a@b.com')).toBe('see https://x.test and mail a@b.com');
    expect(r('[rel](./file.md) ![alt](https://x.test/i.png)')).toBe('rel (./file.md) <https://x.test/i.png|alt>');
  });

  it('renders lists (nested, ordered, tasks), quotes, rules and line breaks', () => {
    expect(r('- a\n  - b\n    - c\n- d')).toBe('• a\n    ◦ b\n        ▪ c\n• d');
    expect(r('3. three\n4. four')).toBe('3. three\n4. four');
    expect(r('- [ ] todo\n- [x] done')).toBe('• ☐ todo\n• ☑ done');
    expect(r('1. [x] done\n\n2. [ ] todo')).toBe('1. ☑ done\n2. ☐ todo'); // loose: the box sits in the paragraph
    expect(r('> quoted\n> lines\n\nafter')).toBe('> quoted\n> lines\n\nafter');
    expect(r('one\n\n---\n\ntwo')).toBe('one\n\n──────────\n\ntwo');
    expect(r('a<br>b  \nc')).toBe('a\nb\nc');
  });

  it('lays tables out as aligned text in a code block', () => {
    expect(r('| name | n |\n|---|--:|\n| a<b | 1 |\n| long | 22 |')).toBe('```\nname |  n\n-----+---\na&lt;b  |  1\nlong | 22\n```');
  });

  it('keeps a ``` inside code from closing the block', () => {
    expect(r('````\na ``` b\n````')).toBe('```\na ``\u200b` b\n```');
  });

  it('returns an empty string for empty or blank input', () => {
    expect(r('')).toBe('');
    expect(r('  \n\n ')).toBe('');
  });
});

describe('inbound Slack text → Markdown', () => {
  it('unwraps links, decodes entities and keeps user mentions', () => {
    expect(slackTextToMarkdown('see <https://a.test/x|the docs> &amp; <https://b.test>')).toBe('see [the docs](https://a.test/x) & https://b.test');
    expect(slackTextToMarkdown('mail <mailto:a@b.com|a@b.com> or <https://c.test|c.test>')).toBe('mail a@b.com or c.test');
    expect(slackTextToMarkdown('<@U3> &lt;b&gt; <#C1|general> <!here>')).toBe('<@U3> <b> <#C1|general> @here');
  });
});
