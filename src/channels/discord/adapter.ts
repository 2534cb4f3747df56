import {
  AttachmentBuilder,
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  Options,
  Partials,
  type Message,
  type SendableChannels,
  type TextBasedChannel,
} from 'discord.js';
import type { Logger } from '../../core/logger.js';
import { withTimeout } from '../../core/util/timeout.js';
import {
  ChannelError,
  type ChannelAdapter,
  type ChannelContext,
  type ChannelDeps,
  type InboundFile,
  type InboundImage,
  type InboundMessage,
  type OutboundFile,
  type ReplyTarget,
  type SentMessage,
} from '../types.js';
import { createLifecycle } from '../lifecycle.js';
import { describeCloseCode, toChannelError } from './errors.js';
import { renderDiscordMarkdown } from './format.js';
import { toInboundMessage, type DiscordSelf } from './inbound.js';
import { MAX_IMAGE_BYTES, MAX_UPLOAD_BYTES, readAttachment } from './media.js';

/** Options of channel_f as validated by index.ts. */
export interface DiscordOptions {
  botToken: string;
  botName?: string | undefined;
  /** REST base such as `http://127.0.0.1:P/api` (the gateway URL is discovered from it). */
  apiUrl?: string | undefined;
}

/** Discord counts characters (code points) of `content`; UTF-16 length is never smaller, so the bridge's count is safe. */
const LIMIT = { max: 2000, unit: 'chars' } as const;
/** How long stop() lets a pending login settle before destroying the client anyway. */
const STOP_WAIT_MS = 10_000;
/** Discord's page size for GET /channels/:id/messages. */
const HISTORY_PAGE = 100;

/**
 * channel_f over discord.js 14: the gateway for inbound messages, REST for everything outbound.
 *
 * Client choices (why):
 * - Partials.Channel: DM channels are never announced over the gateway, so without it DMs are dropped.
 * - MessageContent intent: without it guild messages that do not mention the bot arrive empty (group
 *   context, smart group mode); it must be enabled in the Developer Portal, else close code 4014.
 * - Message cache off (MessageManager: 0): the adapter never reads cached messages (history is
 *   fetched, edits go by id), so the default 200 messages per channel would only cost memory; and a
 *   cached id makes discord.js swallow a replayed MESSAGE_CREATE, while dedup belongs to the bridge.
 * - allowedMentions `users` only: model output containing `@everyone`, `@here` or a role never pings.
 * - failIfNotExists false: a reply to a message deleted meanwhile is still posted (without the quote).
 * - Re-identifying (after an invalid session) waits 5-6.5 s: @discordjs/ws spaces identifies as
 *   Discord requires. Kept as is; a plain drop resumes without identifying, so tests need no hook.
 */
export async function createDiscordAdapter(opts: DiscordOptions, deps: ChannelDeps): Promise<ChannelAdapter> {
  // --- state ---
  const name = deps.name;
  const lifecycle = createLifecycle(name, { connect, release });
  deps.log.addSecrets([opts.botToken]);
  let log: Logger = deps.log;
  let ctx: ChannelContext | undefined;
  let client: Client | undefined;
  /** login() of the current client, settled or not (release waits for it). */
  let loggingIn: Promise<unknown> = Promise.resolve();
  let reported: 'connected' | 'disconnected' | 'failed' = 'connected';
  let handoff: Promise<void> = Promise.resolve();

  // --- connection ---

  async function connect(context: ChannelContext, signal: AbortSignal): Promise<void> {
    ctx = context;
    log = context.log;
    const c = createClient();
    client = c;
    let fatal: ChannelError | undefined;
    let failStart: (err: Error) => void = () => undefined;
    const ready = new Promise<void>((resolve, reject) => {
      failStart = reject;
      c.once(Events.ClientReady, () => resolve());
      // release() removes the ready listener: without this a stop while connecting would leave start waiting.
      signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true });
    });
    ready.catch(() => undefined); // observed below; avoids an unhandled rejection if login fails first
    attach(c, (err) => {
      fatal = err instanceof ChannelError ? err : undefined;
      failStart(err);
    });
    try {
      const login = c.login(opts.botToken); // resolves before the guilds arrive: wait for clientReady too
      loggingIn = login.catch(() => undefined);
      await login;
      await ready;
    } catch (err) {
      if (client === c) client = undefined;
      await c.destroy().catch(() => undefined);
      // A final close code (e.g. 4014 with its hint) explains more than login's own rejection.
      throw fatal ?? toChannelError(name, 'cannot connect to the Discord gateway', err);
    }
    reported = 'connected';
    log.info(`connected as ${c.user?.tag ?? c.user?.id ?? '?'}`);
  }

  async function release(): Promise<void> {
    const c = client;
    client = undefined;
    if (c) {
      // discord.js 14.28: destroy() during login() does not stop it. The login's gateway request
      // completes afterwards and connects the shards anyway (reconnecting forever once the socket
      // drops), and a second destroy() is a no-op. So let a pending login settle first.
      await withTimeout(loggingIn, STOP_WAIT_MS);
      c.removeAllListeners();
      c.on(Events.Error, () => undefined); // late socket errors during destroy must not throw
      await c.destroy();
    }
    await handoff;
  }

  function createClient(): Client {
    const api = opts.apiUrl?.replace(/\/+$/, '').replace(/\/v\d+$/, '');
    return new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
      partials: [Partials.Channel],
      makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
      allowedMentions: { parse: ['users'], repliedUser: true },
      failIfNotExists: false,
      rest: { ...(api ? { api } : {}), retries: 1, timeout: 10_000 },
    });
  }

  function attach(c: Client, failStart: (err: Error) => void): void {
    c.on(Events.MessageCreate, (m) => onDiscordMessage(c, m));
    c.on(Events.ShardReconnecting, () => report('disconnected', 'gateway connection lost; reconnecting'));
    c.on(Events.ShardResume, () => report('connected'));
    c.on(Events.ShardReady, () => report('connected'));
    // Only for the close codes discord.js gives up on (4004, 4010-4014): nothing will reconnect.
    c.on(Events.ShardDisconnect, (ev) => {
      const reason = describeCloseCode(ev.code);
      failStart(new ChannelError(name, ev.code === 4004 ? 'auth' : 'other', reason)); // a no-op once started
      report('failed', reason);
    });
    c.on(Events.ShardError, (err) => log.warn(`gateway error: ${err.message}`));
    c.on(Events.Error, (err) => log.warn(`client error: ${err.message}`));
    c.on(Events.Warn, (message) => log.warn(message));
  }

  /** Status changes only (the lifecycle passes them on only while started). */
  function report(state: typeof reported, reason?: string): void {
    if (state === reported) return;
    reported = state;
    ctx?.onStatus(reason === undefined ? { state } : { state, reason });
  }

  // --- inbound ---

  function onDiscordMessage(c: Client, m: Message): void {
    let msg: InboundMessage | undefined;
    try {
      msg = toInboundMessage(m, self(c));
    } catch (err) {
      log.warn(`cannot read message ${m.id}: ${String(err)}`);
      return;
    }
    if (!msg) return;
    const message = msg;
    const to = ctx;
    if (!to) return;
    // One after another, so the bridge sees a chat's messages in gateway order.
    handoff = handoff.then(() => to.onMessage(message)).catch((err: unknown) => log.warn(`handing over ${message.messageId} failed: ${String(err)}`));
  }

  function self(c: Client): DiscordSelf {
    return { channel: name, botId: c.user?.id ?? '', ...(opts.botName ? { botName: opts.botName } : {}) };
  }

  // --- outbound ---

  function live(what: string): Client {
    lifecycle.assertStarted(what);
    if (!client) throw new ChannelError(name, 'not_connected', `${what}: not connected`);
    return client;
  }

  async function channelById(c: Client, id: string): Promise<TextBasedChannel & SendableChannels> {
    if (!/^\d{1,20}$/.test(id)) throw new ChannelError(name, 'not_found', `"${id}" is not a Discord id (a snowflake of digits)`);
    const ch = await c.channels.fetch(id);
    if (!ch?.isTextBased() || !ch.isSendable()) throw new ChannelError(name, 'not_found', `channel ${id} is not a text channel the bot can use`);
    return ch;
  }

  /** `send` takes a channel id, a DM channel id or a user id (`user:<id>` forces the user reading). */
  async function destination(c: Client, chatId: string): Promise<TextBasedChannel & SendableChannels> {
    const userId = /^user:(\d{1,20})$/.exec(chatId)?.[1];
    if (userId) return c.users.createDM(userId);
    try {
      return await channelById(c, chatId);
    } catch (err) {
      if (!(err instanceof DiscordAPIError && err.code === 10003)) throw err; // Unknown Channel: maybe a user id
      return c.users.createDM(chatId);
    }
  }

  async function post(ch: SendableChannels, markdown: string, replyTo?: string): Promise<Message | undefined> {
    const content = renderDiscordMarkdown(markdown);
    if (!content) return undefined; // Discord refuses empty messages (50006); there is nothing to show anyway
    return ch.send({ content, ...(replyTo ? { reply: { messageReference: replyTo, failIfNotExists: false } } : {}) });
  }

  function sent(chatId: string, m: Message): SentMessage {
    return { chatId, messageId: m.id, ...(m.channelId !== chatId ? { extra: { channelId: m.channelId } } : {}) };
  }

  return {
    name,
    limit: LIMIT,
    render: renderDiscordMarkdown,
    start: lifecycle.start,
    stop: lifecycle.stop,

    async reply(to: ReplyTarget, markdown: string) {
      const c = live('reply');
      try {
        const ch = await channelById(c, to.threadId ?? to.chatId);
        const m = await post(ch, markdown, to.messageId);
        return m && sent(to.chatId, m);
      } catch (err) {
        throw toChannelError(name, `reply in ${to.threadId ?? to.chatId}`, err);
      }
    },

    async send(chatId: string, markdown: string) {
      const c = live('send');
      try {
        const ch = await destination(c, chatId);
        const m = await post(ch, markdown);
        return m && sent(chatId, m);
      } catch (err) {
        throw toChannelError(name, `send to ${chatId}`, err);
      }
    },

    async edit(message: SentMessage, markdown: string) {
      const c = live('edit');
      const channelId = typeof message.extra?.channelId === 'string' ? message.extra.channelId : message.chatId;
      try {
        const ch = await channelById(c, channelId);
        await ch.messages.edit(message.messageId, { content: renderDiscordMarkdown(markdown) || '…' });
      } catch (err) {
        throw toChannelError(name, `edit ${message.messageId}`, err);
      }
    },

    async typing(to: ReplyTarget) {
      if (!lifecycle.isStarted() || !client) return;
      try {
        await (await channelById(client, to.threadId ?? to.chatId)).sendTyping();
      } catch (err) {
        log.debug(`typing in ${to.threadId ?? to.chatId} failed: ${String(err)}`);
      }
    },

    async readHistory(chatId: string, { since, limit }: { since: Date; limit: number }) {
      const c = live('readHistory');
      try {
        const ch = await channelById(c, chatId);
        const out: InboundMessage[] = [];
        let before: string | undefined;
        // Newest first, page by page, until older than `since` or `limit` reached: the newest
        // `limit` messages since `since`, returned oldest first.
        while (out.length < limit) {
          const want = Math.min(HISTORY_PAGE, limit - out.length);
          const page = [...(await ch.messages.fetch({ limit: want, ...(before ? { before } : {}) })).values()];
          for (const m of page) {
            if (m.createdTimestamp < since.getTime() || out.length >= limit) break;
            const msg = toInboundMessage(m, self(c));
            if (msg) out.push(msg);
          }
          const oldest = page.at(-1);
          if (page.length < want || !oldest || oldest.createdTimestamp < since.getTime()) break;
          before = oldest.id;
        }
        return out.sort((a, b) => a.ts - b.ts || compareSnowflakes(a.messageId, b.messageId));
      } catch (err) {
        throw toChannelError(name, `history of ${chatId}`, err);
      }
    },

    async downloadImage(image: InboundImage) {
      lifecycle.assertStarted('downloadImage');
      try {
        return await readAttachment(name, image, { maxBytes: MAX_IMAGE_BYTES });
      } catch (err) {
        throw toChannelError(name, `download ${image.fileName ?? 'image'}`, err);
      }
    },

    async downloadFile(file: InboundFile, { maxBytes }: { maxBytes: number }) {
      lifecycle.assertStarted('downloadFile');
      try {
        return await readAttachment(name, file, { maxBytes });
      } catch (err) {
        throw toChannelError(name, `download ${file.fileName ?? 'file'}`, err);
      }
    },

    maxFileBytes: MAX_UPLOAD_BYTES,

    /** One attachment in the reply's channel or thread; Discord shows pictures inline by itself. */
    async sendFile(to: ReplyTarget, file: OutboundFile) {
      const c = live('sendFile');
      try {
        const ch = await channelById(c, to.threadId ?? to.chatId);
        return sent(to.chatId, await ch.send({ files: [new AttachmentBuilder(file.data, { name: file.name })] }));
      } catch (err) {
        throw toChannelError(name, `upload of ${file.name} in ${to.threadId ?? to.chatId}`, err);
      }
    },
  };
}

// --- internal ---

function compareSnowflakes(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
