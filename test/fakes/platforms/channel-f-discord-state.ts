/**
 * The fake Discord's world: one guild, its channels, DM channels, users, stored messages and
 * attachments, plus the builders that turn them into Discord API v10 JSON objects. No I/O here;
 * the REST and gateway halves (channel-f-discord-rest.ts, channel-f-discord-gateway.ts) share it.
 */
import type { FakeImage, FakeInbound } from './types.js';

type Json = Record<string, unknown>;

/** Gateway intent bits the fake enforces (discord-api-types GatewayIntentBits). */
export const INTENT = { Guilds: 1 << 0, GuildMessages: 1 << 9, DirectMessages: 1 << 12, MessageContent: 1 << 15 };
export const CHANNEL_TYPE = { GuildText: 0, DM: 1, PublicThread: 11 } as const;
export const BOT_ID = '1300000000000000001';
export const GUILD_ID = '1300000000000000100';
export const GENERAL_CHANNEL_ID = '1300000000000000200';
export const BOT_NAME = 'servicebot';
export const MAX_CONTENT = 2000;

const DISCORD_EPOCH = 1420070400000n;
/** View, send, embed, attach, read history, mention everyone, add reactions, send in threads. */
const EVERYONE_PERMISSIONS = String((1n << 10n) | (1n << 11n) | (1n << 14n) | (1n << 15n) | (1n << 16n) | (1n << 6n) | (1n << 38n));

export interface FakeUser {
  id: string;
  username: string;
  bot: boolean;
}
export interface FakeChannel {
  id: string;
  type: 0 | 1 | 11;
  name: string;
  parentId?: string;
  recipientId?: string;
  ownerId?: string;
  lastMessageId: string | null;
  createdAt: number;
}
export interface StoredMessage {
  payload: Json;
  channel: FakeChannel;
  mentionsBot: boolean;
  fromBot: boolean;
}
export interface StoredFile {
  mimeType: string;
  data: Buffer;
}

/** Discord ids are snowflakes; discord.js calls BigInt(id) on them, so anything else crashes it. */
export function assertSnowflake(id: string, what: string): void {
  if (!/^\d{1,20}$/.test(id)) throw new Error(`fake discord: ${what} "${id}" is not a snowflake (decimal digits)`);
}

export function createWorld(baseUrl: () => string) {
  let increment = 0n;
  const users = new Map<string, FakeUser>([[BOT_ID, { id: BOT_ID, username: BOT_NAME, bot: true }]]);
  const channels = new Map<string, FakeChannel>();
  const messages = new Map<string, StoredMessage>();
  const files = new Map<string, StoredFile>();
  const dmByUser = new Map<string, string>();
  const createdAt = Date.now();
  channels.set(GENERAL_CHANNEL_ID, { id: GENERAL_CHANNEL_ID, type: 0, name: 'general', lastMessageId: null, createdAt });

  /** A snowflake whose timestamp part is `ts`, so ordering by id is ordering by time. */
  function nextId(ts = Date.now()): string {
    increment = (increment + 1n) & 0xfffn;
    return String(((BigInt(ts) - DISCORD_EPOCH) << 22n) | (1n << 17n) | increment);
  }

  function ensureUser(id: string, name?: string, bot = false): FakeUser {
    assertSnowflake(id, 'user id');
    let user = users.get(id);
    if (!user) users.set(id, (user = { id, username: name ?? `user${id}`, bot }));
    else if (name && !user.bot) user.username = name;
    return user;
  }

  function userPayload(u: FakeUser): Json {
    return {
      id: u.id,
      username: u.username,
      global_name: u.bot ? null : u.username,
      discriminator: '0',
      avatar: null,
      public_flags: 0,
      flags: 0,
      banner: null,
      accent_color: null,
      avatar_decoration_data: null,
      primary_guild: null,
      ...(u.bot ? { bot: true } : {}),
    };
  }

  function memberPayload(u: FakeUser, withUser: boolean): Json {
    return {
      ...(withUser ? { user: userPayload(u) } : {}),
      roles: [],
      nick: null,
      avatar: null,
      banner: null,
      joined_at: new Date(createdAt).toISOString(),
      premium_since: null,
      deaf: false,
      mute: false,
      flags: 0,
      pending: false,
      communication_disabled_until: null,
    };
  }

  function channelPayload(c: FakeChannel, inGuildCreate = false): Json {
    const base = { id: c.id, type: c.type, last_message_id: c.lastMessageId, flags: 0 };
    if (c.type === CHANNEL_TYPE.DM) {
      const recipient = users.get(c.recipientId ?? '');
      return { ...base, recipients: recipient ? [userPayload(recipient)] : [] };
    }
    const guild = inGuildCreate ? {} : { guild_id: GUILD_ID };
    if (c.type === CHANNEL_TYPE.PublicThread) {
      const iso = new Date(c.createdAt).toISOString();
      return {
        ...base,
        guild_id: GUILD_ID,
        name: c.name,
        parent_id: c.parentId,
        owner_id: c.ownerId,
        rate_limit_per_user: 0,
        message_count: 0,
        member_count: 1,
        total_message_sent: 0,
        thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: iso, locked: false, create_timestamp: iso },
      };
    }
    return {
      ...base,
      ...guild,
      name: c.name,
      position: 0,
      parent_id: null,
      topic: null,
      nsfw: false,
      rate_limit_per_user: 0,
      permission_overwrites: [],
    };
  }

  /** A guild text channel; `created` tells the caller to dispatch CHANNEL_CREATE. */
  function ensureGuildChannel(id = GENERAL_CHANNEL_ID): { channel: FakeChannel; created: boolean } {
    assertSnowflake(id, 'channel id');
    const existing = channels.get(id);
    if (existing) {
      if (existing.type !== CHANNEL_TYPE.GuildText) throw new Error(`fake discord: channel ${id} is not a guild text channel`);
      return { channel: existing, created: false };
    }
    const channel: FakeChannel = { id, type: 0, name: `channel-${id.slice(-4)}`, lastMessageId: null, createdAt: Date.now() };
    channels.set(id, channel);
    return { channel, created: true };
  }

  function ensureThread(parentId: string, threadId: string, ownerId: string): { channel: FakeChannel; created: boolean } {
    assertSnowflake(threadId, 'thread id');
    const existing = channels.get(threadId);
    if (existing) return { channel: existing, created: false };
    const channel: FakeChannel = {
      id: threadId,
      type: 11,
      name: `thread-${threadId.slice(-4)}`,
      parentId,
      ownerId,
      lastMessageId: null,
      createdAt: Date.now(),
    };
    channels.set(threadId, channel);
    return { channel, created: true };
  }

  /** The DM channel between the bot and a user (Discord never announces DM channels over the gateway). */
  function dmChannelFor(userId: string): FakeChannel {
    ensureUser(userId);
    const id = dmByUser.get(userId);
    if (id) return channels.get(id)!;
    const channel: FakeChannel = { id: nextId(), type: 1, name: '', recipientId: userId, lastMessageId: null, createdAt: Date.now() };
    channels.set(channel.id, channel);
    dmByUser.set(userId, channel.id);
    return channel;
  }

  function guildCreatePayload(): Json {
    const bot = users.get(BOT_ID)!;
    const guildChannels = [...channels.values()].filter((c) => c.type === CHANNEL_TYPE.GuildText);
    const threads = [...channels.values()].filter((c) => c.type === CHANNEL_TYPE.PublicThread);
    return {
      id: GUILD_ID,
      name: 'Fake Guild',
      icon: null,
      splash: null,
      discovery_splash: null,
      banner: null,
      owner_id: '1300000000000000002',
      afk_channel_id: null,
      afk_timeout: 300,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      mfa_level: 0,
      nsfw_level: 0,
      premium_tier: 0,
      premium_subscription_count: 0,
      system_channel_id: GENERAL_CHANNEL_ID,
      system_channel_flags: 0,
      rules_channel_id: null,
      public_updates_channel_id: null,
      safety_alerts_channel_id: null,
      preferred_locale: 'en-US',
      features: [],
      emojis: [],
      stickers: [],
      application_id: null,
      vanity_url_code: null,
      description: null,
      max_members: 500000,
      max_video_channel_users: 25,
      premium_progress_bar_enabled: false,
      roles: [
        {
          id: GUILD_ID,
          name: '@everyone',
          permissions: EVERYONE_PERMISSIONS,
          position: 0,
          color: 0,
          hoist: false,
          managed: false,
          mentionable: false,
          flags: 0,
          icon: null,
          unicode_emoji: null,
        },
      ],
      joined_at: new Date(createdAt).toISOString(),
      large: false,
      unavailable: false,
      member_count: users.size,
      members: [memberPayload(bot, true)],
      channels: guildChannels.map((c) => channelPayload(c, true)),
      threads: threads.map((c) => channelPayload(c, true)),
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
      lazy: true,
    };
  }

  function addFile(channelId: string, file: FakeImage, index: number): Json {
    const id = nextId();
    const filename = file.fileName ?? `image-${index}.${file.mimeType.split('/')[1] ?? 'bin'}`;
    files.set(id, { mimeType: file.mimeType, data: file.data });
    const url = `${baseUrl()}/attachments/${channelId}/${id}/${encodeURIComponent(filename)}`;
    return { id, filename, size: file.data.length, url, proxy_url: url, content_type: file.mimeType };
  }

  function store(channel: FakeChannel, payload: Json, mentionsBot: boolean, fromBot: boolean): StoredMessage {
    const stored = { payload, channel, mentionsBot, fromBot };
    messages.set(String(payload.id), stored);
    const last = channel.lastMessageId;
    if (!last || BigInt(String(payload.id)) > BigInt(last)) channel.lastMessageId = String(payload.id);
    return stored;
  }

  function basePayload(id: string, channel: FakeChannel, author: FakeUser, content: string, ts: number): Json {
    return {
      type: 0,
      id,
      channel_id: channel.id,
      ...(channel.type === CHANNEL_TYPE.DM ? {} : { guild_id: GUILD_ID }),
      author: userPayload(author),
      content,
      mentions: [],
      mention_roles: [],
      mention_everyone: false,
      attachments: [],
      embeds: [],
      components: [],
      pinned: false,
      tts: false,
      flags: 0,
      timestamp: new Date(ts).toISOString(),
      edited_timestamp: null,
    };
  }

  /** Builds and stores a user's message; returns the new channels the gateway must announce first. */
  function storeInbound(msg: FakeInbound): { stored: StoredMessage; announce: FakeChannel[] } {
    const author = ensureUser(msg.userId, msg.userName, Boolean(msg.fromBot));
    const announce: FakeChannel[] = [];
    let channel: FakeChannel;
    if (msg.chatType === 'direct') channel = dmChannelFor(msg.userId);
    else {
      const parent = ensureGuildChannel(msg.chatId ?? GENERAL_CHANNEL_ID);
      if (parent.created) announce.push(parent.channel);
      channel = parent.channel;
      if (msg.threadId) {
        const thread = ensureThread(parent.channel.id, msg.threadId, author.id);
        if (thread.created) announce.push(thread.channel);
        channel = thread.channel;
      }
    }
    const ts = msg.ts ?? Date.now();
    if (msg.messageId !== undefined) assertSnowflake(msg.messageId, 'message id');
    const id = msg.messageId ?? nextId(ts);
    if (messages.has(id)) throw new Error(`fake discord: message ${id} already exists; use redeliver()`);
    let content = msg.text;
    const mentioned: FakeUser[] = [];
    if (msg.mentionBot) {
      if (!content.includes(`<@${BOT_ID}>`) && !content.includes(`<@!${BOT_ID}>`)) content = `<@${BOT_ID}> ${content}`;
      mentioned.push(users.get(BOT_ID)!);
    }
    for (const m of msg.mentionUsers ?? []) {
      const user = ensureUser(m.userId, m.userName);
      if (!content.includes(`<@${user.id}>`) && !content.includes(`<@!${user.id}>`)) content = `${content} <@${user.id}>`;
      mentioned.push(user);
    }
    const payload = basePayload(id, channel, author, content, ts);
    payload.mentions = mentioned.map((u) => ({ ...userPayload(u), ...(channel.type === 1 ? {} : { member: memberPayload(u, false) }) }));
    payload.attachments = [...(msg.images ?? []), ...(msg.files ?? [])].map((img, i) => addFile(channel.id, img, i));
    if (msg.voice) {
      // A voice message: one ogg attachment with its length and waveform, and the IS_VOICE_MESSAGE flag (1 << 13).
      const voice = { ...msg.voice, fileName: msg.voice.fileName ?? 'voice-message.ogg' };
      const waveform = Buffer.alloc(32, 0x40).toString('base64');
      payload.attachments = [{ ...addFile(channel.id, voice, 0), duration_secs: msg.voice.durationSeconds ?? 3, waveform }];
      payload.flags = 1 << 13;
    }
    return { stored: store(channel, payload, Boolean(msg.mentionBot), false), announce };
  }

  /** Stores a message the bot created through REST and returns it. */
  function storeBotMessage(channel: FakeChannel, body: Json, uploaded: FakeImage[]): StoredMessage {
    const payload = basePayload(nextId(), channel, users.get(BOT_ID)!, String(body.content ?? ''), Date.now());
    if (Array.isArray(body.embeds)) payload.embeds = body.embeds;
    if (Array.isArray(body.components)) payload.components = body.components;
    if (body.nonce !== undefined) payload.nonce = body.nonce;
    payload.attachments = uploaded.map((f, i) => addFile(channel.id, f, i));
    const ref = body.message_reference as Json | undefined;
    const referenced = ref?.message_id ? messages.get(String(ref.message_id)) : undefined;
    if (referenced) {
      payload.type = 19;
      payload.message_reference = { type: 0, channel_id: channel.id, message_id: referenced.payload.id, ...(channel.type === 1 ? {} : { guild_id: GUILD_ID }) };
      payload.referenced_message = referenced.payload;
    }
    return store(channel, payload, false, true);
  }

  /** GET /channels/:id/messages semantics: newest first, before/after/around by snowflake, limit 1-100. */
  function history(channelId: string, q: URLSearchParams): Json[] {
    const limit = Number(q.get('limit') ?? 50);
    const all = [...messages.values()]
      .filter((m) => m.channel.id === channelId)
      .sort((a, b) => (BigInt(String(b.payload.id)) > BigInt(String(a.payload.id)) ? 1 : -1));
    const id = (m: StoredMessage) => BigInt(String(m.payload.id));
    const before = q.get('before'),
      after = q.get('after'),
      around = q.get('around');
    let picked: StoredMessage[];
    if (before) picked = all.filter((m) => id(m) < BigInt(before)).slice(0, limit);
    else if (after) picked = all.filter((m) => id(m) > BigInt(after)).slice(-limit);
    else if (around) {
      const newer = all.filter((m) => id(m) >= BigInt(around)).slice(-Math.ceil(limit / 2));
      picked = [...newer, ...all.filter((m) => id(m) < BigInt(around)).slice(0, limit - newer.length)];
    } else picked = all.slice(0, limit);
    return picked.map((m) => m.payload);
  }

  return {
    users,
    channels,
    messages,
    files,
    nextId,
    ensureUser,
    userPayload,
    memberPayload,
    channelPayload,
    ensureGuildChannel,
    dmChannelFor,
    guildCreatePayload,
    storeInbound,
    storeBotMessage,
    history,
    botUser: () => users.get(BOT_ID)!,
  };
}

export type FakeDiscordWorld = ReturnType<typeof createWorld>;
