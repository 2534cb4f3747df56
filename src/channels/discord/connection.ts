import { type ButtonInteraction, Client, Events, GatewayIntentBits, type Interaction, type Message, Options, Partials } from 'discord.js';
import type { Logger } from '../../core/logger.js';
import { withTimeout } from '../../core/util/timeout.js';
import type { LifecycleSteps } from '../lifecycle.js';
import { type ChannelContext, ChannelError, type InboundMessage } from '../types.js';
import { normaliseDiscordButtonPress } from './approval.js';
import { describeCloseCode, toDiscordChannelError } from './errors.js';
import { type DiscordSelf, toInboundMessage } from './inbound.js';
import { createRestAgent, type RestAgent } from './rest-agent.js';

/** Options of channel_f as validated by index.ts. */
export interface DiscordOptions {
  botToken: string;
  botName?: string | undefined;
  /** REST base such as `http://127.0.0.1:P/api` (the gateway URL is discovered from it). */
  apiUrl?: string | undefined;
}

/** How long stop() lets a pending login settle before destroying the client anyway. */
const STOP_WAIT_MS = 10_000;

/**
 * The connection side of channel_f: login, discord.js's gateway (it resumes and re-identifies by
 * itself; we report its shard events), and the messages and button presses it brings in.
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
export class DiscordConnection implements LifecycleSteps {
  /** The adapter's logger until connect(), the context's from then on. */
  log: Logger;
  /** The logged-in client (REST calls go through it too); undefined before connect and after release. */
  client: Client | undefined;
  /** The REST calls' HTTP agent (rest-agent.ts), one per client, closed with it. */
  private agent: RestAgent | undefined;
  private readonly name: string;
  private readonly opts: DiscordOptions;
  private ctx: ChannelContext | undefined;
  /** login() of the current client, settled or not (release waits for it). */
  private loggingIn: Promise<unknown> = Promise.resolve();
  private reported: 'connected' | 'disconnected' | 'failed' = 'connected';
  /** Hand-overs run one after another, so the bridge sees a chat's messages in gateway order. */
  private handoff: Promise<void> = Promise.resolve();

  constructor(name: string, opts: DiscordOptions, log: Logger) {
    this.name = name;
    this.opts = opts;
    this.log = log;
  }

  async connect(ctx: ChannelContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    const c = this.createClient();
    this.client = c;
    let fatal: ChannelError | undefined;
    let failStart: (err: Error) => void = () => undefined;
    const ready = new Promise<void>((resolve, reject) => {
      failStart = reject;
      c.once(Events.ClientReady, () => resolve());
      // release() removes the ready listener: without this a stop while connecting would leave start waiting.
      signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true });
    });
    ready.catch(() => undefined); // observed below; avoids an unhandled rejection if login fails first
    this.attach(c, (err) => {
      fatal = err instanceof ChannelError ? err : undefined;
      failStart(err);
    });
    try {
      const login = c.login(this.opts.botToken); // resolves before the guilds arrive: wait for clientReady too
      this.loggingIn = login.catch(() => undefined);
      await login;
      await ready;
    } catch (err) {
      if (this.client === c) this.client = undefined;
      await c.destroy().catch(() => undefined);
      await this.closeAgent();
      // A final close code (e.g. 4014 with its hint) explains more than login's own rejection.
      throw fatal ?? toDiscordChannelError(this.name, 'cannot connect to the Discord gateway', err);
    }
    this.reported = 'connected';
    this.log.info(`connected as ${c.user?.tag ?? c.user?.id ?? '?'}`);
  }

  async release(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (c) {
      // discord.js 14.28: destroy() during login() does not stop it. The login's gateway request
      // completes afterwards and connects the shards anyway (reconnecting forever once the socket
      // drops), and a second destroy() is a no-op. So let a pending login settle first.
      await withTimeout(this.loggingIn, STOP_WAIT_MS);
      c.removeAllListeners();
      c.on(Events.Error, () => undefined); // late socket errors during destroy must not throw
      await c.destroy();
    }
    await this.closeAgent();
    await this.handoff;
  }

  private async closeAgent(): Promise<void> {
    const agent = this.agent;
    this.agent = undefined;
    // close() lets a send under way finish; a platform that never answers does not hold up stop.
    if (!agent) return;
    const closed = await withTimeout(
      agent.close().then(() => true),
      STOP_WAIT_MS,
    );
    if (!closed) await agent.destroy();
  }

  /** Who the bot is on `c`, for reading its messages (inbound and history alike). */
  self(c: Client): DiscordSelf {
    return { channel: this.name, botId: c.user?.id ?? '', ...(this.opts.botName ? { botName: this.opts.botName } : {}) };
  }

  // --- connecting ---

  private createClient(): Client {
    const api = this.opts.apiUrl?.replace(/\/+$/, '').replace(/\/v\d+$/, '');
    this.agent = createRestAgent();
    return new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
      partials: [Partials.Channel],
      makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
      allowedMentions: { parse: ['users'], repliedUser: true },
      failIfNotExists: false,
      rest: { ...(api ? { api } : {}), agent: this.agent, retries: 1, timeout: 10_000 },
    });
  }

  private attach(c: Client, failStart: (err: Error) => void): void {
    c.on(Events.MessageCreate, (m) => this.onDiscordMessage(c, m));
    c.on(Events.InteractionCreate, (i) => this.onInteraction(i));
    c.on(Events.ShardReconnecting, () => this.report('disconnected', 'gateway connection lost; reconnecting'));
    c.on(Events.ShardResume, () => this.report('connected'));
    c.on(Events.ShardReady, () => this.report('connected'));
    // Only for the close codes discord.js gives up on (4004, 4010-4014): nothing will reconnect.
    c.on(Events.ShardDisconnect, (ev) => {
      const reason = describeCloseCode(ev.code);
      failStart(new ChannelError(this.name, ev.code === 4004 ? 'auth' : 'other', reason)); // a no-op once started
      this.report('failed', reason);
    });
    c.on(Events.ShardError, (err) => this.log.warn(`gateway error: ${err.message}`));
    c.on(Events.Error, (err) => this.log.warn(`client error: ${err.message}`));
    c.on(Events.Warn, (message) => this.log.warn(message));
  }

  /** Status changes only (the lifecycle passes them on only while started). */
  private report(state: DiscordConnection['reported'], reason?: string): void {
    if (state === this.reported) return;
    this.reported = state;
    this.ctx?.onStatus(reason === undefined ? { state } : { state, reason });
  }

  // --- inbound ---

  private onDiscordMessage(c: Client, m: Message): void {
    let msg: InboundMessage | undefined;
    try {
      msg = toInboundMessage(m, this.self(c));
    } catch (err) {
      this.log.warn(`cannot read message ${m.id}: ${String(err)}`);
      return;
    }
    if (!msg) return;
    const message = msg;
    const to = this.ctx;
    if (!to) return;
    this.handoff = this.handoff
      .then(() => to.onMessage(message))
      .catch((err: unknown) => this.log.warn(`handing over ${message.messageId} failed: ${String(err)}`));
  }

  /**
   * An approval button was pressed: its command goes in as a message from the presser (in turn
   * with messages). The interaction is acknowledged at once without changing the message: Discord
   * shows "This interaction failed" after 3 s without it and never redelivers a press, so waiting
   * for the hand-over would gain nothing. The buttons stay for whoever may answer.
   */
  private onInteraction(i: Interaction): void {
    if (!i.isButton()) return;
    i.deferUpdate().catch((err: unknown) => this.log.debug(`acknowledging button press ${i.id} failed: ${String(err)}`));
    const press = this.readPress(i);
    const to = this.ctx;
    if (!press || !to) return;
    this.handoff = this.handoff
      .then(() => to.onMessage(press))
      .catch((err: unknown) => this.log.warn(`handing over button press ${i.id} failed: ${String(err)}`));
  }

  private readPress(i: ButtonInteraction): InboundMessage | undefined {
    const parentId = i.channel?.isThread() ? i.channel.parentId : undefined;
    return normaliseDiscordButtonPress(this.name, {
      id: i.id,
      customId: i.customId,
      channelId: i.channelId,
      parentId,
      inGuild: i.inGuild(),
      user: { id: i.user.id, globalName: i.user.globalName, username: i.user.username },
      messageId: i.message.id,
    });
  }
}
