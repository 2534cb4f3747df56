import { describe, expect, it } from 'vitest';
import { dingtalkTitle, renderDingtalkMarkdown as render } from '../../../src/channels/dingtalk/format.js';
import { normalizeRobotMessage, parseChatId, readDingtalkReplyExtra as readReplyExtra } from '../../../src/channels/dingtalk/inbound.js';

describe('DingTalk Markdown rendering', () => {
  it('keeps what DingTalk renders: headings, bold, italic, links, images, lists, quotes, code', () => {
    expect(render('# Title *x*\n\n**b** _i_ [l](http://a.b "t") ![p](http://i/p.png)')).toBe('# Title *x*\n\n**b** *i* [l](http://a.b) ![p](http://i/p.png)');
    expect(render('- a\n- b\n  - c\n\n1. x\n2. y')).toBe('- a\n- b\n  - c\n\n1. x\n2. y');
    expect(render('> one\n>\n> two')).toBe('> one\n>\n> two');
    expect(render('```ts\nconst a = 1 < 2;\n```')).toBe('```ts\nconst a = 1 < 2;\n```');
    expect(render('use `npm ci`')).toBe('use `npm ci`');
    expect(render('```\na\n\n\nb\n```')).toBe('```\na\n\n\nb\n```'); // code keeps its blank lines
    expect(render('````\na ``` b\n````')).toBe('```\na `\u200b`` b\n```'); // a fence inside code cannot close the block
    expect(render('run ``a`b`` now')).toBe('run ``a`b`` now'); // a backtick inside inline code keeps its double fence
  });

  it('writes line breaks inside a paragraph as "  \\n" (DingTalk merges bare newlines on some clients)', () => {
    expect(render('line one\nline two')).toBe('line one  \nline two');
    expect(render('a  \nb')).toBe('a  \nb');
  });

  it('turns a table into one list item per row, labelled by column', () => {
    expect(render('| Name | Qty |\n|---|--:|\n| apple | **2** |\n| pear | 3 |')).toBe('- Name: apple; Qty: **2**\n- Name: pear; Qty: 3');
  });

  it('drops what DingTalk shows literally: strikethrough marks, HTML tags, task boxes as characters', () => {
    expect(render('~~old~~ new <b>bold</b>')).toBe('old new bold');
    expect(render('<div>block</div>')).toBe('block');
    expect(render('- [x] done\n- [ ] todo')).toBe('- ☑ done\n- ☐ todo');
  });

  it('keeps placeholders that look like tags but are not HTML: usage lines read as written', () => {
    expect(render('Usage: /cron run <id>')).toBe('Usage: /cron run <id>');
    expect(render('Approve one with /approve <code>.')).toBe('Approve one with /approve <code>.');
    expect(render('answer one with its id (/allow <id>, /deny <id>)')).toBe('answer one with its id (/allow <id>, /deny <id>)');
    // Real tags still go: closed ones, void ones, ones with attributes.
    expect(render('a <code>x</code> b<br>c <span class="k">d</span>')).toBe('a x bc d');
  });

  it('makes bare URLs explicit links, keeps escapes, drops control characters, trims', () => {
    expect(render('see https://x.y/z')).toBe('see [https://x.y/z](https://x.y/z)');
    expect(render('mail me@x.y')).toBe('mail [me@x.y](mailto:me@x.y)');
    expect(render('a\\*b\\_c')).toBe('a\\*b\\_c');
    expect(render('\n\nbe\u0007ll\u0000\n\n\n')).toBe('bell');
    expect(render('中文 **加粗**')).toBe('中文 **加粗**');
  });

  it('titles a message with its first line, without Markdown, at most 64 characters', () => {
    expect(dingtalkTitle(render('## Build **green**\n\ndetails'))).toBe('Build green');
    expect(dingtalkTitle('> [see](http://x) this')).toBe('see this');
    expect(dingtalkTitle('- item')).toBe('item');
    expect(dingtalkTitle('```\ncode')).toBe('code');
    expect([...dingtalkTitle('长'.repeat(100))]).toHaveLength(64);
    expect(dingtalkTitle('')).toBe('Reply');
  });
});

describe('DingTalk robot callbacks and chat ids', () => {
  const base = {
    msgId: 'm1',
    msgtype: 'text',
    senderStaffId: 'staff-1',
    senderId: '$:LWCP_v1:$x',
    senderNick: 'Alice',
    chatbotUserId: '$:bot',
    robotCode: 'ding-app',
    createAt: 1_700_000_000_000,
    sessionWebhook: 'https://oapi.example/robot/sendBySession?session=s',
    sessionWebhookExpiredTime: 1_700_005_400_000,
  };

  it('a DM is keyed by the sender staffId and is always mentioned', () => {
    const m = normalizeRobotMessage('channel_b', { ...base, conversationType: '1', conversationId: 'cidDm', text: { content: ' hi ' } });
    expect(m).toEqual({
      channel: 'channel_b',
      messageId: 'm1',
      chatId: 'staff-1',
      chatType: 'direct',
      senderId: 'staff-1',
      senderName: 'Alice',
      text: 'hi',
      mentioned: true,
      ts: 1_700_000_000_000,
      replyTarget: {
        chatId: 'staff-1',
        chatType: 'direct',
        messageId: 'm1',
        extra: {
          sessionWebhook: base.sessionWebhook,
          sessionWebhookExpiredTime: base.sessionWebhookExpiredTime,
          robotCode: 'ding-app',
        },
      },
    });
  });

  it('a group message is keyed by openConversationId; mentioned from isInAtList or atUsers', () => {
    const group = { ...base, conversationType: '2', conversationId: 'cidG==', text: { content: ' status? @Bob' } };
    expect(normalizeRobotMessage('channel_b', { ...group, isInAtList: true })).toMatchObject({
      chatId: 'cidG==',
      chatType: 'group',
      text: 'status? @Bob',
      mentioned: true,
    });
    expect(normalizeRobotMessage('channel_b', { ...group, atUsers: [{ dingtalkId: '$:bot' }] })?.mentioned).toBe(true);
    expect(normalizeRobotMessage('channel_b', group)?.mentioned).toBe(false);
  });

  it('reads rich text and voice; pictures and files by their downloadCode; drops what has none', () => {
    expect(normalizeRobotMessage('channel_b', { ...base, msgtype: 'richText', content: { richText: [{ text: 'a' }, {}, { text: 'b' }] } })?.text).toBe('ab');
    expect(normalizeRobotMessage('channel_b', { ...base, msgtype: 'audio', content: { recognition: '语音' } })?.text).toBe('语音');
    // A voice message with its recording: the recording is a voice file carrying DingTalk's transcript.
    expect(
      normalizeRobotMessage('channel_b', { ...base, msgtype: 'audio', content: { downloadCode: 'v1', recognition: '语音', duration: 3000 } }),
    ).toMatchObject({
      text: '',
      files: [{ ref: 'v1', kind: 'voice', transcript: '语音' }],
    });
    expect(normalizeRobotMessage('channel_b', { ...base, msgtype: 'picture' })).toBeUndefined();
    expect(normalizeRobotMessage('channel_b', { ...base, msgtype: 'picture', content: { downloadCode: 'd1', pictureDownloadCode: 'p1' } })).toMatchObject({
      text: '',
      images: [{ ref: 'd1' }],
    });
    const rich = normalizeRobotMessage('channel_b', {
      ...base,
      msgtype: 'richText',
      content: { richText: [{ text: 'look' }, { type: 'picture', pictureDownloadCode: 'p2' }] },
    });
    expect(rich).toMatchObject({ text: 'look', images: [{ ref: 'p2' }] });
    expect(normalizeRobotMessage('channel_b', { ...base, msgtype: 'file', content: { downloadCode: 'f1', fileName: 'a.pdf' } })).toMatchObject({
      text: '',
      files: [{ ref: 'f1', fileName: 'a.pdf' }],
    });
    expect(normalizeRobotMessage('channel_b', { ...base, msgtype: 'video', content: { downloadCode: 'v1' } })).toBeUndefined();
  });

  it('reads back only well-typed reply data', () => {
    expect(readReplyExtra({ sessionWebhook: 'u', sessionWebhookExpiredTime: 5, robotCode: 'r', other: 1 })).toEqual({
      sessionWebhook: 'u',
      sessionWebhookExpiredTime: 5,
      robotCode: 'r',
    });
    expect(readReplyExtra({ sessionWebhook: 5 })).toEqual({});
    expect(readReplyExtra(undefined)).toEqual({});
  });

  it('tells groups (cid…) from users, with explicit prefixes for the exceptions', () => {
    expect(parseChatId('cidAbc==')).toEqual({ group: true, id: 'cidAbc==' });
    expect(parseChatId('manager4711')).toEqual({ group: false, id: 'manager4711' });
    expect(parseChatId('user:cidlike')).toEqual({ group: false, id: 'cidlike' });
    expect(parseChatId('group:XYZ')).toEqual({ group: true, id: 'XYZ' });
  });
});
