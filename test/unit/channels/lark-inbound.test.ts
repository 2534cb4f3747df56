import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/core/logger.js';
import { fromHistoryItem, fromReceiveEvent, readContent, type LarkReceiveEvent } from '../../../src/channels/lark/inbound.js';
import { createLarkSdkLogger, redactLarkSecrets } from '../../../src/channels/lark/logger.js';
import { receiveIdType } from '../../../src/channels/lark/rest.js';

const BOT = 'ou_bot';
const self = { channel: 'channel_a', botOpenId: BOT };
const mention = (key: string, openId: string, name: string) => ({ key, id: { open_id: openId }, name });

function event(over: Partial<LarkReceiveEvent['message']> = {}, senderType = 'user'): LarkReceiveEvent {
  return {
    sender: { sender_id: { open_id: 'ou_bob' }, sender_type: senderType },
    message: {
      message_id: 'om_1',
      create_time: '1700000000000',
      chat_id: 'oc_g',
      chat_type: 'group',
      message_type: 'text',
      content: JSON.stringify({ text: 'hi' }),
      ...over,
    },
  };
}

describe('readContent', () => {
  it('text: drops the bot placeholder, names other people, keeps e-mails; @_user_1 never matches inside @_user_10', () => {
    const mentions = [
      mention('@_user_1', BOT, 'Bot'),
      ...Array.from({ length: 8 }, (_, i) => mention(`@_user_${i + 2}`, `ou_${i + 2}`, `U${i + 2}`)),
      mention('@_user_10', 'ou_10', 'Ten'),
    ];
    const text = JSON.stringify({ text: '@_user_1 ask @_user_10 and @_user_2, mail a@b.com' });
    expect(readContent('text', text, mentions, BOT)).toEqual({ text: 'ask @Ten and @U2, mail a@b.com', imageKeys: [] });
  });

  it('post (bare or locale-wrapped): text, links, code, images, and at tags by placeholder', () => {
    const body = {
      title: 'T',
      content: [
        [
          { tag: 'at', user_id: '@_user_1', user_name: 'Bot' },
          { tag: 'text', text: ' see ' },
          { tag: 'a', text: 'docs', href: 'https://x.dev' },
          { tag: 'at', user_id: '@_user_2' },
        ],
        [{ tag: 'img', image_key: 'img_1' }],
        [{ tag: 'code_block', language: 'JS', text: 'x()' }],
      ],
    };
    const mentions = [mention('@_user_1', BOT, 'Bot'), mention('@_user_2', 'ou_c', 'Carol')];
    const expected = { text: 'T\nsee [docs](https://x.dev)@Carol\n```js\nx()\n```', imageKeys: ['img_1'] };
    expect(readContent('post', JSON.stringify(body), mentions, BOT)).toEqual(expected);
    expect(readContent('post', JSON.stringify({ en_us: body }), mentions, BOT)).toEqual(expected);
  });

  it('image, file and unknown types', () => {
    expect(readContent('image', '{"image_key":"img_2"}', [], BOT)).toEqual({ text: '', imageKeys: ['img_2'] });
    expect(readContent('file', '{"file_key":"f","file_name":"a.pdf"}', [], BOT)).toEqual({ text: '', imageKeys: [], files: [{ key: 'f', name: 'a.pdf' }] });
    expect(readContent('audio', '{"file_key":"v","duration":2000}', [], BOT).files).toEqual([{ key: 'v', name: 'audio.opus', voice: true }]);
    expect(readContent('file', '{"file_name":"a.pdf"}', [], BOT).text).toBe('[file: a.pdf]'); // no key: nothing to download
    expect(readContent('sticker', '{}', [], BOT).text).toBe('[sticker]');
    expect(readContent('text', 'not json', [], BOT).text).toBe('');
  });
});

describe('fromReceiveEvent / fromHistoryItem', () => {
  it("a group event: mentioned only by the bot's open_id; thread id kept; image refs carry the message id", () => {
    const msg = fromReceiveEvent(
      event({ thread_id: 'omt_1', message_type: 'image', content: '{"image_key":"img_9"}', mentions: [mention('@_user_1', 'ou_x', 'X')] }),
      self,
    );
    expect(msg).toMatchObject({
      chatType: 'group',
      threadId: 'omt_1',
      mentioned: false,
      text: '',
      images: [{ ref: 'om_1/img_9' }],
      replyTarget: { threadId: 'omt_1', messageId: 'om_1' },
    });
    expect(fromReceiveEvent(event({ mentions: [mention('@_user_1', BOT, 'Bot')], content: '{"text":"@_user_1 yo"}' }), self)).toMatchObject({
      mentioned: true,
      text: 'yo',
    });
  });

  it('p2p is direct and always mentioned; an app sender is fromBot; empty and system messages are skipped', () => {
    expect(fromReceiveEvent(event({ chat_type: 'p2p' }), self)).toMatchObject({ chatType: 'direct', mentioned: true, senderId: 'ou_bob', ts: 1700000000000 });
    expect(fromReceiveEvent(event({}, 'app'), self)?.fromBot).toBe(true);
    expect(fromReceiveEvent(event({ content: '{"text":"  "}' }), self)).toBeUndefined();
    expect(fromReceiveEvent(event({ message_type: 'system', content: '{}' }), self)).toBeUndefined();
  });

  it('history items: string mention ids, app senders flagged, recalled messages skipped', () => {
    const item = {
      message_id: 'om_h',
      chat_id: 'oc_g',
      msg_type: 'text',
      create_time: '1700000000000',
      sender: { id: 'cli_x', sender_type: 'app' },
      body: { content: '{"text":"@_user_1 done"}' },
      mentions: [{ key: '@_user_1', id: BOT, id_type: 'open_id', name: 'Bot' }],
    };
    expect(fromHistoryItem(item, 'group', self)).toMatchObject({ text: 'done', mentioned: true, fromBot: true, senderId: 'cli_x' });
    expect(fromHistoryItem({ ...item, deleted: true }, 'group', self)).toBeUndefined();
  });
});

describe('receiveIdType', () => {
  it('picks the id kind from the prefix', () => {
    expect(['oc_1', 'ou_1', 'on_1', 'a@b.com', '5f3a'].map(receiveIdType)).toEqual(['chat_id', 'open_id', 'union_id', 'email', 'user_id']);
  });
});

describe('the SDK logger', () => {
  it('masks bearer tokens, tenant tokens and secrets, and keeps only method, URL and body of an axios error', () => {
    const lines: string[] = [];
    const sdk = createLarkSdkLogger(() => createLogger({ level: 'debug', write: (l) => lines.push(l) }));
    const err = Object.assign(new Error('Request failed with status code 400'), {
      config: {
        method: 'post',
        url: 'https://open.feishu.cn/open-apis/im/v1/messages?x=1',
        headers: { Authorization: 'Bearer t-g1044abcdefghijk' },
        data: '{"app_secret":"s3cr3t-value"}',
      },
      response: { status: 400, data: { code: 230001, msg: 'bad' } },
    });
    sdk.error([err, { headers: { Authorization: 'Bearer t-zzzzzzzzzzzz' }, app_secret: 'other-secret' }]);
    sdk.info(['dropped']);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('[POST https://open.feishu.cn/open-apis/im/v1/messages] HTTP 400 {"code":230001,"msg":"bad"}');
    expect(lines[0]).not.toMatch(/t-g1044|t-zzzz|s3cr3t|other-secret/);
    expect(redactLarkSecrets('Authorization: Bearer abc.def tenant_access_token=t-0123456789ab "app_secret":"x"')).toBe(
      'Authorization: *** *** tenant_access_token=*** "app_secret":"***"',
    );
  });
});
