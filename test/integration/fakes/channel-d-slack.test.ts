/**
 * Self-test of the fake Slack (channel_d): the real @slack/bolt App + SocketModeReceiver (real
 * @slack/web-api WebClient and @slack/socket-mode client over undici) pointed at the fake, driven
 * the way an adapter would drive them.
 */
import { App, LogLevel, SocketModeReceiver, type Logger } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { startFakeSlack } from '../../fakes/platforms/channel-d-slack.js';
import { cleanupAfterEach, failOnLeaksAfterAll } from '../../helpers/resources.js';
import { until } from '../../helpers/wait.js';

type Fake = Awaited<ReturnType<typeof startFakeSlack>>;

/** Keeps SDK logging out of the test output; errors are kept for assertions. */
function quietLogger(errors: string[] = []): Logger {
  let level = LogLevel.ERROR;
  return {
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: (...m: unknown[]) => void errors.push(m.map(String).join(' ')),
    setLevel: (l: LogLevel) => void (level = l),
    getLevel: () => level,
    setName: () => {},
  };
}

function makeApp(fake: Fake) {
  const { botToken, appToken, apiUrl } = fake.channelConfig;
  const logger = quietLogger();
  const clientOptions = { slackApiUrl: apiUrl, retryConfig: { retries: 0 } };
  const receiver = new SocketModeReceiver({ appToken, logger, clientPingTimeout: 1000, installerOptions: { clientOptions } });
  const app = new App({ token: botToken, receiver, logger, deferInitialization: true, clientOptions });
  return { app, receiver };
}

/** Shutdown order from the notes: stop only while connected, wait for the close handshake, then close the fake. */
async function stopApp(fake: Fake, app: App, receiver: SocketModeReceiver) {
  const client = receiver.client;
  if (!fake.connected()) await new Promise((r) => client.once('connected', r));
  const disconnected = new Promise((r) => client.once('disconnected', r));
  await app.stop(); // resolves before the close handshake, so wait for the client's 'disconnected' too
  await disconnected;
  await until(() => !fake.connected());
}

const defer = cleanupAfterEach();
failOnLeaksAfterAll();

async function setup(opts: Parameters<typeof startFakeSlack>[0] = {}) {
  const fake = await startFakeSlack(opts);
  const { app, receiver } = makeApp(fake);
  defer(() => fake.close());
  return { fake, app, receiver };
}

async function start(fake: Fake, app: App, receiver: SocketModeReceiver) {
  await app.init();
  await app.start();
  defer(() => stopApp(fake, app, receiver));
  expect(fake.connected()).toBe(true);
}

describe('fake Slack (channel_d) against @slack/bolt 5.1.0 Socket Mode', () => {
  it('connects, receives a DM, replies in thread, and the envelope is acked', async () => {
    const { fake, app, receiver } = await setup();
    const seen: Array<Record<string, unknown>> = [];
    app.message(async ({ message, client, context }) => {
      const m = message as unknown as Record<string, string>;
      seen.push({ ...m, botUserId: context.botUserId });
      await client.chat.postMessage({ channel: m.channel ?? '', text: `echo: ${m.text} & <b>`, thread_ts: m.ts });
    });
    await start(fake, app, receiver);
    expect(fake.connectionsOpened()).toBe(1);
    expect(fake.frames[0]).toMatchObject({ type: 'hello', connection_info: { app_id: fake.appId } });

    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'U1', userName: 'alice', text: 'hi there' });
    const out = await fake.waitForOutbound((o) => o.replyTo === messageId);
    expect(out).toMatchObject({ kind: 'reply', chatId: 'DU1', text: 'echo: hi there & <b>', format: 'mrkdwn', threadId: messageId });
    await fake.waitForAck(messageId);
    expect(seen[0]).toMatchObject({ channel: 'DU1', channel_type: 'im', user: 'U1', text: 'hi there', ts: messageId, botUserId: 'UBOT' });
    const info = await app.client.users.info({ user: 'U1' });
    expect(info.user?.name).toBe('alice');
  });

  it('delivers a group mention as a message event plus an app_mention envelope (switchable)', async () => {
    const { fake, app, receiver } = await setup();
    const messages: string[] = [];
    const mentions: string[] = [];
    app.message(async ({ message }) => void messages.push((message as unknown as { text: string }).text));
    app.event('app_mention', async ({ event }) => void mentions.push(event.text));
    await start(fake, app, receiver);

    const { messageId } = await fake.deliver({
      chatType: 'group',
      chatId: 'C0GENERAL',
      userId: 'U2',
      text: 'what is up',
      mentionBot: true,
      mentionUsers: [{ userId: 'U3', userName: 'carol' }],
    });
    await until(() => messages.length === 1 && mentions.length === 1);
    expect(messages[0]).toBe('<@UBOT> <@U3> what is up');
    expect(mentions[0]).toBe(messages[0]);
    await until(() => fake.acks.filter((a) => a.messageId === messageId).length === 2);
    const event = (fake.frames.at(-1) as { payload: { event: Record<string, unknown> } }).payload.event;
    expect(event).toMatchObject({ type: 'app_mention', channel: 'C0GENERAL', ts: messageId });

    fake.setSendAppMention(false);
    await fake.deliver({ chatType: 'group', chatId: 'C0GENERAL', userId: 'U2', text: 'again', mentionBot: true });
    await until(() => messages.length === 2);
    // A later message comes on the same socket after any app_mention envelope of the one before.
    await fake.deliver({ chatType: 'group', chatId: 'C0GENERAL', userId: 'U2', text: 'marker' });
    await until(() => messages.length === 3);
    expect(mentions).toHaveLength(1);
  });

  it('sends proactively, edits, streams, and rejects text over 40 000 characters', async () => {
    const { fake, app, receiver } = await setup();
    await start(fake, app, receiver);
    const sent = await app.client.chat.postMessage({ channel: 'C0GENERAL', text: 'x'.repeat(40_000) });
    expect(sent.ok).toBe(true);
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'send', chatId: 'C0GENERAL', messageId: sent.ts });
    await app.client.chat.update({ channel: 'C0GENERAL', ts: sent.ts ?? '', text: 'edited' });
    expect(fake.outbound.at(-1)).toMatchObject({ kind: 'edit', messageId: sent.ts, text: 'edited' });
    const dm = await app.client.chat.postMessage({ channel: 'U9', text: 'to a user id' });
    expect(dm.channel).toBe('DU9');

    await expect(app.client.chat.postMessage({ channel: 'C0GENERAL', text: 'y'.repeat(40_001) })).rejects.toMatchObject({
      data: { ok: false, error: 'msg_too_long' },
    });
    expect(fake.rejections.at(-1)).toMatchObject({ method: 'chat.postMessage', reason: 'msg_too_long' });

    const stream = app.client.chatStream({
      channel: 'C0GENERAL',
      thread_ts: sent.ts ?? '',
      recipient_team_id: fake.teamId,
      recipient_user_id: 'U1',
      buffer_size: 1,
    });
    await stream.append({ markdown_text: 'Hel' });
    await stream.append({ markdown_text: 'lo' });
    await stream.stop({ markdown_text: '!' });
    const frames = fake.outbound.filter((o) => o.kind === 'stream');
    expect(frames.map((f) => [f.text, f.finished])).toEqual([
      ['Hel', false],
      ['Hello', false],
      ['Hello!', true],
    ]);

    fake.failNext('chat.postMessage', { retryAfter: 0 });
    await expect(app.client.chat.postMessage({ channel: 'C0GENERAL', text: 'rate limited' })).rejects.toThrow(/rate limit/i);
  });

  it('redelivers the same event with retry_attempt+1 and retry_reason timeout', async () => {
    const { fake, app, receiver } = await setup();
    const seen: Array<{ ts: string; retryNum?: number; retryReason?: string; eventId: string }> = [];
    app.message(async ({ message, context, body }) => {
      seen.push({
        ts: (message as { ts: string }).ts,
        retryNum: context.retryNum,
        retryReason: context.retryReason,
        eventId: (body as { event_id: string }).event_id,
      });
    });
    await start(fake, app, receiver);
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: 'U1', text: 'once' });
    await fake.waitForAck(messageId);
    await fake.redeliver(messageId);
    await until(() => seen.length === 2 && fake.acks.length === 2);
    expect(seen[1]).toEqual({ ts: messageId, retryNum: 1, retryReason: 'timeout', eventId: seen[0]?.eventId });
    expect(seen[0]?.retryNum).toBe(0);
  });

  it('serves history newest first with paging, thread replies, and files behind the bot token', async () => {
    const { fake, app, receiver } = await setup();
    await start(fake, app, receiver);
    const base = Date.now() - 60_000;
    const ids = [0, 1, 2].map((i) => fake.addHistory({ chatType: 'group', chatId: 'C0HIST', userId: 'U1', text: `old ${i}`, ts: base + i * 1000 }).messageId);
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const { messageId: live } = await fake.deliver({
      chatType: 'group',
      chatId: 'C0HIST',
      userId: 'U2',
      text: 'look',
      images: [{ mimeType: 'image/png', data: png }],
    });
    const reply = await app.client.chat.postMessage({ channel: 'C0HIST', text: 'in thread', thread_ts: ids[0] ?? '' });

    const page1 = await app.client.conversations.history({ channel: 'C0HIST', limit: 2 });
    expect(page1.messages?.map((m) => m.ts)).toEqual([live, ids[2]]);
    expect(page1.has_more).toBe(true);
    const page2 = await app.client.conversations.history({ channel: 'C0HIST', limit: 2, cursor: page1.response_metadata?.next_cursor ?? '' });
    expect(page2.messages?.map((m) => m.text)).toEqual(['old 1', 'old 0']);
    expect(page2.has_more).toBe(false);
    const window = await app.client.conversations.history({ channel: 'C0HIST', oldest: ids[0] ?? '', latest: live });
    expect(window.messages?.map((m) => m.ts)).toEqual([ids[2], ids[1]]);
    const thread = await app.client.conversations.replies({ channel: 'C0HIST', ts: ids[0] ?? '' });
    expect(thread.messages?.map((m) => m.ts)).toEqual([ids[0], reply.ts]);
    expect(thread.messages?.[1]).toMatchObject({ user: 'UBOT', bot_id: 'BBOT' });

    const file = (page1.messages?.[0]?.files ?? [])[0];
    expect(file?.mimetype).toBe('image/png');
    const { botToken } = fake.channelConfig;
    const got = await fetch(file?.url_private_download ?? '', { headers: { Authorization: `Bearer ${botToken}` } });
    expect(Buffer.from(await got.arrayBuffer())).toEqual(png);
    const anon = await fetch(file?.url_private ?? '');
    expect(anon.headers.get('content-type')).toMatch(/text\/html/); // the trap: no token gives a sign-in page
    await anon.text();
  });

  it('refuses connections with invalid_auth, then accepts again', async () => {
    const { fake, app, receiver } = await setup();
    await app.init();
    fake.setRefuseConnections(true);
    await expect(app.start()).rejects.toMatchObject({ data: { error: 'invalid_auth' } }); // apps.connections.open
    expect(fake.connected()).toBe(false);
    const second = makeApp(fake);
    await expect(second.app.init()).rejects.toMatchObject({ data: { error: 'invalid_auth' } }); // auth.test
    expect(fake.rejections.map((r) => r.method)).toEqual(['apps.connections.open', 'auth.test']);
    fake.setRefuseConnections(false);
    await app.start();
    defer(() => stopApp(fake, app, receiver));
    expect(fake.connected()).toBe(true);
  });

  it('reconnects through apps.connections.open after dropConnections and a disconnect frame', async () => {
    const { fake, app, receiver } = await setup();
    const texts: string[] = [];
    app.message(async ({ message }) => void texts.push((message as { text: string }).text));
    await start(fake, app, receiver);
    fake.dropConnections();
    await until(() => !fake.connected());
    await fake.waitForConnection(5000);
    expect(fake.connectionsOpened()).toBe(2);
    fake.sendDisconnect();
    await until(() => fake.connectionsOpened() === 3 && fake.connected());
    await fake.deliver({ chatType: 'direct', userId: 'U1', text: 'after reconnect' });
    await until(() => texts.includes('after reconnect'));
  });

  it('SDK trap: a token revoked during auto-reconnect is an unhandled rejection; an adapter-run loop is safe', async () => {
    // With autoReconnectEnabled (default) socket-mode 3.1.0 runs `start()` from a timer without a catch, so an
    // invalid_auth from apps.connections.open during a reconnect becomes an unhandledRejection (crashes Node).
    // The safe pattern: autoReconnectEnabled: false and reconnect on 'disconnected' yourself.
    const fake = await startFakeSlack();
    defer(() => fake.close());
    const { botToken, appToken, apiUrl } = fake.channelConfig;
    const logger = quietLogger();
    const clientOptions = { slackApiUrl: apiUrl, retryConfig: { retries: 0 } };
    const receiver = new SocketModeReceiver({ appToken, logger, autoReconnectEnabled: false, installerOptions: { clientOptions } });
    const app = new App({ token: botToken, receiver, logger, deferInitialization: true, clientOptions });
    const failures: string[] = [];
    let stopping = false;
    const reconnect = async () => {
      while (!stopping) {
        try {
          await receiver.client.start();
          return;
        } catch (e) {
          // A start cut short (the app stopping under it, a socket closed before hello) rejects
          // with no value at all: record it without assuming an API error.
          failures.push(String((e as { data?: { error?: string } } | undefined)?.data?.error ?? e));
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    // One loop at a time: a failed start emits 'disconnected' again, and a second loop would open
    // a second socket that the stop below never closes.
    let loop: Promise<void> | undefined;
    receiver.client.on('disconnected', () => {
      if (stopping || loop) return;
      loop = reconnect().finally(() => {
        loop = undefined;
      });
    });
    await app.init();
    await app.start();
    fake.setRefuseConnections(true);
    fake.dropConnections();
    await until(() => failures.includes('invalid_auth'));
    fake.setRefuseConnections(false);
    await until(() => fake.connected());
    expect(fake.connectionsOpened()).toBe(2);
    stopping = true;
    await loop;
    await stopApp(fake, app, receiver);
  });

  it('echoes bot messages when asked, and Bolt ignoreSelf drops them', async () => {
    const { fake, app, receiver } = await setup({ echoBotMessages: true });
    const seen: string[] = [];
    app.message(async ({ message }) => void seen.push((message as { text: string }).text));
    await start(fake, app, receiver);
    const sent = await app.client.chat.postMessage({ channel: 'C0GENERAL', text: 'from the bot' });
    await fake.waitForAck(sent.ts ?? '');
    await fake.deliver({ chatType: 'group', chatId: 'C0GENERAL', userId: 'U1', text: 'from a user' });
    await until(() => seen.length === 1);
    expect(seen).toEqual(['from a user']);
  });
});
