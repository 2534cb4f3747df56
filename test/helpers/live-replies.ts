/**
 * Growing replies in tests: a real adapter (its platform's SDK) started against its fake, a message
 * delivered through the fake to answer, a turn's events pushed by the test when it wants them
 * (a pause is the test waiting for what the platform shows), and what the platform recorded read
 * back per message: each message's versions (its post, then its edits or drafts).
 */
import { discord } from '../../src/channels/discord/index.js';
import { slack } from '../../src/channels/slack/index.js';
import { telegram } from '../../src/channels/telegram/index.js';
import type { ChannelAdapter, ChannelDefinition, ReplyTarget } from '../../src/channels/types.js';
import type { StreamEvent } from '../../src/core/events.js';
import { createSilentLogger } from '../../src/core/logger.js';
import { startFakeSlack } from '../fakes/platforms/channel-d-slack.js';
import { startFakeTelegram } from '../fakes/platforms/channel-e-telegram.js';
import { startFakeDiscord } from '../fakes/platforms/channel-f-discord.js';
import type { FakeOutbound, FakePlatform } from '../fakes/platforms/types.js';
import { createRecordingContext } from './recording-context.js';

type Telegram = Awaited<ReturnType<typeof startFakeTelegram>>;
type Slack = Awaited<ReturnType<typeof startFakeSlack>>;
type Discord = Awaited<ReturnType<typeof startFakeDiscord>>;

export interface LivePlatform {
  title: string;
  key: string;
  /** How the reply grows there: edits of a posted message, or Telegram's drafts (then one message). */
  grows: 'edits' | 'drafts';
  start(): Promise<FakePlatform>;
  definition: ChannelDefinition;
  /** The message the reply answers. */
  inbound: { chatType: 'direct' | 'group'; chatId?: string; userId: string; text: string; mentionBot?: boolean; threadId?: string };
  /** The text as sent on the wire (the platform's markup), for exact comparison with render(). */
  raw(o: FakeOutbound): string;
  /** The next edit (or draft) is refused for rate, asking to wait `seconds`. */
  rateLimitNext(fake: FakePlatform, seconds: number): void;
  /** The next edit is refused for good (the message was deleted or cannot be edited any more). */
  refuseNextEdit(fake: FakePlatform): void;
}

const raw = (field: string) => (o: FakeOutbound) => String((o.raw as Record<string, unknown>)[field] ?? '');

const telegramBase = {
  key: 'channel_e',
  start: () => startFakeTelegram(),
  definition: telegram as unknown as ChannelDefinition,
  raw: raw('text'),
};

export const LIVE_PLATFORMS: LivePlatform[] = [
  {
    ...telegramBase,
    title: 'Telegram group (editMessageText)',
    grows: 'edits',
    inbound: { chatType: 'group', chatId: '-1001234567890', userId: '1001', text: 'hello', mentionBot: true },
    rateLimitNext: (f, s) =>
      (f as Telegram).failNext('editMessageText', { error_code: 429, description: `Too Many Requests: retry after ${s}`, retry_after: s }),
    refuseNextEdit: (f) => (f as Telegram).failNext('editMessageText', { error_code: 400, description: "Bad Request: message can't be edited" }),
  },
  {
    ...telegramBase,
    title: 'Telegram private chat (sendMessageDraft)',
    grows: 'drafts',
    inbound: { chatType: 'direct', userId: '1001', text: 'hello' },
    rateLimitNext: (f, s) =>
      (f as Telegram).failNext('sendMessageDraft', { error_code: 429, description: `Too Many Requests: retry after ${s}`, retry_after: s }),
    refuseNextEdit: (f) => (f as Telegram).failNext('sendMessageDraft', { error_code: 400, description: 'Bad Request: method is not available' }),
  },
  {
    title: 'Slack (chat.update)',
    key: 'channel_d',
    grows: 'edits',
    start: () => startFakeSlack(),
    definition: slack as unknown as ChannelDefinition,
    inbound: { chatType: 'direct', userId: 'U0ALICE', text: 'hello' },
    raw: raw('text'),
    rateLimitNext: (f, s) => (f as Slack).failNext('chat.update', { retryAfter: s }),
    refuseNextEdit: (f) => (f as Slack).failNext('chat.update', { error: 'cant_update_message' }),
  },
  {
    title: 'Discord (message edit)',
    key: 'channel_f',
    grows: 'edits',
    start: () => startFakeDiscord(),
    definition: discord as unknown as ChannelDefinition,
    inbound: { chatType: 'direct', userId: '100000000000000001', text: 'hello' },
    raw: raw('content'),
    rateLimitNext: (f, s) => (f as Discord).failNext({ method: 'PATCH', route: /^\/channels\/\d+\/messages\/\d+$/, retryAfter: s }),
    refuseNextEdit: (f) =>
      (f as Discord).failNext({ method: 'PATCH', route: /^\/channels\/\d+\/messages\/\d+$/, status: 404, code: 10008, message: 'Unknown Message' }),
  },
];

export interface LiveSetup {
  fake: FakePlatform;
  adapter: ChannelAdapter;
  to: ReplyTarget;
  /** The bot's own messages in the reply's chat, in order: each with its versions (post first). */
  messages(): Array<{ id: string; versions: FakeOutbound[] }>;
  /** Every text the reply showed, in order (posts, edits, drafts). */
  shown(): FakeOutbound[];
}

/** The adapter started against a fresh fake, and the delivered message it will answer. `defer` stops both after the test. */
export async function startLive(p: LivePlatform, defer: (fn: () => Promise<void> | void) => void, options: Record<string, unknown> = {}): Promise<LiveSetup> {
  const fake = await p.start();
  defer(async () => {
    await fake.close();
  });
  const adapter = await p.definition.create(p.definition.options.parse({ ...fake.channelConfig, ...options }), {
    log: createSilentLogger(),
    dir: '/tmp',
    name: p.key,
  });
  const rec = createRecordingContext();
  await adapter.start(rec);
  defer(async () => {
    await adapter.stop();
  });
  await fake.deliver(p.inbound);
  const to = (await rec.waitForMessage(() => true)).replyTarget;
  const shown = () => fake.outbound.filter((o) => o.kind !== 'typing' && o.text.trim() !== '');
  return {
    fake,
    adapter,
    to,
    shown,
    messages() {
      const byId = new Map<string, FakeOutbound[]>();
      for (const o of shown()) {
        if (o.kind === 'stream') continue;
        const id = o.messageId ?? '';
        if (o.kind === 'edit' && !byId.has(id)) continue;
        byId.set(id, [...(byId.get(id) ?? []), o]);
      }
      return [...byId].map(([id, versions]) => ({ id, versions }));
    },
  };
}

/** A turn's events, pushed by the test: the stream waits for more until end(). */
export function createScript(): { events: AsyncIterable<StreamEvent>; push(...e: StreamEvent[]): void; end(finalText?: string): void } {
  const queue: StreamEvent[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  async function* events(): AsyncIterable<StreamEvent> {
    for (;;) {
      while (queue.length > 0) yield queue.shift() as StreamEvent;
      if (ended) return;
      await new Promise<void>((r) => {
        wake = r;
      });
    }
  }
  return {
    events: events(),
    push(...e) {
      queue.push(...e);
      wake?.();
    },
    end(finalText) {
      if (finalText !== undefined) queue.push({ type: 'done', durationMs: 1 }, { type: 'completion', status: 'completed', finalText });
      ended = true;
      wake?.();
    },
  };
}

export const text = (content: string): StreamEvent => ({ type: 'text', content });
