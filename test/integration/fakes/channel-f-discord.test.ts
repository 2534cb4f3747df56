/**
 * Proves the fake Discord against the real discord.js 14.28.1: the client is driven the way a
 * channel adapter would drive it, and every assertion is on what the SDK saw or what the fake recorded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ChannelType,
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  Options,
  Partials,
  type ClientOptions,
  type Message,
  type TextChannel,
} from 'discord.js';
import { WebSocket } from 'ws';
import { startFakeDiscord, type FakeDiscordOptions } from '../../fakes/platforms/channel-f-discord.js';
import { releasedTo, resourceTally } from '../../helpers/resources.js';
import { HANG_MS, sleep, until } from '../../helpers/wait.js';

type Fake = Awaited<ReturnType<typeof startFakeDiscord>>;

const ALL_INTENTS = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent];

function createClient(fake: Fake, extra: Partial<ClientOptions> = {}): Client {
  return new Client({
    intents: ALL_INTENTS,
    partials: [Partials.Channel],
    rest: { api: String(fake.channelConfig.apiUrl), retries: 0, timeout: HANG_MS },
    ...extra,
  });
}

async function login(client: Client, fake: Fake): Promise<void> {
  const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
  await client.login(String(fake.channelConfig.botToken));
  await ready;
}

/** The next messageCreate matching pred, from users only (the bot's own sends are echoed too). */
function nextMessage(client: Client, pred: (m: Message) => boolean = () => true, timeoutMs = HANG_MS): Promise<Message> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off(Events.MessageCreate, on);
      reject(new Error('no messageCreate'));
    }, timeoutMs);
    const on = (m: Message) => {
      if (m.author.id === client.user?.id || !pred(m)) return;
      clearTimeout(timer);
      client.off(Events.MessageCreate, on);
      resolve(m);
    };
    client.on(Events.MessageCreate, on);
  });
}

describe('fake Discord (channel_f) against discord.js', () => {
  let fake: Fake;
  let client: Client;

  beforeAll(async () => {
    fake = await startFakeDiscord({ heartbeatIntervalMs: 150 });
    client = createClient(fake);
    await login(client, fake);
  });

  afterAll(async () => {
    await client?.destroy();
    await fake?.close();
  });

  it('hands out its config and speaks gateway v10 JSON', () => {
    expect(fake.channelConfig).toEqual({ botToken: 'fake-discord-token', apiUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/api$/) });
    expect(fake.limit).toEqual({ max: 2000, unit: 'chars' });
    expect(client.user?.id).toBe(fake.botUserId);
    expect(client.user?.username).toBe('servicebot');
    expect(client.user?.bot).toBe(true);
    expect(client.guilds.cache.get(fake.guildId)?.channels.cache.has(fake.defaultChannelId)).toBe(true);
    expect(fake.gatewayConnections[0]?.query).toBe('?v=10&encoding=json');
    expect(fake.lastIntents()).toBe((1 << 0) | (1 << 9) | (1 << 12) | (1 << 15));
    expect(fake.connected()).toBe(true);
  });

  it('delivers a DM, and the reply is recorded against the DM channel', async () => {
    const got = nextMessage(client);
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: '2000000000000000001', userName: 'alice', text: 'hi bot' });
    const msg = await got;
    expect(msg.id).toBe(messageId);
    expect(msg.inGuild()).toBe(false);
    expect(msg.channel.type).toBe(ChannelType.DM);
    expect(msg.channelId).toBe(fake.dmChannelId('2000000000000000001'));
    expect(msg.content).toBe('hi bot');
    expect(msg.author.username).toBe('alice');
    await msg.reply('hello alice');
    const out = await fake.waitForOutbound((o) => o.kind === 'reply' && o.replyTo === messageId);
    expect(out).toMatchObject({ chatId: msg.channelId, recipientId: '2000000000000000001', text: 'hello alice', format: 'markdown' });
  });

  it('delivers a guild @mention the way mentions.users and <@id> show it', async () => {
    const got = nextMessage(client);
    await fake.deliver({
      chatType: 'group',
      userId: '2000000000000000002',
      userName: 'bob',
      text: 'status please',
      mentionBot: true,
      mentionUsers: [{ userId: '2000000000000000003', userName: 'carol' }],
    });
    const msg = await got;
    expect(msg.inGuild()).toBe(true);
    expect(msg.guildId).toBe(fake.guildId);
    expect(msg.channelId).toBe(fake.defaultChannelId);
    expect(msg.mentions.users.has(client.user!.id)).toBe(true);
    expect(msg.mentions.users.has('2000000000000000003')).toBe(true);
    expect(msg.content).toBe(`<@${fake.botUserId}> status please <@2000000000000000003>`);
    expect(msg.member?.user.id).toBe('2000000000000000002');
  });

  it('sends to a channel, echoes the bot its own message, edits, and shows typing', async () => {
    const channel = (await client.channels.fetch(fake.defaultChannelId)) as TextChannel;
    const echoed = new Promise<Message>((resolve) => {
      const on = (m: Message) => m.author.id === client.user?.id && m.content === 'proactive' && (client.off(Events.MessageCreate, on), resolve(m));
      client.on(Events.MessageCreate, on);
    });
    await channel.sendTyping();
    const sent = await channel.send('proactive');
    expect((await echoed).id).toBe(sent.id);
    await sent.edit('proactive, edited');
    expect(fake.outbound.filter((o) => o.chatId === fake.defaultChannelId).map((o) => [o.kind, o.text])).toEqual([
      ['typing', ''],
      ['send', 'proactive'],
      ['edit', 'proactive, edited'],
    ]);
    expect(fake.outbound.at(-1)?.messageId).toBe(sent.id);
    expect(fake.getMessage(sent.id)?.content).toBe('proactive, edited');
  });

  it('opens a DM for a proactive send (users.send → POST /users/@me/channels)', async () => {
    const sent = await client.users.send('2000000000000000009', 'cron says hi');
    const out = await fake.waitForOutbound((o) => o.messageId === sent.id);
    expect(out).toMatchObject({ kind: 'send', chatId: fake.dmChannelId('2000000000000000009'), recipientId: '2000000000000000009' });
  });

  it('rejects content over 2000 characters with 50035 BASE_TYPE_MAX_LENGTH', async () => {
    const channel = (await client.channels.fetch(fake.defaultChannelId)) as TextChannel;
    await expect(channel.send('x'.repeat(2000))).resolves.toBeDefined();
    const err = await channel.send('é'.repeat(2001)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DiscordAPIError);
    expect((err as DiscordAPIError).code).toBe(50035);
    expect((err as DiscordAPIError).status).toBe(400);
    expect(JSON.stringify((err as DiscordAPIError).rawError)).toContain('BASE_TYPE_MAX_LENGTH');
    expect(fake.rejections.at(-1)?.reason).toMatch(/longer than 2000/);
  });

  it('serves history newest first with before/limit, including bot messages', async () => {
    const chatId = '3000000000000000001';
    const t = Date.now() - 60_000;
    const a = fake.addHistory({ chatType: 'group', chatId, userId: '2000000000000000004', text: 'old one', ts: t });
    const b = fake.addHistory({ chatType: 'group', chatId, userId: '2000000000000000004', text: 'old two', ts: t + 1000 });
    const channel = (await client.channels.fetch(chatId)) as TextChannel;
    const mine = await channel.send('bot line');
    const all = await channel.messages.fetch({ limit: 10 });
    expect([...all.values()].map((m) => m.content)).toEqual(['bot line', 'old two', 'old one']);
    const older = await channel.messages.fetch({ before: b.messageId, limit: 10 });
    expect([...older.keys()]).toEqual([a.messageId]);
    expect(all.get(mine.id)?.author.id).toBe(fake.botUserId);
  });

  it('delivers in a thread (type 11 under the group channel) and records the thread reply', async () => {
    const got = nextMessage(client);
    await fake.deliver({ chatType: 'group', userId: '2000000000000000005', text: 'in thread', threadId: '4000000000000000001', mentionBot: true });
    const msg = await got;
    expect(msg.channel.isThread()).toBe(true);
    expect(msg.channel.type).toBe(ChannelType.PublicThread);
    expect(msg.channel.isThread() && msg.channel.parentId).toBe(fake.defaultChannelId);
    await msg.reply('thread answer');
    const out = await fake.waitForOutbound((o) => o.text === 'thread answer');
    expect(out).toMatchObject({ kind: 'reply', chatId: fake.defaultChannelId, threadId: '4000000000000000001' });
  });

  it('delivers images as attachments downloadable from the fake', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000', 'hex');
    const got = nextMessage(client);
    await fake.deliver({
      chatType: 'direct',
      userId: '2000000000000000006',
      text: 'see pic',
      images: [{ mimeType: 'image/png', data: png, fileName: 'p.png' }],
    });
    const att = (await got).attachments.first();
    expect(att?.contentType).toBe('image/png');
    expect(att?.name).toBe('p.png');
    const res = await fetch(att!.url);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(png);
  });

  it('redelivers the same id: the SDK message cache swallows it, the raw dispatch still arrives', async () => {
    const raws: string[] = [];
    const onRaw = (p: { t?: string; d?: { id?: string } }) => p.t === 'MESSAGE_CREATE' && p.d?.id && raws.push(p.d.id);
    client.on(Events.Raw, onRaw);
    let seen = 0;
    const onMsg = () => seen++;
    const got = nextMessage(client);
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: '2000000000000000007', text: 'once' });
    await got;
    client.on(Events.MessageCreate, onMsg);
    await fake.redeliver(messageId);
    // A later message is dispatched on the same gateway socket after the redelivery.
    const later = nextMessage(client, (m) => m.content === 'marker');
    await fake.deliver({ chatType: 'direct', userId: '2000000000000000007', text: 'marker' });
    await later;
    client.off(Events.Raw, onRaw).off(Events.MessageCreate, onMsg);
    expect(raws.filter((id) => id === messageId)).toHaveLength(2);
    expect(seen).toBe(1); // the marker alone
  });

  it('reports heartbeat/resume sequence numbers as acks', async () => {
    const { messageId } = await fake.deliver({ chatType: 'direct', userId: '2000000000000000008', text: 'ack me' });
    await expect(fake.waitForAck(messageId, HANG_MS)).resolves.toMatchObject({ messageId });
    expect(fake.heartbeatCount()).toBeGreaterThan(0);
  });

  it('drop → the client resumes and gets what was dispatched while it was away', async () => {
    const resumed = new Promise<void>((resolve) => client.once(Events.ShardResume, () => resolve()));
    fake.dropConnections();
    expect(fake.connected()).toBe(false);
    const channel = (await client.channels.fetch(fake.defaultChannelId)) as TextChannel;
    const echoed = new Promise<void>((resolve) => {
      const on = (m: Message) => m.content === 'while away' && (client.off(Events.MessageCreate, on), resolve());
      client.on(Events.MessageCreate, on);
    });
    await channel.send('while away'); // REST works while the gateway is down; its echo waits for the resume
    await resumed;
    await echoed;
    expect(fake.resumes.at(-1)).toMatchObject({ ok: true });
    expect(fake.resumes.at(-1)!.replayed).toBeGreaterThanOrEqual(1);
    expect(fake.gatewayConnections.at(-1)?.path).toBe('/resume');
    const got = nextMessage(client);
    await fake.deliver({ chatType: 'direct', userId: '2000000000000000001', text: 'after resume' });
    expect((await got).content).toBe('after resume');
  });
});

describe('fake Discord: intents, refusal and shutdown', () => {
  async function withFake<T>(fn: (fake: Fake) => Promise<T>, opts?: FakeDiscordOptions): Promise<T> {
    const fake = await startFakeDiscord(opts);
    try {
      return await fn(fake);
    } finally {
      await fake.close();
    }
  }

  it('without MessageContent, a guild message that does not mention the bot has empty content', async () => {
    await withFake(async (fake) => {
      const client = createClient(fake, { intents: ALL_INTENTS.filter((i) => i !== GatewayIntentBits.MessageContent) });
      try {
        await login(client, fake);
        const plain = nextMessage(client);
        await fake.deliver({ chatType: 'group', userId: '2000000000000000002', text: 'secret' });
        expect((await plain).content).toBe('');
        const mention = nextMessage(client);
        await fake.deliver({ chatType: 'group', userId: '2000000000000000002', text: 'visible', mentionBot: true });
        expect((await mention).content).toBe(`<@${fake.botUserId}> visible`);
        const dm = nextMessage(client);
        await fake.deliver({ chatType: 'direct', userId: '2000000000000000002', text: 'dm text' });
        expect((await dm).content).toBe('dm text');
      } finally {
        await client.destroy();
      }
    });
  });

  it('without Partials.Channel, DMs never reach messageCreate', async () => {
    await withFake(async (fake) => {
      const client = createClient(fake, { partials: [] });
      try {
        await login(client, fake);
        const seen: string[] = [];
        client.on(Events.MessageCreate, (m) => seen.push(m.content));
        await fake.deliver({ chatType: 'direct', userId: '2000000000000000002', text: 'lost' });
        // A later guild message (which needs no partial) is dispatched after the DM on the same socket.
        const later = nextMessage(client, (m) => m.content === 'in the guild');
        await fake.deliver({ chatType: 'group', chatId: fake.defaultChannelId, userId: '2000000000000000002', text: 'in the guild' });
        await later;
        expect(seen).toEqual(['in the guild']);
      } finally {
        await client.destroy();
      }
    });
  });

  it('redelivery reaches messageCreate twice when the SDK message cache is off', async () => {
    await withFake(async (fake) => {
      const client = createClient(fake, { makeCache: Options.cacheWithLimits({ MessageManager: 0 }) });
      try {
        await login(client, fake);
        const ids: string[] = [];
        client.on(Events.MessageCreate, (m) => ids.push(m.id));
        const { messageId } = await fake.deliver({ chatType: 'direct', userId: '2000000000000000002', text: 'twice' });
        await fake.redeliver(messageId);
        // A later message is dispatched after both: no third copy arrived before it.
        const later = await fake.deliver({ chatType: 'direct', userId: '2000000000000000002', text: 'marker' });
        await until(() => ids.includes(later.messageId));
        expect(ids).toEqual([messageId, messageId, later.messageId]);
      } finally {
        await client.destroy();
      }
    });
  });

  it('invalid session → op 9 → the client identifies again', async () => {
    await withFake(async (fake) => {
      // @discordjs/ws spaces identifies 5-6.5 s apart (Discord's identify limit); a test that forces a
      // re-identify swaps in a no-op throttler instead of waiting.
      const client = createClient(fake, { ws: { buildIdentifyThrottler: () => ({ waitForIdentify: async () => undefined }) } });
      try {
        await login(client, fake);
        fake.invalidateSessions();
        fake.dropConnections();
        await fake.waitForConnection(3000);
        expect(fake.identifies.map((i) => i.ok)).toEqual([true, true]);
        expect(fake.resumes.at(-1)).toMatchObject({ ok: false });
        const got = nextMessage(client);
        await fake.deliver({ chatType: 'direct', userId: '2000000000000000001', text: 'after re-identify' });
        expect((await got).content).toBe('after re-identify');
      } finally {
        await client.destroy();
      }
    });
  });

  it('refusing connections makes login fail, and a refused resume closes with 4004', async () => {
    await withFake(async (fake) => {
      fake.setRefuseConnections(true);
      const refused = createClient(fake);
      await expect(refused.login(String(fake.channelConfig.botToken))).rejects.toThrow(/invalid token/i);
      await refused.destroy();
      fake.setRefuseConnections(false);

      const client = createClient(fake);
      try {
        await login(client, fake);
        const disconnected = new Promise<number>((resolve) => client.once(Events.ShardDisconnect, (e) => resolve(e.code)));
        fake.setRefuseConnections(true);
        fake.dropConnections();
        expect(await disconnected).toBe(4004);
        expect(fake.resumes.at(-1)).toMatchObject({ ok: false });
        expect(fake.connected()).toBe(false);
      } finally {
        await client.destroy();
      }
    });
  });

  it('speaks the raw protocol: 401 bodies, hello, heartbeat ack and close codes', async () => {
    await withFake(async (fake) => {
      const api = String(fake.channelConfig.apiUrl);
      const res = await fetch(`${api}/v10/users/@me`, { headers: { authorization: 'Bot wrong' } });
      expect([res.status, await res.json()]).toEqual([401, { message: '401: Unauthorized', code: 0 }]);
      expect(res.headers.get('x-ratelimit-remaining')).toBe('49');
      const gw = (await (await fetch(`${api}/v10/gateway/bot`, { headers: { authorization: 'Bot fake-discord-token' } })).json()) as { url: string };
      /** Opens a raw socket, sends `frames` after hello, and collects replies until the server closes it. */
      const session = (query: string, frames: unknown[]) =>
        new Promise<{ ops: number[]; code: number }>((resolve) => {
          const ws = new WebSocket(`${gw.url}?${query}`);
          const ops: number[] = [];
          ws.on('message', (data) => {
            const p = JSON.parse(String(data)) as { op: number };
            ops.push(p.op);
            if (p.op === 10) for (const f of frames) ws.send(JSON.stringify(f));
            if (p.op === 11) ws.send(JSON.stringify({ op: 2, d: { token: 'wrong', intents: 1, properties: {} } }));
          });
          ws.on('close', (code) => resolve({ ops, code }));
        });
      expect(await session('v=10&encoding=json', [{ op: 1, d: null }])).toEqual({ ops: [10, 11], code: 4004 });
      expect(await session('v=10&encoding=json', [{ op: 3, d: {} }])).toEqual({ ops: [10], code: 4003 });
      expect(await session('v=10&encoding=json', [{ op: 99, d: {} }])).toEqual({ ops: [10], code: 4001 });
      expect(await session('v=9&encoding=json', [])).toEqual({ ops: [], code: 4012 });
      expect(fake.identifies).toEqual([{ intents: 1, ok: false, at: expect.any(Number) }]);
    });
  });

  it('leaves no sockets, servers or timers behind after client.destroy() then fake.close()', async () => {
    await sleep(50); // let earlier tests' sockets finish closing
    const before = resourceTally();
    await withFake(async (fake) => {
      const client = createClient(fake);
      await login(client, fake);
      await (client.channels.cache.get(fake.defaultChannelId) as TextChannel).send('bye');
      expect(resourceTally().tcp).toBeGreaterThan(before.tcp);
      await client.destroy();
    });
    await releasedTo(before); // handles go on the loop turn after close()
  });
});
