/**
 * `buffered` delivery while a long turn runs: "typing…" kept alive before the platform's indicator
 * lapses (Telegram's lasts 5 s, Discord's 10 s), and past `progressAfterSeconds` one short note,
 * deleted when the answer arrives (Telegram, Slack, Discord) or turned into the answer where the
 * platform can only edit (Lark). The real adapters against their fakes; time is a fake clock.
 */
import { describe, expect, it } from 'vitest';
import { PROGRESS_NOTE } from '../../../src/channels/delivery/buffered.js';
import { deliverTurn } from '../../../src/channels/delivery.js';
import { dingtalk } from '../../../src/channels/dingtalk/index.js';
import { lark } from '../../../src/channels/lark/index.js';
import { wecom } from '../../../src/channels/wecom/index.js';
import type { ChannelDefinition } from '../../../src/channels/types.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { createFakeClock } from '../../fakes/fake-clock.mjs';
import { startFakeLark } from '../../fakes/platforms/channel-a-lark.js';
import { startFakeDingtalk } from '../../fakes/platforms/channel-b-dingtalk.js';
import { startFakeWecom } from '../../fakes/platforms/channel-c-wecom.js';
import type { startFakeSlack } from '../../fakes/platforms/channel-d-slack.js';
import type { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import type { startFakeDiscord } from '../../fakes/platforms/channel-f-discord.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { createScript, LIVE_PLATFORMS, type LivePlatform, startLive } from '../../helpers/live-replies.js';
import { createRecordingContext } from '../../helpers/recording-context.js';
import { cleanupAfterEach, failOnLeaksAfterAll } from '../../helpers/resources.js';

const defer = cleanupAfterEach();
failOnLeaksAfterAll();
const log = createSilentLogger();

const byTitle = (title: string) => LIVE_PLATFORMS.find((p) => p.title.startsWith(title)) as LivePlatform;
const typings = (live: { fake: { outbound: Array<{ kind: string }> } }) => live.fake.outbound.filter((o) => o.kind === 'typing').length;

/** Slack shows a bot "typing" only as the status of an assistant thread: a message in one. */
const slackThread: LivePlatform = {
  ...byTitle('Slack'),
  inbound: { chatType: 'direct', userId: 'U0ALICE', text: 'hello', threadId: '1700000000.000100' },
} as LivePlatform;

describe('buffered: typing kept alive for the whole turn', () => {
  it.each([
    ['Telegram group', 4_000, byTitle('Telegram group')],
    ['Discord', 8_000, byTitle('Discord')],
    ['Slack (assistant thread status)', 4_000, slackThread],
  ])('%s: again every %i ms, before the indicator lapses, until the turn ends', async (_title, every, platform) => {
    const live = await startLive(platform, defer);
    const clock = createFakeClock(Date.now());
    const script = createScript();
    const done = deliverTurn(live.adapter, live.to, script.events, { mode: 'buffered', showToolCalls: false, log, clock });
    await live.fake.waitForOutbound((o) => o.kind === 'typing');
    for (let n = 2; n <= 4; n++) {
      await clock.advance(every);
      await live.fake.waitForOutbound(() => typings(live) >= n);
    }
    expect(clock.delays.every((d) => d === every)).toBe(true);
    script.end('All done.');
    await done;
    await live.fake.waitForOutbound((o) => o.text === 'All done.');
    expect(clock.pending()).toBe(0); // no typing after the turn
  });
});

/** An adapter (its SDK) started against its fake, and the direct message it will answer. */
async function startOn(definition: unknown, start: () => Promise<FakePlatform>, name: string, userId: string) {
  const fake = await start();
  defer(() => fake.close());
  const def = definition as ChannelDefinition;
  const adapter = await def.create(def.options.parse(fake.channelConfig), { log, dir: '/tmp', name });
  const rec = createRecordingContext();
  await adapter.start(rec);
  defer(() => adapter.stop());
  await fake.waitForConnection();
  await fake.deliver({ chatType: 'direct', userId, text: 'hello' });
  const to = (await rec.waitForMessage(() => true)).replyTarget;
  return { fake, adapter, to };
}

describe('buffered: a long turn gets one "working on it" note', () => {
  const deleted: Record<string, (fake: unknown, id: string) => boolean> = {
    'Telegram group': (f, id) => (f as Awaited<ReturnType<typeof startFakeTelegram>>).deleted.some((d) => d.endsWith(`:${id}`)),
    Slack: (f, id) => (f as Awaited<ReturnType<typeof startFakeSlack>>).calls.some((c) => c.method === 'chat.delete' && c.params.ts === id),
    Discord: (f, id) => (f as Awaited<ReturnType<typeof startFakeDiscord>>).getMessage(id) === undefined,
  };

  it.each(Object.keys(deleted))('%s: sent past progressAfterSeconds, deleted when the answer is sent', async (title) => {
    const live = await startLive(byTitle(title), defer);
    const clock = createFakeClock(Date.now());
    const script = createScript();
    const done = deliverTurn(live.adapter, live.to, script.events, { mode: 'buffered', showToolCalls: false, log, clock, progressAfterSeconds: 20 });
    await clock.advance(19_000);
    await clock.advance(1_000);
    const note = await live.fake.waitForOutbound((o) => o.text.includes('Working on it'));
    await clock.advance(60_000); // one note per turn, however long
    script.end('The answer.');
    await done;
    const answer = await live.fake.waitForOutbound((o) => o.text === 'The answer.');
    expect(answer.messageId).not.toBe(note.messageId);
    expect(deleted[title]?.(live.fake, note.messageId ?? '')).toBe(true);
    expect(live.fake.outbound.filter((o) => o.text.includes('Working on it'))).toHaveLength(1);
  });

  it('a turn shorter than progressAfterSeconds sends no note; 0 never sends one', async () => {
    const live = await startLive(byTitle('Telegram group'), defer);
    for (const after of [20, 0]) {
      const clock = createFakeClock(Date.now());
      const script = createScript();
      const done = deliverTurn(live.adapter, live.to, script.events, { mode: 'buffered', showToolCalls: false, log, clock, progressAfterSeconds: after });
      await clock.advance(after === 0 ? 600_000 : 19_999);
      script.end(`Answer ${after}.`);
      await done;
      await live.fake.waitForOutbound((o) => o.text === `Answer ${after}.`);
    }
    expect(live.fake.outbound.some((o) => o.text.includes('Working on it'))).toBe(false);
  });

  it('Lark (messages can be edited, not deleted by the bot here): the note becomes the answer', async () => {
    const { fake, adapter, to } = await startOn(lark, startFakeLark, 'channel_a', 'ou_alice');
    const clock = createFakeClock(Date.now());
    const script = createScript();
    const done = deliverTurn(adapter, to, script.events, { mode: 'buffered', showToolCalls: false, log, clock, progressAfterSeconds: 20 });
    await clock.advance(20_000);
    const note = await fake.waitForOutbound((o) => o.text.includes('Working on it'));
    script.end('The answer.');
    await done;
    const edit = await fake.waitForOutbound((o) => o.kind === 'edit' && o.text.includes('The answer.'));
    expect(edit.messageId).toBe(note.messageId);
    expect(fake.outbound.filter((o) => o.kind !== 'typing' && o.kind !== 'edit' && o.text.trim() !== '').map((o) => o.text)).toEqual([PROGRESS_NOTE]);
  });

  it.each([
    ['WeCom (the reply bubble)', wecom, startFakeWecom, 'channel_c', 'alice'],
    ['DingTalk (an AI card)', dingtalk, startFakeDingtalk, 'channel_b', 'staff-alice'],
  ] as const)('%s: the note is the reply updated in place, and the answer its last version', async (_title, definition, start, name, userId) => {
    const { fake, adapter, to } = await startOn(definition, start, name, userId);
    const clock = createFakeClock(Date.now());
    const script = createScript();
    const done = deliverTurn(adapter, to, script.events, { mode: 'buffered', showToolCalls: false, log, clock, progressAfterSeconds: 20 });
    await clock.advance(20_000);
    const note = await fake.waitForOutbound((o) => o.text.includes('Working on it'));
    expect(note.kind).toBe('stream');
    script.end('The answer.');
    await done;
    const answer = await fake.waitForOutbound((o) => o.text === 'The answer.');
    expect(answer).toMatchObject({ kind: 'stream', messageId: note.messageId, finished: true });
    // Nothing else was posted: the note and the answer are one reply.
    expect(fake.outbound.filter((o) => o.kind !== 'typing' && o.kind !== 'stream' && o.text.trim() !== '')).toEqual([]);
  });
});
