/**
 * Fake Discord (channel_f) for discord.js 14.28.1: REST API v10 plus the gateway websocket, both on
 * one 127.0.0.1 port. Split across channel-f-discord-{state,rest,gateway}.ts.
 *
 * Pointing discord.js at it (the gateway URL is not an option: the client takes it from
 * GET /api/v10/gateway/bot, which this fake answers with ws://127.0.0.1:P):
 *
 *   const fake = await startFakeDiscord();
 *   const client = new Client({
 *     intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages,
 *               GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
 *     partials: [Partials.Channel],          // without it DMs are dropped (DM channels are never announced)
 *     rest: { api: String(fake.channelConfig.apiUrl), retries: 0, timeout: 2000 }, // 'http://127.0.0.1:P/api'
 *   });
 *   client.on(Events.MessageCreate, (m) => { if (m.author.id !== client.user?.id) ... }); // own sends are echoed
 *   await client.login(String(fake.channelConfig.botToken));   // 'fake-discord-token'
 *   ...
 *   await client.destroy();   // SDK first,
 *   await fake.close();       // then the fake.
 *
 * Behaviour worth knowing (all as on the real platform):
 * - READY lists the guild as unavailable and GUILD_CREATE follows (only with the Guilds intent), so
 *   `clientReady` fires at once. Guild and thread channels new to the client get CHANNEL_CREATE /
 *   THREAD_CREATE before their first message; DM channels are never announced.
 * - Guild messages need GuildMessages, DMs need DirectMessages. Without MessageContent a guild
 *   message that does not mention the bot arrives with content "" (and no attachments or embeds).
 * - Every message the bot creates, edits or deletes is echoed back over the gateway.
 * - Ids are snowflakes (decimal strings); deliver() throws on anything else.
 * - Outbound chatId: the channel id; for a thread the parent channel id plus threadId; for a DM the
 *   DM channel id (see dmChannelId) plus recipientId. Unimplemented routes answer 404 and are
 *   recorded in `rejections`, so a missing route shows up in test output.
 * - A client re-identifies (after op 9, a 1000 close, or a refusal lifted) only 5-6.5 s after its
 *   previous identify (@discordjs/ws identify throttle). Tests that force it pass
 *   `ws: { buildIdentifyThrottler: () => ({ waitForIdentify: async () => undefined }) }`.
 * - Discord has no per-message ack. The closest thing is the last sequence number a heartbeat or
 *   resume reports; `acks` records the messages at or below it (use `heartbeatIntervalMs` to see them).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  BOT_ID,
  BOT_NAME,
  GENERAL_CHANNEL_ID,
  GUILD_ID,
  INTENT,
  MAX_CONTENT,
  CHANNEL_TYPE,
  assertSnowflake,
  createWorld,
  type StoredMessage,
} from './channel-f-discord-state.js';
import { createGateway, gatewayMessage, type GatewayRecord } from './channel-f-discord-gateway.js';
import { componentButtons, createRestHandler, type DiscordOutbound, type RestFailure } from './channel-f-discord-rest.js';
import type { FakeInbound, FakePlatform, FakePlatformOptions, FakeRejection } from './types.js';
import { HANG_MS } from '../../helpers/wait.js';

export type { DiscordOutbound, RestFailure } from './channel-f-discord-rest.js';

export interface FakeDiscordOptions extends FakePlatformOptions {
  /** Sent in op 10 Hello; Discord uses about 41 250 ms. Lower it to see heartbeats (and `acks`) in tests. */
  heartbeatIntervalMs?: number;
}

/** Discord-specific handles and controls beyond FakePlatform. */
export interface DiscordExtras {
  readonly guildId: string;
  /** The guild's text channel 'general' (the default group chat for deliver/addHistory). */
  readonly defaultChannelId: string;
  readonly outbound: DiscordOutbound[];
  /** The DM channel id Discord uses between the bot and this user (created on first use). */
  dmChannelId(userId: string): string;
  /** Every identify the gateway received (intents as sent), including refused ones. */
  readonly identifies: GatewayRecord['identifies'];
  readonly resumes: GatewayRecord['resumes'];
  /** Every websocket upgrade (path and query, e.g. `?v=10&encoding=json`). */
  readonly gatewayConnections: GatewayRecord['connections'];
  heartbeatCount(): number;
  /** Intents of the most recent successful identify. */
  lastIntents(): number | undefined;
  /** Stored message as the REST API returns it (content as sent, edits applied). */
  getMessage(messageId: string): Record<string, unknown> | undefined;
  /** Sends op 7 Reconnect: the client closes with 4200 and resumes. */
  requestReconnect(): void;
  /** Forget every session, so the next resume gets op 9 (invalid session) and the client re-identifies. */
  invalidateSessions(): void;
  /**
   * Click the button labelled `label` on the bot's message `messageId` as `userId`: dispatches the
   * INTERACTION_CREATE (type 3, component_type 2) a click makes. Resolves once it was sent.
   */
  press(opts: { messageId: string; label: string; userId: string }): Promise<{ interactionId: string }>;
  /** Interaction callbacks the bot made (type 6: deferred update, 7: update, 4: message), in order. */
  readonly interactionAnswers: Array<{ interactionId: string; type: number; at: number }>;
  /** Refuse the next request of this method and route (a 429 with `retryAfter`, else the status and code given). */
  failNext(failure: RestFailure): void;
}

export async function startFakeDiscord(opts: FakeDiscordOptions = {}): Promise<FakePlatform & DiscordExtras> {
  const token = 'fake-discord-token';
  let port = 0;
  let refuse = false;
  const baseUrl = () => `http://127.0.0.1:${port}`;
  const outbound: DiscordOutbound[] = [];
  const rejections: FakeRejection[] = [];
  const acks: Array<{ messageId: string; at: number }> = [];
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of [...waiters]) w();
  };

  const openInteractions = new Map<string, string>();
  const failures: RestFailure[] = [];
  /** Unix ms until which a method and route refused with retry_after stay refused. */
  const holds = new Map<string, number>();
  const interactionAnswers: DiscordExtras['interactionAnswers'] = [];
  const world = createWorld(baseUrl);
  const gateway = createGateway({
    world,
    token,
    heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 41_250,
    isRefused: () => refuse,
    resumeUrl: () => `ws://127.0.0.1:${port}/resume`,
    onAck: (messageId) => {
      acks.push({ messageId, at: Date.now() });
      notify();
    },
  });

  function echo(t: 'MESSAGE_CREATE' | 'MESSAGE_UPDATE' | 'MESSAGE_DELETE', m: StoredMessage): void {
    const dm = m.channel.type === CHANNEL_TYPE.DM;
    setImmediate(() => {
      void gateway.dispatch(t, (intents) => {
        if (t !== 'MESSAGE_DELETE') return gatewayMessage(world, m, intents);
        if (!(intents & (dm ? INTENT.DirectMessages : INTENT.GuildMessages))) return null;
        return { id: m.payload.id, channel_id: m.channel.id, ...(dm ? {} : { guild_id: GUILD_ID }) };
      });
    });
  }

  const handle = createRestHandler({
    world,
    token,
    isRefused: () => refuse,
    gatewayUrl: () => `ws://127.0.0.1:${port}`,
    outbound: (o) => {
      outbound.push(o);
      notify();
    },
    rejection: (r) => {
      rejections.push(r);
      notify();
    },
    echo,
    takeFailure(method, route) {
      // A route refused with retry_after stays refused for the time left, as Discord's buckets do.
      const held = (holds.get(`${method} ${route}`) ?? 0) - Date.now();
      if (held > 0) return { method, route, retryAfter: Math.ceil(held / 100) / 10 };
      const i = failures.findIndex((f) => f.method === method && (typeof f.route === 'string' ? f.route === route : f.route.test(route)));
      const failure = i < 0 ? undefined : failures.splice(i, 1)[0];
      if (failure?.retryAfter !== undefined) holds.set(`${method} ${route}`, Date.now() + failure.retryAfter * 1000);
      return failure;
    },
    interactionCallback(id, interactionToken, body) {
      if (openInteractions.get(id) !== interactionToken) return { status: 404, body: { message: 'Unknown interaction', code: 10062 } };
      if (interactionAnswers.some((a) => a.interactionId === id)) {
        return { status: 400, body: { message: 'Interaction has already been acknowledged.', code: 40060 } };
      }
      interactionAnswers.push({ interactionId: id, type: Number(body.type), at: Date.now() });
      notify();
      return { status: 204 };
    },
  });

  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `fake discord: ${String(err)}`, code: 0 }));
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => gateway.handleUpgrade(req, socket, head));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;

  function waitFor<T>(check: () => T | undefined, timeoutMs: number, what: string, subscribe = false): Promise<T> {
    const now = check();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise<T>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(poll);
        unsubscribe?.();
      };
      const poll = () => {
        const value = check();
        if (value === undefined) return;
        done();
        resolve(value);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`fake discord: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      waiters.add(poll);
      const unsubscribe = subscribe ? gateway.onChange(poll) : undefined;
    });
  }

  const waitForConnection = (timeoutMs = HANG_MS): Promise<void> =>
    waitFor(() => (gateway.connected() ? true : undefined), timeoutMs, 'a gateway session', true).then(() => undefined);

  async function dispatchMessage(m: StoredMessage): Promise<void> {
    await gateway.dispatch('MESSAGE_CREATE', (intents) => gatewayMessage(world, m, intents), String(m.payload.id));
  }

  return {
    name: 'channel_f',
    channelConfig: { botToken: token, apiUrl: `${baseUrl()}/api` },
    botUserId: BOT_ID,
    botName: BOT_NAME,
    limit: { max: MAX_CONTENT, unit: 'chars' },
    guildId: GUILD_ID,
    defaultChannelId: GENERAL_CHANNEL_ID,
    outbound,
    rejections,
    acks,
    identifies: gateway.record.identifies,
    resumes: gateway.record.resumes,
    gatewayConnections: gateway.record.connections,
    heartbeatCount: () => gateway.record.heartbeats,
    lastIntents: () => gateway.record.identifies.filter((i) => i.ok).at(-1)?.intents,
    dmChannelId: (userId) => world.dmChannelFor(userId).id,
    getMessage: (id) => world.messages.get(id)?.payload,
    requestReconnect: () => gateway.requestReconnect(),
    invalidateSessions: () => gateway.invalidateSessions(),

    interactionAnswers,
    failNext: (failure) => void failures.push(failure),
    async press({ messageId, label, userId }) {
      const stored = world.messages.get(messageId);
      const button = stored?.fromBot ? componentButtons(stored.payload.components)?.find((b) => b.label === label) : undefined;
      if (!stored || !button) throw new Error(`fake discord: no bot message ${messageId} with a button "${label}"`);
      await waitForConnection();
      const user = world.ensureUser(userId);
      const dm = stored.channel.type === CHANNEL_TYPE.DM;
      const id = world.nextId();
      const interactionToken = `aW50ZXJhY3Rpb246${randomBytes(24).toString('hex')}`;
      openInteractions.set(id, interactionToken);
      const d = {
        id,
        application_id: BOT_ID,
        type: 3,
        data: { custom_id: button.value, component_type: 2 },
        channel_id: stored.channel.id,
        channel: world.channelPayload(stored.channel),
        ...(dm ? { user: world.userPayload(user) } : { guild_id: GUILD_ID, member: { ...world.memberPayload(user, true), permissions: '2248473465835073' } }),
        token: interactionToken,
        version: 1,
        message: stored.payload,
        app_permissions: '2248473465835073',
        locale: 'en-US',
        ...(dm ? {} : { guild_locale: 'en-US' }),
        entitlements: [],
        authorizing_integration_owners: dm ? { '1': user.id } : { '0': GUILD_ID },
        context: dm ? 1 : 0,
      };
      // Interactions need no intent: every session gets them.
      await gateway.dispatch('INTERACTION_CREATE', () => d);
      return { interactionId: id };
    },

    async deliver(msg: FakeInbound) {
      await waitForConnection();
      const { stored, announce } = world.storeInbound(msg);
      for (const channel of announce) await gateway.announceChannel(channel);
      await dispatchMessage(stored);
      return { messageId: String(stored.payload.id) };
    },

    async redeliver(messageId: string) {
      const stored = world.messages.get(messageId);
      if (!stored || stored.fromBot) throw new Error(`fake discord: no delivered message ${messageId}`);
      await waitForConnection();
      await dispatchMessage(stored);
    },

    addHistory(msg: FakeInbound) {
      const { stored, announce } = world.storeInbound(msg);
      for (const channel of announce) void gateway.announceChannel(channel);
      return { messageId: String(stored.payload.id) };
    },

    waitForOutbound: (pred, timeoutMs = HANG_MS) => waitFor(() => outbound.find(pred), timeoutMs, 'an outbound message matching the predicate'),

    waitForAck: (messageId, timeoutMs = HANG_MS) =>
      waitFor(() => acks.find((a) => a.messageId === messageId), timeoutMs, `a heartbeat/resume seq covering ${messageId}`),

    connected: () => gateway.connected(),
    waitForConnection,
    setRefuseConnections(value: boolean) {
      refuse = value;
    },
    dropConnections: () => gateway.drop(),

    async close() {
      await gateway.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// Re-exported for tests that build ids or assert on the fake's fixed objects.
export { BOT_ID as FAKE_DISCORD_BOT_ID, assertSnowflake };
