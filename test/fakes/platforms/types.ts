/**
 * The shape every fake IM platform server implements. A fake speaks its platform's real wire
 * protocol on 127.0.0.1 so that the platform's real SDK (inside our channel adapter) can be pointed
 * at it through the adapter's base-URL field. Tests drive it from the platform side (deliver a
 * message as a user would) and assert on what the bot sent (outbound).
 */

export interface FakeImage {
  mimeType: string;
  data: Buffer;
  fileName?: string;
}

/** A message a user sends to the bot, delivered through the platform's real protocol. */
export interface FakeInbound {
  chatType: 'direct' | 'group';
  /** Group chat / channel id (group only). For a DM the fake derives the DM chat from userId. */
  chatId?: string;
  userId: string;
  userName?: string;
  text: string;
  /** Group only: the message @mentions the bot the platform's own way (entity, <@id>, mentions[]). */
  mentionBot?: boolean;
  /** Other users mentioned (to prove only the bot's own mention is stripped). */
  mentionUsers?: Array<{ userId: string; userName: string }>;
  /** Thread / topic id on platforms that have threads. */
  threadId?: string;
  /** Platform message id; generated when absent. */
  messageId?: string;
  /** Sent by another bot (Slack bot_id, Telegram is_bot, Discord author.bot, Lark sender_type app), where the fake models it. */
  fromBot?: boolean;
  /** Unix ms; defaults to now. Used for history reads. */
  ts?: number;
  images?: FakeImage[];
  /** Documents (not pictures), sent the platform's way for files; `fileName` is what the user sees. */
  files?: FakeImage[];
  /**
   * A voice note recorded in the app, sent the platform's way for one (Telegram `voice`, a Slack
   * audio clip, a Discord voice message, a Lark `audio` message, a DingTalk `audio` message), where
   * the fake models it. `recognition`: the platform's own transcript, where it makes one (DingTalk).
   */
  /** `gone`: the platform no longer serves the recording (its download fails), where it is fetched apart from the message. */
  voice?: FakeImage & { durationSeconds?: number; recognition?: string; gone?: boolean };
}

/** A file the bot sent, as the platform stored it. */
export interface FakeSentFile {
  name: string;
  mimeType: string;
  data: Buffer;
  /** Shown inline as a picture, or as a file to download. */
  as: 'image' | 'file';
}

/** Something the bot did on the platform (a reply, a proactive send, an edit, a stream frame). */
export interface FakeOutbound {
  kind: 'reply' | 'send' | 'edit' | 'stream' | 'typing';
  /** The platform chat the message went to (channel id, chat id, user id for DMs, as the platform names it). */
  chatId: string;
  /** The text as a user would see it (decoded from the platform's format). */
  text: string;
  /** The platform's format marker (parse_mode, msg_type, msgtype, 'mrkdwn', ...). */
  format?: string;
  /** Id of the created or edited message. */
  messageId?: string;
  /** For a reply: the inbound message it answers, where the protocol names it. */
  replyTo?: string;
  threadId?: string;
  /** For streams: whether this frame finished the stream. */
  finished?: boolean;
  /** A file the message carries (an upload the bot made); `text` is then its caption, if any. */
  file?: FakeSentFile;
  /** Buttons the message carries (Telegram inline keyboard, Slack actions block), in order: the label shown and the value a press sends. */
  buttons?: FakeButton[];
  /** The request body as received, for protocol-level assertions. */
  raw: unknown;
  at: number;
}

export interface FakeButton {
  label: string;
  /** What a press hands back to the bot (Telegram callback_data, Slack action value). */
  value: string;
}

/** A request the fake refused (over the limit, bad formatting...), so tests can see retries. */
export interface FakeRejection {
  method: string;
  reason: string;
  raw: unknown;
  at: number;
}

export interface FakePlatform {
  /** Channel key in service.yaml, e.g. 'channel_e'. */
  readonly name: string;
  /** The values to put under channels.<name> in service.yaml to reach this fake (credentials + base-URL field). */
  readonly channelConfig: Record<string, string | number>;
  readonly botUserId: string;
  readonly botName: string;
  /** The platform's message-length limit and its unit, as the fake enforces it. */
  readonly limit: { max: number; unit: 'chars' | 'bytes' };

  /** Push a user message to the connected bot through the real protocol. Resolves once it was handed to the SDK. */
  deliver(msg: FakeInbound): Promise<{ messageId: string }>;
  /** Deliver an already delivered message again, as the platform does on a missing or slow ack. */
  redeliver(messageId: string): Promise<void>;
  /** Store a message in the platform's history without delivering it (it "arrived while the bot was down"). No-op where the platform has no history API. */
  addHistory(msg: FakeInbound): { messageId: string };

  readonly outbound: FakeOutbound[];
  readonly rejections: FakeRejection[];
  /** Acknowledgements of delivered messages, where the protocol has them. */
  readonly acks: Array<{ messageId: string; at: number }>;
  waitForOutbound(pred: (o: FakeOutbound) => boolean, timeoutMs?: number): Promise<FakeOutbound>;
  waitForAck(messageId: string, timeoutMs?: number): Promise<{ messageId: string; at: number }>;

  /** True while an SDK client is connected (socket open, or a long poll seen recently). */
  connected(): boolean;
  waitForConnection(timeoutMs?: number): Promise<void>;
  /** Make the platform refuse the bot (auth failure on connect), to test failure isolation and status. */
  setRefuseConnections(refuse: boolean): void;
  /** Drop the current connection(s) server-side, to test reconnects. */
  dropConnections(): void;

  close(): Promise<void>;
}

export interface FakePlatformOptions {
  /** 0 or absent: an ephemeral port. Always bound to 127.0.0.1. */
  port?: number;
}

export type StartFakePlatform = (opts?: FakePlatformOptions) => Promise<FakePlatform>;
