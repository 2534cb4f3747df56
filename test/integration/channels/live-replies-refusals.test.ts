/**
 * A growing reply when the platform says no: a 429 on an edit is waited out for the retry_after it
 * names and the final text still arrives; a refused edit sends the rest as new messages, nothing
 * lost and nothing twice; Telegram's per-chat flood control is never hit; drafts a Bot API server
 * refuses turn into edits. The real adapter against its fake, the turn's events pushed by the test.
 */
import { describe, expect, it } from 'vitest';
import { deliverTurn } from '../../../src/channels/delivery.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import type { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import { createScript, LIVE_PLATFORMS, type LivePlatform, startLive, text } from '../../helpers/live-replies.js';
import { cleanupAfterEach, failOnLeaksAfterAll } from '../../helpers/resources.js';

type Telegram = Awaited<ReturnType<typeof startFakeTelegram>>;

const defer = cleanupAfterEach();
failOnLeaksAfterAll();

const log = createSilentLogger();
const seen = (o: { text: string }) => o.text.replace(/[*_`]/g, '');
const FINAL = 'Paragraph one.\n\nParagraph two.\n\nParagraph three.';

/** Paragraph one shown, then `between` (a refusal set up on the fake), paragraph two shown (past the refusal), the end. */
async function turnWithRefusal(p: LivePlatform, between: (live: Awaited<ReturnType<typeof startLive>>) => void) {
  const live = await startLive(p, defer);
  const script = createScript();
  const done = deliverTurn(live.adapter, live.to, script.events, { mode: 'streaming', showToolCalls: false, log });
  script.push(text('Paragraph one.\n\n'));
  await live.fake.waitForOutbound((o) => o.text.includes('Paragraph one.'));
  between(live);
  script.push(text('Paragraph two.\n\n'));
  await live.fake.waitForOutbound((o) => o.text.includes('Paragraph two.'));
  script.push(text('Paragraph three.'));
  script.end(FINAL);
  await done;
  return live;
}

describe.each(LIVE_PLATFORMS)('$title: refusals', (p) => {
  it('a 429 on an edit is tried again after its retry_after, and the final text arrives', async () => {
    const live = await turnWithRefusal(p, (l) => p.rateLimitNext(l.fake, 2));
    // The fake keeps refusing the call until retry_after (2 s, longer than the pace of 1 s) has
    // passed: a try made before then would be a second rejection. There is only the first.
    expect(live.fake.rejections).toHaveLength(1);
    expect(live.fake.rejections[0]?.reason).toMatch(/too many requests|ratelimited|rate limited/i);
    const last = live.shown().at(-1);
    expect(seen(last ?? { text: '' })).toBe(FINAL);
    expect(p.raw(last as never)).toBe(live.adapter.render(FINAL));
    expect(live.messages()).toHaveLength(1);
  });

  it('a refused edit: the rest goes on in a new message, nothing lost and nothing sent twice', async () => {
    const live = await turnWithRefusal(p, (l) => p.refuseNextEdit(l.fake));
    expect(live.fake.rejections).toHaveLength(1);
    const finals = live.messages().map((m) => seen(m.versions.at(-1) ?? { text: '' }));
    if (p.grows === 'drafts') {
      // Drafts refused: the reply grew by edits instead, in the one message it ends as.
      expect(finals).toEqual([FINAL]);
      expect(live.messages()[0]?.versions.length).toBeGreaterThanOrEqual(2);
    } else {
      expect(finals).toEqual(['Paragraph one.', 'Paragraph two.\n\nParagraph three.']);
    }
    const all = finals.join('\n\n');
    for (const para of ['Paragraph one.', 'Paragraph two.', 'Paragraph three.']) expect(all.split(para)).toHaveLength(2);
  });
});

describe('Telegram specifics', () => {
  const group = LIVE_PLATFORMS.find((p) => p.key === 'channel_e' && p.grows === 'edits') as LivePlatform;
  const privateChat = LIVE_PLATFORMS.find((p) => p.key === 'channel_e' && p.grows === 'drafts') as LivePlatform;

  it('at most one message or edit per second in a chat: flood control (429) is never hit', async () => {
    const live = await startLive(group, defer);
    const fake = live.fake as Telegram;
    fake.paceChats(1000);
    const script = createScript();
    const done = deliverTurn(live.adapter, live.to, script.events, { mode: 'streaming', showToolCalls: true, log });
    // As fast as an engine can write: every update would be a call at once without pacing.
    for (let i = 0; i < 6; i++) {
      script.push(text(`Step ${i}.\n\n`), { type: 'tool_call', name: 'Bash', args: JSON.stringify({ command: `echo ${i}` }) });
      script.push({ type: 'tool_result', content: String(i) });
      await fake.waitForOutbound((o) => o.text.includes(`Step ${i}.`));
    }
    const final = Array.from({ length: 6 }, (_, i) => `Step ${i}.`).join('\n\n');
    script.end(final);
    await done;
    // The fake refuses (429) any message or edit in the chat within a second of the last one.
    expect(fake.rejections).toEqual([]);
    const writes = fake.calls.filter((c) => ['sendmessage', 'editmessagetext'].includes(c.method) && String(c.params.chat_id) === live.to.chatId);
    expect(writes.length).toBeGreaterThanOrEqual(4);
    expect(live.shown().at(-1)?.text).toBe(final);
  });

  it('drafts refused once: later replies in the chat grow by edits at once', async () => {
    const live = await startLive(privateChat, defer);
    const fake = live.fake as Telegram;
    fake.failNext('sendMessageDraft', { error_code: 404, description: 'Not Found' });
    for (const round of [1, 2]) {
      const script = createScript();
      const done = deliverTurn(live.adapter, live.to, script.events, { mode: 'streaming', showToolCalls: false, log });
      script.push(text(`Round ${round}, part one.\n\n`));
      await fake.waitForOutbound((o) => o.text === `Round ${round}, part one.` && o.kind !== 'stream');
      script.push(text('Part two.'));
      script.end(`Round ${round}, part one.\n\nPart two.`);
      await done;
    }
    expect(fake.calls.filter((c) => c.method === 'sendmessagedraft')).toHaveLength(1);
    expect(live.messages().map((m) => [m.versions.map((v) => v.kind), m.versions.at(-1)?.text])).toEqual([
      [['reply', 'edit'], 'Round 1, part one.\n\nPart two.'],
      [['reply', 'edit'], 'Round 2, part one.\n\nPart two.'],
    ]);
  });

  it('drafts: channels.channel_e.drafts false grows a private reply by edits', async () => {
    const live = await startLive(privateChat, defer, { drafts: false });
    const script = createScript();
    const done = deliverTurn(live.adapter, live.to, script.events, { mode: 'streaming', showToolCalls: false, log });
    script.push(text('One.\n\n'));
    await live.fake.waitForOutbound((o) => o.text === 'One.');
    script.push(text('Two.'));
    script.end('One.\n\nTwo.');
    await done;
    expect((live.fake as Telegram).calls.some((c) => c.method === 'sendmessagedraft')).toBe(false);
    expect(live.messages().map((m) => m.versions.map((v) => v.kind))).toEqual([['reply', 'edit']]);
  });
});
