import type { z } from 'zod';
import type { Logger } from '../core/logger.js';
import type { ApprovalPrompt } from './approval-prompt.js';

/**
 * The channel layer's seam. A channel is a platform adapter defined by data: its key in
 * service.yaml, its option schema (validated with the rest of the config in one pass) and a
 * factory that imports the platform SDK lazily. Everything platform-neutral (group policy,
 * sessions, splitting, delivery modes, the inbox) lives in the bridge, never in an adapter.
 */
export interface ChannelDefinition<Opts extends Record<string, unknown> = Record<string, unknown>> {
  /** Key under `channels:` in service.yaml, e.g. 'channel_e'. */
  readonly name: string;
  /** The platform's name, for logs and docs. */
  readonly title: string;
  /** SDK package the adapter needs (checked by `service doctor`). */
  readonly sdkPackage: string;
  readonly options: z.ZodType<Opts>;
  /** Build the adapter; the SDK is imported in here, not at module load. */
  create(options: Opts, deps: ChannelDeps): Promise<ChannelAdapter>;
}

export interface ChannelDeps {
  log: Logger;
  /** The assistant directory (custom adapters resolve paths against it). */
  dir: string;
  /** The channel key this adapter runs under (a custom adapter's own key). */
  name: string;
}

/** Identity helper that keeps the options type of a definition. */
export function defineChannel<Opts extends Record<string, unknown>>(def: ChannelDefinition<Opts>): ChannelDefinition<Opts> {
  return def;
}

/** A platform's message-size limit, counted the way the platform counts. */
export interface MessageLimit {
  max: number;
  unit: 'chars' | 'bytes';
}

/**
 * One connected platform. Required: start, reply, stop, render. Optional capabilities are
 * checked by the bridge (`if (adapter.send)`), never by channel name.
 *
 * Lifecycle contract (every built-in adapter keeps it through src/channels/lifecycle.ts, custom
 * adapters get it from the wrapper in custom.ts; test/integration/channels/lifecycle.contract.test.ts
 * checks it for all six). An adapter is single-use: created, started once, stopped once.
 *
 * - `start(ctx)` connects and resolves once connected. It rejects with a ChannelError: the
 *   platform's refusal (`auth`, `network`, …), or kind `lifecycle` when the call does not fit:
 *   - a second start(), while the first is still connecting, after it connected or after it
 *     failed, rejects at once ("start() called twice: …; an adapter is started once") and leaves
 *     the first call and its connection untouched;
 *   - start() after stop() rejects ("start() after stop(): an adapter cannot be restarted; create
 *     a new one"): to reconnect, create a new adapter (the hub builds one per attempt);
 *   - stop() while start() is pending makes that start reject at once ("stopped while starting").
 *   After a rejected start the adapter may keep retrying in the background (DingTalk and WeCom
 *   do) and report a later success as `connected`, which makes it started; stop() ends that too.
 * - `stop()` releases every socket, timer and SDK client, also those of a pending start (whose
 *   current step it waits for, at most 10 s: a bot-info request cannot be cut short); the process
 *   can exit once it resolves. It is idempotent (a second call returns the same promise) and safe
 *   before start (the adapter is then stopped and can no longer start).
 * - `ctx.onStatus` is called only between a settled start() and stop(); `ctx.onMessage` is not
 *   called once stop() has resolved.
 * - reply, send, edit, remove, openStream, readHistory, downloadImage, downloadFile and sendFile need a started adapter. Before
 *   start() resolved, after it failed, or once stop() was called they reject with a ChannelError
 *   of kind `not_connected` ("reply: not connected (the adapter was stopped)") and reach nothing.
 *   typing() is best effort: then it resolves without doing anything.
 * - render, name, limit and maxFileBytes work in every phase.
 */
export interface ChannelAdapter {
  /** The channel key (channel_a … channel_f, or the custom adapter's key). */
  readonly name: string;
  readonly limit: MessageLimit;
  /**
   * Markdown → the text exactly as it will be sent in the platform's own flavour (pure). The
   * bridge measures rendered chunks with it before sending, so no part exceeds `limit`.
   */
  render(markdown: string): string;
  /**
   * Connect, once (see the lifecycle contract above). Resolves once connected (the hub applies a
   * deadline and reports `failed` on rejection); later disconnects and reconnects are reported
   * through `ctx.onStatus`.
   */
  start(ctx: ChannelContext): Promise<void>;
  /** Reply to an inbound message (Markdown in; rendered, with a plain-text retry when the platform rejects the formatting). */
  reply(to: ReplyTarget, markdown: string): Promise<SentMessage | undefined>;
  /** Disconnect and release every timer and socket; idempotent, safe before start (see above). */
  stop(): Promise<void>;

  /** Proactive send to a chat, group or user id (POST /api/send, scheduled tasks). */
  send?(chatId: string, markdown: string): Promise<SentMessage | undefined>;
  /**
   * Replace the text of a message this adapter sent. With it (and no `openStream`), `streaming`
   * delivery grows one message by editing it (live/live-reply.ts). A refusal throws a ChannelError:
   * `rate_limited` (with `retryAfterMs` where the platform says) is waited out and tried again;
   * other kinds make the rest of the reply go into new messages.
   */
  edit?(message: SentMessage, markdown: string): Promise<void>;
  /** Delete a message this adapter sent (the `buffered` mode's "working on it" note, a growing reply's leftovers). */
  remove?(message: SentMessage): Promise<void>;
  /** At most one edit or new message per chat this often while a reply grows, in ms: the platform's rate limit (default 1000). */
  readonly editIntervalMs?: number;
  /** Show "typing…" (best effort; errors are ignored). */
  typing?(to: ReplyTarget): Promise<void>;
  /** How long one typing() shows on the platform, in ms; the bridge repeats it sooner (default 5000). */
  readonly typingLastsMs?: number;
  /**
   * A reply that is updated in place with the full text so far (WeCom stream bubble, Lark card,
   * DingTalk AI card, Telegram's drafts). Used by `streaming` delivery instead of one message per
   * flush, or of the edited reply that `edit` gives.
   */
  openStream?(to: ReplyTarget, opts?: OpenStreamOptions): Promise<ReplyStream>;
  /** Messages of a chat at or after `since`, oldest first (history catch-up). */
  readHistory?(chatId: string, opts: { since: Date; limit: number }): Promise<InboundMessage[]>;
  /** Bytes of an image attached to an inbound message. */
  downloadImage?(image: InboundImage): Promise<{ data: Buffer; mimeType: string }>;
  /**
   * Bytes of a document attached to an inbound message, at most `maxBytes`: past it the download
   * stops and the call rejects with a ChannelError of kind `too_long`. A platform that names the
   * file only in the download's response (WeCom) sets `file.fileName` from it, also when rejecting.
   */
  downloadFile?(file: InboundFile, opts: { maxBytes: number }): Promise<{ data: Buffer; mimeType: string }>;
  /**
   * Send a file into the conversation of `to` (its thread), after the reply: pictures the platform
   * shows inline as pictures, anything else as a file. The bridge checks `maxFileBytes` first.
   */
  sendFile?(to: ReplyTarget, file: OutboundFile): Promise<SentMessage | undefined>;
  /** The largest file `sendFile` can send on this platform, in bytes (the platform's own cap for bots). */
  readonly maxFileBytes?: number;
  /**
   * Ask for a tool approval with buttons (the prompt's text, one button per action). A press is
   * handed to `ctx.onMessage` as a message from the person who pressed, with the action's command
   * as its text (and `mentioned: true`), so it takes the path a typed `/allow` takes. Without this
   * capability the bridge replies with the prompt's text, which says how to answer.
   */
  askApproval?(to: ReplyTarget, prompt: ApprovalPrompt): Promise<SentMessage | undefined>;
}

export interface ChannelContext {
  /**
   * Hand an incoming message to the bridge. It returns quickly (the turn runs later); adapters
   * whose protocol has an explicit acknowledgement send it after this resolves, so a message is
   * acknowledged only once it is safely handed over (persisted when the inbox is on).
   */
  onMessage(message: InboundMessage): Promise<void>;
  /** Connection changes after start: a drop (with reason), a reconnect, a permanent failure. */
  onStatus(status: { state: 'connected' | 'disconnected' | 'failed'; reason?: string }): void;
  log: Logger;
}

export interface InboundImage {
  /** What the adapter needs to download it again (a file id, a URL, a resource key). */
  ref: string;
  mimeType?: string;
  fileName?: string;
}

/** A document attached to an inbound message (pictures are InboundImage). */
export interface InboundFile {
  /** What the adapter needs to download it again (a file id, a URL, a resource key). */
  ref: string;
  fileName?: string;
  mimeType?: string;
  /** Bytes, where the platform says so up front (checked against the limit before downloading). */
  size?: number;
  /**
   * A recording: `voice` for a voice note, `audio` for an audio file. Set by adapters that know;
   * the bridge also takes any `audio/*` type (or a recording's file name) for one. Transcribed
   * when `transcription` is configured (voice/voice-notes.ts).
   */
  kind?: 'voice' | 'audio';
  /**
   * The platform's own transcript of a recording (DingTalk's `recognition`): what the engine reads
   * when `transcription` is off or fails.
   */
  transcript?: string;
}

/** A file to send (the agent's outbox). */
export interface OutboundFile {
  /** A safe file name (no path). */
  name: string;
  mimeType: string;
  data: Buffer;
}

/** An incoming message, normalised. */
export interface InboundMessage {
  channel: string;
  /** The platform's message id: duplicates of one id are processed once. */
  messageId: string;
  /** Where the message was posted: the DM chat or the group / channel id. */
  chatId: string;
  chatType: 'direct' | 'group';
  /** Thread / topic id where the platform has threads. */
  threadId?: string;
  senderId: string;
  senderName?: string;
  /** Text with only the bot's own mention removed. */
  text: string;
  /** Group: the bot was mentioned the platform's own way (or the message replies to the bot). DMs: true. */
  mentioned: boolean;
  /** Sent by this bot or another bot (never answered; counts for group context). */
  fromBot?: boolean;
  /** Unix ms. */
  ts: number;
  images?: InboundImage[];
  /** Documents (not pictures): saved into the workspace for the turn. */
  files?: InboundFile[];
  /** Everything `reply` needs (ids, webhooks, request ids); must be JSON-serialisable (the inbox stores it). */
  replyTarget: ReplyTarget;
}

export interface ReplyTarget {
  chatId: string;
  chatType: 'direct' | 'group';
  threadId?: string;
  /** The inbound message being answered. */
  messageId?: string;
  /** Adapter-specific, JSON-serialisable data (a session webhook and its expiry, a request id...). */
  extra?: Record<string, unknown>;
}

/** A message the adapter sent, enough to edit it later. */
export interface SentMessage {
  chatId: string;
  messageId: string;
  extra?: Record<string, unknown>;
}

export interface OpenStreamOptions {
  /** Each message the stream posts, as soon as it exists (its text may still change): echo suppression. */
  onPosted?: (sent: SentMessage) => void;
}

export interface ReplyStream {
  /**
   * Replace the shown text with the full text so far. `status` is a short line (the tool that runs
   * now) a stream with `showsStatus` puts under the text itself; others get it appended.
   */
  update(markdown: string, status?: string): Promise<void>;
  /** Final text (no status); the stream is closed afterwards. */
  finish(markdown: string): Promise<void>;
  /** The stream shows `update`'s status line under the text and drops it by itself. */
  readonly showsStatus?: boolean;
}

/**
 * Thrown by adapters for platform refusals the bridge may act on, and for calls that do not fit
 * the lifecycle: `lifecycle` (start twice, start after stop, start ended by stop) and
 * `not_connected` (a platform call before start resolved or after stop).
 */
export class ChannelError extends Error {
  readonly channel: string;
  readonly kind: 'format' | 'too_long' | 'not_found' | 'auth' | 'rate_limited' | 'network' | 'not_connected' | 'lifecycle' | 'other';
  /** `rate_limited`: how long the platform asked to wait before the next call, where it said. */
  readonly retryAfterMs: number | undefined;

  constructor(channel: string, kind: ChannelError['kind'], message: string, opts: { cause?: unknown; retryAfterMs?: number } = {}) {
    super(`${channel}: ${message}`, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ChannelError';
    this.channel = channel;
    this.kind = kind;
    this.retryAfterMs = opts.retryAfterMs;
  }
}
