import { describe, expect, it } from 'vitest';
import { renderWecomMarkdown as render } from '../../../src/channels/wecom/format.js';
import {
  normalizeCallback,
  normalizeCardEvent,
  parseMediaRef,
  readWecomReplyExtra as readReplyExtra,
  stripLeadingMention,
} from '../../../src/channels/wecom/inbound.js';
import { toWecomChannelError as toChannelError } from '../../../src/channels/wecom/errors.js';
import { ChannelError } from '../../../src/channels/types.js';

describe('WeCom Markdown rendering', () => {
  it('keeps standard Markdown the AI bot renders: headings, emphasis, links, lists, quotes, code, images', () => {
    expect(render('## T\n\n**b** _i_ [l](http://a.b "t") `c`')).toBe('## T\n\n**b** *i* [l](http://a.b) `c`');
    expect(render('- a\n- b\n  - c\n\n3. x\n4. y')).toBe('- a\n- b\n  - c\n\n3. x\n4. y');
    expect(render('> q1\n> q2')).toBe('> q1\n> q2');
    expect(render('```\na\n\n\nb\n```')).toBe('```\na\n\n\nb\n```'); // code keeps its blank lines
    expect(render('```py\nprint(1)\n```\n\n---\n\n![p](http://i/p.png)')).toBe('```py\nprint(1)\n```\n\n---\n\n![p](http://i/p.png)');
    expect(render('````\na ``` b\n````')).toBe('```\na `\u200b`` b\n```'); // a fence inside code cannot close the block
    expect(render('run ``a`b`` now')).toBe('run ``a`b`` now'); // a backtick inside inline code keeps its double fence
  });

  it('keeps placeholders that look like tags (/cron run <id>), drops real tags', () => {
    expect(render('Usage: /cron run <id>')).toBe('Usage: /cron run <id>');
    expect(render('<b>bold</b> then /approve <code>')).toBe('bold then /approve <code>');
  });

  it('keeps single newlines (a line break on WeCom) and bare URLs', () => {
    expect(render('one\ntwo')).toBe('one\ntwo');
    expect(render('a  \nb')).toBe('a\nb');
    expect(render('see https://x.y/z')).toBe('see https://x.y/z');
    expect(render('mail me@x.y or <https://x.y>')).toBe('mail me@x.y or https://x.y');
  });

  it('re-emits tables as normalised pipe tables with escaped pipes', () => {
    expect(render('|a|b|\n|:-|:-:|\n|1\\|2|**3**|')).toBe('| a | b |\n| :--- | :---: |\n| 1\\|2 | **3** |');
  });

  it('reduces strikethrough and HTML to text, task boxes to characters, drops control characters', () => {
    expect(render('~~old~~ <i>x</i>')).toBe('old x');
    expect(render('- [ ] a\n- [x] b')).toBe('- ☐ a\n- ☑ b');
    expect(render('x\u0001y\r\nz')).toBe('xy\nz');
  });
});

describe('WeCom callbacks', () => {
  const frame = (body: Record<string, unknown>) => ({
    headers: { req_id: 'req-1' },
    body: { msgid: 'm1', from: { userid: 'zhangsan' }, create_time: 1_700_000_000, ...body },
  });

  it('a DM has no chatid: keyed by the sender userid, always mentioned, req_id kept for the reply', () => {
    expect(normalizeCallback('channel_c', frame({ chattype: 'single', msgtype: 'text', text: { content: ' hello ' } }))).toEqual({
      channel: 'channel_c',
      messageId: 'm1',
      chatId: 'zhangsan',
      chatType: 'direct',
      senderId: 'zhangsan',
      text: 'hello',
      mentioned: true,
      ts: 1_700_000_000_000,
      replyTarget: { chatId: 'zhangsan', chatType: 'direct', messageId: 'm1', extra: { reqId: 'req-1' } },
    });
  });

  it('a group message is keyed by chatid with the leading @BotName removed', () => {
    const m = normalizeCallback('channel_c', frame({ chattype: 'group', chatid: 'wrk1', msgtype: 'text', text: { content: '@Bot hi @lisi' } }));
    expect(m).toMatchObject({ chatId: 'wrk1', chatType: 'group', text: 'hi @lisi', mentioned: true });
  });

  it('reads voice transcripts and the text of mixed messages; pictures and files by URL and key; drops videos', () => {
    expect(normalizeCallback('channel_c', frame({ chattype: 'single', msgtype: 'voice', voice: { content: '语音' } }))?.text).toBe('语音');
    expect(
      normalizeCallback(
        'channel_c',
        frame({
          chattype: 'single',
          msgtype: 'mixed',
          mixed: { msg_item: [{ msgtype: 'text', text: { content: 'a' } }, { msgtype: 'image' }, { msgtype: 'text', text: { content: 'b' } }] },
        }),
      )?.text,
    ).toBe('a\nb');
    expect(normalizeCallback('channel_c', frame({ chattype: 'single', msgtype: 'image', image: { url: 'u', aeskey: 'k' } }))).toMatchObject({
      text: '',
      images: [{ ref: JSON.stringify({ url: 'u', aeskey: 'k' }) }],
    });
    const file = normalizeCallback('channel_c', frame({ chattype: 'single', msgtype: 'file', file: { url: 'f', aeskey: 'k2' } }));
    expect(file?.files).toEqual([{ ref: JSON.stringify({ url: 'f', aeskey: 'k2' }) }]);
    expect(parseMediaRef(file?.files?.[0]?.ref ?? '')).toEqual({ url: 'f', aeskey: 'k2' });
    expect(normalizeCallback('channel_c', frame({ chattype: 'single', msgtype: 'video', video: { url: 'v' } }))).toBeUndefined();
  });

  it('reads a press on an approval card from the documented event and from the SDK-typed flat one; ignores other keys', () => {
    const event = (e: Record<string, unknown>, chat: Record<string, unknown> = { chattype: 'single' }) => ({
      headers: { req_id: 'r1' },
      body: { msgid: 'e1', from: { userid: 'alice' }, msgtype: 'event', ...chat, event: { eventtype: 'template_card_event', ...e } },
    });
    const nested = normalizeCardEvent('channel_c', event({ template_card_event: { event_key: '/allow k7m2x', task_id: 't1' } }));
    expect(nested).toMatchObject({
      taskId: 't1',
      message: { text: '/allow k7m2x', senderId: 'alice', chatId: 'alice', chatType: 'direct', replyTarget: { extra: {} } },
    });
    const flat = normalizeCardEvent('channel_c', event({ event_key: '/deny k7m2x', task_id: 't2' }, { chattype: 'group', chatid: 'wrg' }));
    expect(flat).toMatchObject({ taskId: 't2', message: { text: '/deny k7m2x', chatId: 'wrg', chatType: 'group' } });
    expect(normalizeCardEvent('channel_c', event({ template_card_event: { event_key: 'something_else', task_id: 't3' } }))).toBeUndefined();
  });

  it('strips only one leading mention', () => {
    expect(stripLeadingMention('@Bot  question')).toBe('question');
    expect(stripLeadingMention('@Bot')).toBe('');
    expect(stripLeadingMention('mail a@b.c')).toBe('mail a@b.c');
    expect(stripLeadingMention('@Bot @Alice look')).toBe('@Alice look');
  });

  it('reads back only a string req_id', () => {
    expect(readReplyExtra({ reqId: 'r' })).toEqual({ reqId: 'r' });
    expect(readReplyExtra({ reqId: 1 })).toEqual({});
  });

  it("turns the SDK's raw rejection frames and Errors into ChannelErrors", () => {
    const raw = (errcode: number, errmsg: string) => ({ headers: { req_id: 'r' }, errcode, errmsg });
    expect(toChannelError('channel_c', raw(846605, 'invalid req_id'), 'reply')).toMatchObject({
      kind: 'not_found',
      message: 'channel_c: reply: errcode 846605 invalid req_id',
    });
    expect(toChannelError('channel_c', raw(40058, 'content over 20480 bytes'), 'reply').kind).toBe('too_long');
    expect(toChannelError('channel_c', raw(45009, 'api freq out of limit'), 'send').kind).toBe('rate_limited');
    expect(toChannelError('channel_c', new Error('Reply ack timeout (5000ms) for reqId: r'), 'reply').kind).toBe('network');
    expect(toChannelError('channel_c', new Error('WebSocket not connected, unable to send data'), 'send').kind).toBe('network');
    const e = toChannelError('channel_c', raw(1, 'x'), 'send');
    expect(e).toBeInstanceOf(ChannelError);
    expect(e.kind).toBe('other');
  });
});
