import type { Message } from 'grammy/types';
import { describe, expect, it } from 'vitest';
import { normaliseSlackMessage, slackTsToMs, stripSlackMention } from '../../../src/channels/slack/inbound.js';
import { nativeMessageId, normaliseTelegramMessage, stripTelegramMention } from '../../../src/channels/telegram/inbound.js';

const me = { botUserId: 'UBOT', botId: 'BBOT' };

describe('Slack inbound normalisation', () => {
  const base = { type: 'message', channel: 'C1', user: 'U1', ts: '1700000000.123456' };

  it('converts ts to ms and strips only the bot mention token', () => {
    expect(slackTsToMs('1700000000.123456')).toBe(1_700_000_000_123);
    expect(stripSlackMention('<@UBOT> hi <@U2>', 'UBOT')).toEqual({ text: 'hi <@U2>', mentioned: true });
    expect(stripSlackMention('hi <@UBOT|bot>, and <@UBOTX>', 'UBOT')).toEqual({ text: 'hi , and <@UBOTX>', mentioned: true });
    expect(stripSlackMention('mail a@b.com', 'UBOT')).toEqual({ text: 'mail a@b.com', mentioned: false });
  });

  it('drops edits, deletions, joins and its own posts; keeps them in history and flags bots', () => {
    for (const subtype of ['message_changed', 'message_deleted', 'channel_join']) {
      expect(normaliseSlackMessage('channel_d', { ...base, subtype, text: 'x' }, { channel: 'C1', me })).toBeUndefined();
    }
    const own = { ...base, user: 'UBOT', bot_id: 'BBOT', text: 'mine' };
    expect(normaliseSlackMessage('channel_d', own, { channel: 'C1', me })).toBeUndefined();
    expect(normaliseSlackMessage('channel_d', own, { channel: 'C1', me, includeOwn: true })).toMatchObject({ fromBot: true, text: 'mine' });
    const other = { ...base, user: undefined, subtype: 'bot_message', bot_id: 'B2', username: 'ci', text: 'build ok' };
    expect(normaliseSlackMessage('channel_d', other, { channel: 'C1', me })).toMatchObject({
      fromBot: true,
      senderId: 'B2',
      senderName: 'ci',
      mentioned: false,
    });
  });

  it('app_mention counts as a mention; images and other files become refs', () => {
    const m = normaliseSlackMessage(
      'channel_d',
      {
        ...base,
        type: 'app_mention',
        subtype: 'file_share',
        text: '',
        files: [
          { name: 'a.png', mimetype: 'image/png', url_private: 'https://files.slack.com/a', url_private_download: 'https://files.slack.com/a/download' },
          { name: 'r.pdf', mimetype: 'application/pdf', size: 1234, url_private: 'https://files.slack.com/r' },
        ],
      },
      { channel: 'C1', me, appMention: true },
    );
    expect(m).toMatchObject({
      mentioned: true,
      chatType: 'group',
      text: '',
      images: [{ ref: 'https://files.slack.com/a/download', mimeType: 'image/png', fileName: 'a.png' }],
      files: [{ ref: 'https://files.slack.com/r', fileName: 'r.pdf', mimeType: 'application/pdf', size: 1234 }],
      replyTarget: { threadId: '1700000000.123456' },
    });
  });

  it('DMs reply flat unless the user wrote in a thread', () => {
    const dm = { ...base, channel: 'D1', channel_type: 'im', text: 'hi' };
    expect(normaliseSlackMessage('channel_d', dm, { channel: 'D1', me })?.replyTarget).toEqual({
      chatId: 'D1',
      chatType: 'direct',
      messageId: 'D1:1700000000.123456',
    });
    const threaded = normaliseSlackMessage('channel_d', { ...dm, thread_ts: '1699.000001' }, { channel: 'D1', me });
    expect(threaded).toMatchObject({ threadId: '1699.000001', replyTarget: { threadId: '1699.000001' } });
  });
});

describe('Telegram inbound normalisation', () => {
  const tgMe = { id: 42, username: 'Service_Bot' };
  const group = { id: -1001, type: 'supergroup', title: 'G' } as const;
  const from = { id: 7, is_bot: false, first_name: 'Ann', last_name: 'Lee', username: 'ann' };
  const msg = (m: Partial<Message>): Message => ({ message_id: 5, date: 1_700_000_000, chat: group, from, ...m }) as Message;

  it('strips the bot mention entity (case-insensitive) and text_mention, keeps other mentions', () => {
    expect(
      stripTelegramMention(
        '@service_bot hi @ann',
        [
          { type: 'mention', offset: 0, length: 12 },
          { type: 'mention', offset: 16, length: 4 },
        ],
        tgMe,
      ),
    ).toEqual({ text: 'hi @ann', mentioned: true });
    expect(
      stripTelegramMention(
        'hey Service Bot, go',
        [{ type: 'text_mention', offset: 4, length: 11, user: { id: 42, is_bot: true, first_name: 'Service' } }],
        tgMe,
      ),
    ).toEqual({ text: 'hey , go', mentioned: true });
    expect(stripTelegramMention('/help@service_bot now', [{ type: 'bot_command', offset: 0, length: 17 }], tgMe)).toEqual({
      text: '/help@service_bot now',
      mentioned: true,
    });
    expect(stripTelegramMention('😀 @service_bot x', [{ type: 'mention', offset: 3, length: 12 }], tgMe)).toEqual({ text: '😀 x', mentioned: true });
  });

  it('a reply to the bot counts as a mention; a group message without one does not', () => {
    const plain = normaliseTelegramMessage('channel_e', msg({ text: 'hello' }), tgMe);
    expect(plain).toMatchObject({ chatId: '-1001', chatType: 'group', mentioned: false, senderName: 'Ann Lee', messageId: '-1001:5', ts: 1_700_000_000_000 });
    const reply = normaliseTelegramMessage(
      'channel_e',
      msg({ text: 'and?', reply_to_message: msg({ from: { id: 42, is_bot: true, first_name: 'S' } }) as never }),
      tgMe,
    );
    expect(reply?.mentioned).toBe(true);
  });

  it('photos use the largest size; image documents keep their type; forum topics become threads', () => {
    const photo = normaliseTelegramMessage(
      'channel_e',
      msg({
        caption: 'look',
        is_topic_message: true,
        message_thread_id: 9,
        photo: [
          { file_id: 'small', file_unique_id: 's', width: 90, height: 90 },
          { file_id: 'big', file_unique_id: 'b', width: 800, height: 600 },
        ],
      }),
      tgMe,
    );
    expect(photo).toMatchObject({ text: 'look', images: [{ ref: 'big' }], threadId: '9', replyTarget: { threadId: '9' } });
    const doc = normaliseTelegramMessage(
      'channel_e',
      msg({ document: { file_id: 'd', file_unique_id: 'u', mime_type: 'image/png', file_name: 'x.png' } }),
      tgMe,
    );
    expect(doc?.images).toEqual([{ ref: 'd', mimeType: 'image/png', fileName: 'x.png' }]);
    // Other documents, recordings and clips are files (downloaded into the workspace), with their size when known.
    const pdf = normaliseTelegramMessage(
      'channel_e',
      msg({ document: { file_id: 'p', file_unique_id: 'u', mime_type: 'application/pdf', file_name: 'r.pdf', file_size: 900 } }),
      tgMe,
    );
    expect(pdf).toMatchObject({ text: '', files: [{ ref: 'p', fileName: 'r.pdf', mimeType: 'application/pdf', size: 900 }] });
    expect(pdf?.images).toBeUndefined();
    const voice = normaliseTelegramMessage('channel_e', msg({ voice: { file_id: 'v', file_unique_id: 'u', duration: 3 } }), tgMe);
    expect(voice?.files).toEqual([{ ref: 'v', fileName: 'voice.ogg', kind: 'voice' }]);
    expect(normaliseTelegramMessage('channel_e', msg({ new_chat_members: [from] } as Partial<Message>), tgMe)).toBeUndefined();
    expect(nativeMessageId('-1001:5')).toBe(5);
    expect(nativeMessageId(undefined)).toBeUndefined();
  });
});
