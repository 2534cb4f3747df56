/**
 * Self-test of the fake Telegram Bot API (channel_e): the real grammy Bot (node-fetch transport,
 * simple long polling) pointed at the fake, driven the way an adapter would drive it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Bot, GrammyError, InputFile } from 'grammy';
import { describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import { cleanupAfterEach, failOnLeaksAfterAll } from '../../helpers/resources.js';
import { HANG_MS, until } from '../../helpers/wait.js';

type Fake = Awaited<ReturnType<typeof startFakeTelegram>>;

const defer = cleanupAfterEach();
failOnLeaksAfterAll();

async function setup() {
  const fake = await startFakeTelegram();
  defer(() => fake.close());
  const { botToken, apiRoot } = fake.channelConfig;
  const bot = new Bot(botToken, { client: { apiRoot } });
  return { fake, bot };
}

/** Start long polling the way an adapter must: catch middleware errors and the start() promise (401/409 reject it). */
async function run(fake: Fake, bot: Bot) {
  const errors: unknown[] = [];
  bot.catch((e) => void errors.push(e.error));
  const polling = bot.start().catch((e: unknown) => void errors.push(e));
  defer(async () => {
    if (bot.isRunning()) await bot.stop(); // aborts the held poll, then one final getUpdates({offset, limit: 1})
    await polling;
  });
  await fake.waitForConnection();
  return { errors, polling };
}

describe('fake Telegram (channel_e) against grammy 1.46.0 long polling', () => {
  it('connects, receives a DM, replies, and the update is confirmed by offset', async () => {
    const { fake, bot } = await setup();
    const seen: Array<{ chat: unknown; text?: string; id: number }> = [];
    bot.on('message:text', async (ctx) => {
      seen.push({ chat: ctx.chat, text: ctx.msg.text, id: ctx.msg.message_id });
      await ctx.reply(`echo: ${ctx.msg.text}`, { reply_parameters: { message_id: ctx.msg.message_id } });
    });
    await run(fake, bot);
    expect(fake.calls.slice(0, 3).map((c) => c.method)).toEqual(['getme', 'deletewebhook', 'getupdates']);
    expect(fake.connected()).toBe(true);

    const { messageId } = await fake.deliver({ chatType: 'direct', userId: '1001', userName: 'alice', text: 'hi there' });
    const out = await fake.waitForOutbound((o) => o.replyTo === messageId);
    expect(out).toMatchObject({ kind: 'reply', chatId: '1001', text: 'echo: hi there', format: 'plain' });
    expect(seen[0]).toMatchObject({ chat: { id: 1001, type: 'private', username: 'alice' }, text: 'hi there', id: Number(messageId) });
    await fake.waitForAck(messageId);
    expect(fake.pendingUpdates()).toBe(0);
  });

  it('delivers a group mention as a mention entity, with other mentions as their own entities', async () => {
    const { fake, bot } = await setup();
    const seen: Array<{ text: string; mentions: string[]; type: string; me: string }> = [];
    bot.on('message', (ctx) => {
      seen.push({ text: ctx.msg.text ?? '', mentions: ctx.entities('mention').map((e) => e.text), type: ctx.chat.type, me: ctx.me.username });
    });
    await run(fake, bot);
    await fake.deliver({
      chatType: 'group',
      chatId: '-1001234567890',
      userId: '1002',
      text: 'what is up',
      mentionBot: true,
      mentionUsers: [{ userId: '1003', userName: 'carol' }],
    });
    await until(() => seen.length === 1);
    expect(seen[0]).toEqual({ text: '@service_bot @carol what is up', mentions: ['@service_bot', '@carol'], type: 'supergroup', me: 'service_bot' });
  });

  it('sends proactively, edits, enforces MarkdownV2, "not modified" and the 4096 limit', async () => {
    const { fake, bot } = await setup();
    await bot.init();
    const sent = await bot.api.sendMessage(1001, 'hello *world* v1\\.2', { parse_mode: 'MarkdownV2' });
    expect(sent.text).toBe('hello world v1.2');
    expect(sent.entities).toEqual([{ type: 'bold', offset: 6, length: 5 }]);
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'send', chatId: '1001', text: 'hello world v1.2', format: 'MarkdownV2' });

    await expect(bot.api.sendMessage(1001, 'version 1.2', { parse_mode: 'MarkdownV2' })).rejects.toMatchObject({
      error_code: 400,
      description: "Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\\'",
    });
    await expect(bot.api.sendMessage(1001, 'open *bold', { parse_mode: 'MarkdownV2' })).rejects.toThrow(
      /Can't find end of the entity starting at byte offset 5/,
    );
    const html = await bot.api.sendMessage(1001, '<b>a</b> &lt;3 <a href="https://x.y">link</a>', { parse_mode: 'HTML' });
    expect(html.text).toBe('a <3 link');

    const edited = await bot.api.editMessageText(1001, sent.message_id, 'changed');
    expect(edited).toMatchObject({ text: 'changed' });
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'edit', messageId: String(sent.message_id), text: 'changed' });
    const notModified = await bot.api.editMessageText(1001, sent.message_id, 'changed').catch((e: unknown) => e);
    expect(notModified).toBeInstanceOf(GrammyError);
    expect((notModified as GrammyError).description).toMatch(/^Bad Request: message is not modified/);

    await bot.api.sendMessage(1001, 'z'.repeat(4096));
    await expect(bot.api.sendMessage(1001, 'z'.repeat(4097))).rejects.toMatchObject({ error_code: 400, description: 'Bad Request: message is too long' });
    expect(fake.rejections.at(-1)).toMatchObject({ method: 'sendmessage', reason: 'Bad Request: message is too long' });

    await bot.api.sendChatAction(1001, 'typing');
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'typing', chatId: '1001', format: 'typing' });
    await bot.api.deleteMessage(1001, sent.message_id);
    expect(fake.deleted).toEqual([`1001:${sent.message_id}`]);

    fake.failNext('sendMessage', { error_code: 429, description: 'Too Many Requests: retry after 7', retry_after: 7 });
    await expect(bot.api.sendMessage(1001, 'x')).rejects.toMatchObject({ error_code: 429, parameters: { retry_after: 7 } });
  });

  it('accepts multipart uploads, form bodies and query parameters', async () => {
    const { fake, bot } = await setup();
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
    const photo = await bot.api.sendPhoto(1001, new InputFile(jpeg, 'cat.jpg'), { caption: '*cat*', parse_mode: 'MarkdownV2' });
    expect(photo.caption).toBe('cat');
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'send', chatId: '1001', text: 'cat', format: 'MarkdownV2' });
    const file = await bot.api.getFile(photo.photo.at(-1)?.file_id ?? '');
    const { apiRoot, botToken } = fake.channelConfig;
    const dl = await fetch(`${apiRoot}/file/bot${botToken}/${file.file_path}`);
    expect(Buffer.from(await dl.arrayBuffer())).toEqual(jpeg);

    const form = await fetch(`${apiRoot}/bot${botToken}/sendMessage`, {
      method: 'POST',
      body: new URLSearchParams({
        chat_id: '-1001',
        text: 'form body',
        reply_parameters: JSON.stringify({ message_id: photo.message_id, allow_sending_without_reply: true }),
      }),
    });
    expect(await form.json()).toMatchObject({ ok: true, result: { chat: { id: -1001, type: 'group' }, text: 'form body' } });
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'reply', chatId: '-1001', replyTo: String(photo.message_id) });
    const query = await fetch(`${apiRoot}/bot${botToken}/GETME?unused=1`);
    expect(await query.json()).toMatchObject({ ok: true, result: { username: 'service_bot', is_bot: true } });
    const unknown = await fetch(`${apiRoot}/bot${botToken}/noSuchMethod`);
    expect(unknown.status).toBe(404);
    await unknown.text();
  });

  it('redelivers the same message under a new update_id', async () => {
    const { fake, bot } = await setup();
    const seen: Array<{ update: number; id: number }> = [];
    bot.on('message', (ctx) => void seen.push({ update: ctx.update.update_id, id: ctx.msg.message_id }));
    await run(fake, bot);
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: '1001', text: 'once' });
    await fake.redeliver(messageId);
    await until(() => seen.length === 2);
    expect(seen[1]?.id).toBe(seen[0]?.id);
    expect(seen[1]?.update).toBeGreaterThan(seen[0]?.update ?? Infinity);
  });

  it('delivers photos as PhotoSize arrays downloadable through getFile', async () => {
    const { fake, bot } = await setup();
    const got: Buffer[] = [];
    const captions: string[] = [];
    bot.on('message:photo', async (ctx) => {
      captions.push(ctx.msg.caption ?? '');
      const file = await ctx.api.getFile(ctx.msg.photo.at(-1)?.file_id ?? '');
      const res = await fetch(`${fake.channelConfig.apiRoot}/file/bot${fake.channelConfig.botToken}/${file.file_path}`);
      got.push(Buffer.from(await res.arrayBuffer()));
    });
    await run(fake, bot);
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 9, 9]);
    await fake.deliver({ chatType: 'direct', userId: '1001', text: 'look', images: [{ mimeType: 'image/png', data: png }] });
    await until(() => got.length === 1);
    expect(got[0]).toEqual(png);
    expect(captions).toEqual(['look']);
  });

  it('has no history API: addHistory is a no-op that only returns an id', async () => {
    const { fake } = await setup();
    const { messageId } = fake.addHistory({ chatType: 'direct', userId: '1001', text: 'while down' });
    expect(messageId).toMatch(/^\d+$/);
    expect(fake.pendingUpdates()).toBe(0);
  });

  it('refuses with 401: init fails, and a running poll stops with a rejected start()', async () => {
    const { fake, bot } = await setup();
    const { errors, polling } = await run(fake, bot);
    fake.setRefuseConnections(true);
    await polling;
    expect(errors[0]).toBeInstanceOf(GrammyError);
    expect((errors[0] as GrammyError).error_code).toBe(401);
    expect(bot.isRunning()).toBe(false);
    const fresh = new Bot(fake.channelConfig.botToken, { client: { apiRoot: fake.channelConfig.apiRoot } });
    await expect(fresh.init()).rejects.toMatchObject({ error_code: 401, description: 'Unauthorized' });
    const wrong = new Bot('999:WRONG', { client: { apiRoot: fake.channelConfig.apiRoot } });
    fake.setRefuseConnections(false);
    await expect(wrong.init()).rejects.toMatchObject({ error_code: 401 });
    await expect(fresh.init()).resolves.toBeUndefined();
  });

  it('a second poller ends the first with 409 Conflict', async () => {
    const { fake, bot } = await setup();
    const first = await run(fake, bot);
    const second = new Bot(fake.channelConfig.botToken, { client: { apiRoot: fake.channelConfig.apiRoot } });
    await run(fake, second);
    await first.polling;
    expect((first.errors[0] as GrammyError).error_code).toBe(409);
  });

  it('SDK trap: against an unreachable API getMe retries forever, so init with an AbortSignal before start()', async () => {
    // bot.start() runs init() before it creates its polling AbortController, so on network errors getMe is
    // retried with backoff forever, even after bot.stop() (a leaked timer). Calling bot.init(signal) first
    // (start() then skips getMe) or passing `botInfo` to the Bot constructor avoids it.
    // An API whose every connection is cut: each getMe fails with a network error.
    let attempts = 0;
    const cutting = createServer((req) => {
      attempts++;
      req.socket.destroy();
    });
    await new Promise<void>((resolve) => cutting.listen(0, '127.0.0.1', resolve));
    const apiRoot = `http://127.0.0.1:${(cutting.address() as AddressInfo).port}`;
    try {
      const bot = new Bot('123456:fake-token', { client: { apiRoot } });
      const ac = new AbortController();
      // grammy types the signal as the `abort-controller` polyfill's AbortSignal; the native one works at runtime.
      const init = bot.init(ac.signal as Parameters<typeof bot.init>[0]);
      await until(() => attempts >= 2, HANG_MS, 'getMe failing and being retried');
      ac.abort();
      await expect(init).rejects.toThrow(/Abort/);
    } finally {
      await new Promise<void>((resolve) => cutting.close(() => resolve()));
    }
    // failOnLeaksAfterAll asserts that no retry timer is left behind.
  });

  it('shuts down cleanly: stop() aborts the held poll and confirms with a final getUpdates', async () => {
    const { fake, bot } = await setup();
    bot.on('message', () => {});
    const polling = bot.start();
    await fake.waitForConnection();
    await fake.deliver({ chatType: 'direct', userId: '1001', text: 'last' });
    await until(() => fake.calls.filter((c) => c.method === 'getupdates').length >= 2);
    const lastUpdate = Math.max(...fake.calls.map((c) => Number(c.params.offset ?? 0)));
    const expiredBefore = fake.expiredPolls();
    await bot.stop();
    await polling;
    expect(fake.expiredPolls(), 'the 30 s held poll had to run out').toBe(expiredBefore);
    expect(fake.calls.at(-1)).toMatchObject({ method: 'getupdates', params: { offset: lastUpdate, limit: 1 } });
    expect(fake.pendingUpdates()).toBe(0);
  });
});
