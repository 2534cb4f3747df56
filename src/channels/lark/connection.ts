import * as lark from '@larksuiteoapi/node-sdk';
import type { Logger } from '../../core/logger.js';
import type { LifecycleSteps } from '../lifecycle.js';
import { type ChannelContext, ChannelError, type InboundMessage } from '../types.js';
import { type LarkCardAction, type LarkCardActionAnswer, type LarkPromptPlace, normaliseLarkCardAction } from './approval.js';
import { LarkChatKinds } from './chats.js';
import { toLarkChannelError } from './errors.js';
import { fromReceiveEvent, type LarkReceiveEvent, type LarkSelf } from './inbound.js';
import { createLarkSdkLogger, type LarkSdkLogger } from './logger.js';
import { createLarkLongConnection, type LarkLongConnection } from './long-connection.js';
import { createLarkRest, type LarkRest } from './rest.js';

/** Options of channel_a as validated by index.ts. */
export interface LarkOptions {
  appId: string;
  appSecret: string;
  /** Open platform base URL (index.ts turns `feishu` / `lark` into theirs); Feishu's by default. */
  domain?: string | undefined;
  pingTimeout?: number | undefined;
}

const DEFAULT_DOMAIN = 'https://open.feishu.cn';
/** WSClient.start() silently does nothing for other app ids; fail loudly instead. */
const APP_ID = /^cli_[0-9a-fA-F]{16}$/;

/**
 * The connection side of channel_a: the app's credentials checked over REST (bot/v3/info, which
 * also names the bot), the long connection (long-connection.ts) and the events and card presses
 * it brings in, each acknowledged once the bridge has it. Also holds the REST client both sides
 * call, with a token cache of its own.
 */
export class LarkConnection implements LifecycleSteps {
  /** The adapter's logger until connect(), the context's from then on. */
  log: Logger;
  readonly rest: LarkRest;
  readonly chats: LarkChatKinds;
  /** The open platform's base URL, without a trailing slash. */
  readonly domain: string;
  /** The bot's identity, set before start() resolves and cleared by release(). */
  self: LarkSelf | undefined;
  private readonly name: string;
  private readonly opts: LarkOptions;
  private readonly sdkLogger: LarkSdkLogger;
  /** Approval cards sent, by message id: a press names the chat but not its kind or thread. */
  private readonly prompts: ReadonlyMap<string, LarkPromptPlace>;
  private ctx: ChannelContext | undefined;
  private conn: LarkLongConnection | undefined;
  private reported: 'connected' | 'disconnected' = 'connected';
  /** Hand-overs in arrival order; release() waits for the last. */
  private handoff: Promise<void> = Promise.resolve();

  constructor(name: string, opts: LarkOptions, log: Logger, prompts: ReadonlyMap<string, LarkPromptPlace>) {
    this.name = name;
    this.opts = opts;
    this.log = log;
    this.prompts = prompts;
    this.domain = (opts.domain ?? DEFAULT_DOMAIN).replace(/\/+$/, '');
    this.sdkLogger = createLarkSdkLogger(() => this.log);
    // Per-adapter token cache: the SDK's default cache is process-wide and keyed by appId only.
    const client = new lark.Client({
      appId: opts.appId,
      appSecret: opts.appSecret,
      domain: this.domain,
      cache: new lark.DefaultCache(),
      logger: this.sdkLogger,
      loggerLevel: lark.LoggerLevel.warn,
    });
    this.rest = createLarkRest(client);
    this.chats = new LarkChatKinds(this.rest, () => this.log);
  }

  async connect(ctx: ChannelContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    const { name, opts, domain } = this;
    if (!APP_ID.test(opts.appId)) throw new ChannelError(name, 'auth', `appId "${opts.appId}" is not cli_ followed by 16 hex digits`);
    let botOpenId: string;
    try {
      botOpenId = await this.rest.botOpenId(); // also proves appId/appSecret before the socket
    } catch (err) {
      throw toLarkChannelError(name, `cannot use the bot API at ${domain} (check appId / appSecret)`, err);
    }
    signal.throwIfAborted();
    const identity: LarkSelf = { channel: name, botOpenId };
    const lc = createLarkLongConnection({
      appId: opts.appId,
      appSecret: opts.appSecret,
      domain,
      pingTimeout: opts.pingTimeout,
      sdkLogger: this.sdkLogger,
      onEvent: (event) => this.onEvent(identity, event),
      onCardAction: (action) => this.onCardAction(action),
      onStatus: (state, reason) => this.report(state, reason),
    });
    this.conn = lc;
    try {
      await lc.start();
    } catch (err) {
      if (this.conn === lc) this.conn = undefined;
      lc.stop();
      const kind = /514|auth/i.test(String(err)) ? 'auth' : 'network';
      throw new ChannelError(name, kind, `long connection refused: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    this.self = identity;
    this.reported = 'connected';
  }

  async release(): Promise<void> {
    this.self = undefined;
    this.conn?.stop(); // the SDK first: no more events, no timers
    this.conn = undefined;
    await this.handoff;
  }

  private report(state: LarkConnection['reported'], reason?: string): void {
    if (state === this.reported && state === 'connected') return;
    this.reported = state;
    this.ctx?.onStatus(reason === undefined ? { state } : { state, reason });
  }

  // --- inbound ---

  /** In order, and only acked once the bridge has it: a throw acks with 500 so Lark delivers it again. */
  private handOver(to: ChannelContext, message: InboundMessage): Promise<void> {
    const next = this.handoff.then(() => to.onMessage(message));
    this.handoff = next.catch(() => undefined);
    return next;
  }

  /** Runs inside the SDK's event handler: the ack goes out when this resolves, and Lark wants it within 3 s. */
  private async onEvent(me: LarkSelf, event: LarkReceiveEvent): Promise<void> {
    let msg: InboundMessage | undefined;
    try {
      msg = fromReceiveEvent(event, me);
    } catch (err) {
      this.log.warn(`cannot read event for ${event.message?.message_id ?? '?'}: ${String(err)}`);
      return; // acked: a redelivery would not read any better
    }
    if (!msg) return;
    this.chats.remember(msg.chatId, msg.chatType);
    const to = this.ctx;
    if (!to) return;
    await this.handOver(to, msg);
  }

  /** Runs inside the SDK's handler too: its answer is the callback's, shown by the client as a toast. */
  private async onCardAction(action: LarkCardAction): Promise<LarkCardActionAnswer> {
    const promptId = action.context?.open_message_id ?? action.open_message_id ?? '';
    const chatId = action.context?.open_chat_id ?? action.open_chat_id ?? '';
    const place = this.prompts.get(promptId) ?? { chatType: chatId ? await this.chats.of(chatId) : 'group' };
    const msg = normaliseLarkCardAction(this.name, action, place);
    const to = this.ctx;
    if (!msg || !to) return { toast: { type: 'warning', content: 'This button no longer does anything.' } };
    try {
      await this.handOver(to, msg);
    } catch (err) {
      this.log.warn(`cannot hand over the press on ${promptId}: ${String(err)}`);
      return { toast: { type: 'error', content: 'Your answer was not received; please try again.' } };
    }
    return { toast: { type: 'info', content: 'Answer received.' } };
  }
}
