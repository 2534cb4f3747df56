import { afterEach, describe, expect, it } from 'vitest';
import { PROGRESS_NOTE } from '../../../src/channels/delivery/buffered.js';
import { deliverTurn } from '../../../src/channels/delivery.js';
import { guardReplies } from '../../../src/channels/outbox-guard.js';
import { conversationOf, createReplyOutbox, type ReplyOutbox } from '../../../src/channels/reply-outbox.js';
import { createRunningAdapters } from '../../../src/channels/running-adapters.js';
import { createSentLedger } from '../../../src/channels/sent-ledger.js';
import { type ChannelAdapter, ChannelError, type ReplyStream, type ReplyTarget } from '../../../src/channels/types.js';
import type { StreamEvent } from '../../../src/core/events.js';
import { createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * The reply outbox on the real SQLite store, with an adapter at the channel seam that refuses
 * for as long as a test says: what is kept, in which order it goes out, the platform's
 * retry_after, expiry and replies in doubt recorded with their text, streams, proactive sends.
 */
let t: TestAssistant | undefined;
let outbox: ReplyOutbox | undefined;
afterEach(async () => {
  await outbox?.stop();
  t?.close();
  outbox = undefined;
  t = undefined;
});

const to: ReplyTarget = { chatId: '42', chatType: 'direct', messageId: 'in-1' };

function flakyAdapter(name = 'channel_x') {
  const delivered: Array<{ how: 'reply' | 'send' | 'stream'; chatId: string; text: string }> = [];
  const state = { refuse: undefined as ChannelError | undefined, attempts: 0 };
  const go = (how: 'reply' | 'send' | 'stream', chatId: string, text: string) => {
    state.attempts++;
    if (state.refuse) throw state.refuse;
    delivered.push({ how, chatId, text });
    return { chatId, messageId: `m${delivered.length}` };
  };
  const adapter: ChannelAdapter = {
    name,
    limit: { max: 40, unit: 'chars' },
    render: (md) => md,
    start: async () => undefined,
    stop: async () => undefined,
    reply: async (target, text) => go('reply', target.chatId, text),
    send: async (chatId, text) => go('send', chatId, text),
    openStream: async (target): Promise<ReplyStream> => {
      if (state.refuse) throw state.refuse;
      return { update: async () => undefined, finish: async (text) => void go('stream', target.chatId, text) };
    },
  };
  return { adapter, delivered, state };
}

/**
 * An adapter that grows a reply by posting and editing (as Telegram, Slack and Discord do; no
 * in-place stream of its own), refusing every call while `refuse` is set and the next calls
 * with `refuseNext`: what each message shows in the end, and every post.
 */
function editingAdapter(name = 'channel_x') {
  const shown = new Map<string, string>();
  const posts: string[] = [];
  const state = { refuse: undefined as ChannelError | undefined, refuseNext: [] as ChannelError[], attempts: 0 };
  const check = () => {
    state.attempts++;
    const once = state.refuseNext.shift();
    if (once) throw once;
    if (state.refuse) throw state.refuse;
  };
  const adapter: ChannelAdapter = {
    name,
    limit: { max: 400, unit: 'chars' },
    render: (md) => md,
    start: async () => undefined,
    stop: async () => undefined,
    reply: async (target, text) => {
      check();
      const messageId = `m${posts.push(text)}`;
      shown.set(messageId, text);
      return { chatId: target.chatId, messageId };
    },
    edit: async (message, text) => {
      check();
      shown.set(message.messageId, text);
    },
    editIntervalMs: 1,
  };
  return { adapter, shown, posts, state };
}

async function* turn(paragraphs: string[], finalText: string): AsyncIterable<StreamEvent> {
  for (const p of paragraphs) yield { type: 'text', content: p };
  yield { type: 'done', durationMs: 1 };
  yield { type: 'completion', status: 'completed', finalText };
}

const setup = (yaml = '', opts: { claimMs?: number } = {}) => setupWith(flakyAdapter, yaml, opts);

function setupWith<A extends { adapter: ChannelAdapter }>(make: () => A, yaml = '', opts: { claimMs?: number } = {}) {
  t = createTestAssistant({ yaml: `channels:\n  channel_x: { _adapter: ./none.mjs }\n${yaml}` });
  const flaky = make();
  const adapters = createRunningAdapters();
  adapters.set('channel_x', flaky.adapter);
  const ob = createReplyOutbox({ store: t.store, adapters, sent: createSentLedger(), config: t.config, log: t.log, runId: 'run-a', backoffMs: [40], ...opts });
  outbox = ob;
  ob.start();
  return { ...flaky, store: t.store, log: t.log, outbox: ob, guarded: guardReplies(flaky.adapter, 'channel_x:dm:42', ob, t.log) };
}

const refusal = (retryAfterMs?: number) => new ChannelError('channel_x', 'rate_limited', '429 Too Many Requests', retryAfterMs ? { retryAfterMs } : {});

describe('the reply outbox', () => {
  it('keeps refused replies, queues the conversation behind them, and sends each once, in order, when the platform recovers', async () => {
    const g = setup();
    g.state.refuse = refusal();
    expect(await g.guarded.reply(to, 'first')).toBeUndefined();
    const attemptsAfterFirst = g.state.attempts;
    // Behind the first: not even tried while it waits.
    expect(await g.guarded.reply(to, 'second')).toBeUndefined();
    expect(g.state.attempts).toBe(attemptsAfterFirst);
    // Another conversation is not held up.
    g.state.refuse = undefined;
    expect(await g.guarded.reply({ ...to, chatId: '7' }, 'elsewhere')).toMatchObject({ chatId: '7' });
    g.state.refuse = refusal();
    await until(async () => g.state.attempts >= attemptsAfterFirst + 3, HANG_MS, 'a few refused retries');
    expect((await g.store.outboxStats()).waiting).toBe(2);
    g.state.refuse = undefined;
    await until(async () => (await g.store.outboxStats()).waiting === 0, HANG_MS, 'the outbox to empty');
    expect(g.delivered.map((d) => `${d.chatId}:${d.text}`)).toEqual(['7:elsewhere', '42:first', '42:second']);
    // The conversation is free again: a new reply goes straight out.
    await until(() => !g.outbox.holds(conversationOf('channel_x', '42')), HANG_MS, 'the conversation to be released');
    expect(await g.guarded.reply(to, 'third')).toMatchObject({ chatId: '42' });
    expect(g.delivered.map((d) => d.text)).toEqual(['elsewhere', 'first', 'second', 'third']);
  });

  it("waits as long as the platform's retry_after says", async () => {
    const g = setup();
    g.state.refuse = refusal(3_600_000);
    const before = Date.now();
    await g.guarded.reply(to, 'later');
    const stats = await g.store.outboxStats();
    expect(stats.nextAt).toBeGreaterThanOrEqual(before + 3_600_000);
    g.state.refuse = undefined;
    expect(await g.store.claimOutboxEntries('probe', Date.now(), Date.now() + 1000, 10)).toEqual([]);
  });

  it('a refusal no retry cures is thrown as before and nothing is kept', async () => {
    const g = setup();
    g.state.refuse = new ChannelError('channel_x', 'format', "can't parse entities");
    await expect(g.guarded.reply(to, '*broken')).rejects.toThrow(/parse entities/);
    expect((await g.store.outboxStats()).waiting).toBe(0);
  });

  it('a reply still refused after replyRetryHours is given up and recorded with its whole text', async () => {
    const g = setup('replyRetryHours: 0.0001\n'); // 0.36 s
    g.state.refuse = refusal();
    await g.guarded.reply(to, 'you will never see this one');
    await until(async () => (await g.store.outboxStats()).waiting === 0, HANG_MS, 'the reply to expire');
    const [record] = await g.store.recentActivity(5, { statuses: ['failed'] });
    expect(record).toMatchObject({
      source: 'system',
      sender: 'channel_x outbox',
      sessionKey: 'channel_x:dm:42',
      responsePreview: 'you will never see this one',
    });
    expect(record?.error).toMatch(
      /^not delivered within 0.0001 h \(replyRetryHours\), after \d+ attempts? \(last error: channel_x: 429 Too Many Requests\)\. The reply was:\nyou will never see this one$/,
    );
    expect(g.delivered).toEqual([]);
  });

  it('a reply a stopped gateway was sending is in doubt: recorded, never sent again', async () => {
    const g = setup();
    const store = g.store;
    await store.addOutboxEntry({
      channel: 'channel_x',
      kind: 'reply',
      target: JSON.stringify(to),
      targetKey: conversationOf('channel_x', '42'),
      chatKey: 'channel_x:dm:42',
      text: 'maybe arrived',
      createdAt: Date.now(),
      nextAttemptAt: Date.now(),
    });
    // Another run claimed it and died: its claim has run out.
    await g.outbox.stop();
    expect(await store.claimOutboxEntries('dead-run', Date.now(), Date.now() - 1, 10)).toHaveLength(1);
    g.outbox.start();
    await until(async () => (await store.outboxStats()).waiting === 0, HANG_MS, 'the entry in doubt to be dropped');
    const [record] = await store.recentActivity(5, { statuses: ['failed'] });
    expect(record?.error).toMatch(/a gateway stopped while sending it: it may have arrived, so it is not sent again\. The reply was:\nmaybe arrived$/);
    expect(g.delivered).toEqual([]);
  });

  it("a streamed reply the platform refuses is kept as replies of its final text, in parts under the platform's limit", async () => {
    const g = setup();
    g.state.refuse = refusal();
    const stream = await (g.guarded.openStream as NonNullable<ChannelAdapter['openStream']>)(to);
    await stream.update('partial');
    const long = 'A first paragraph that is long enough.\n\nAnd a second one after it.';
    await stream.finish(long);
    expect((await g.store.outboxStats()).waiting).toBe(2);
    g.state.refuse = undefined;
    await until(async () => (await g.store.outboxStats()).waiting === 0, HANG_MS, 'the kept parts to go');
    expect(g.delivered.map((d) => [d.how, d.text])).toEqual([
      ['reply', 'A first paragraph that is long enough.'],
      ['reply', 'And a second one after it.'],
    ]);
  });

  it("a task's answer (a proactive send) waits when the platform refuses it or the channel is not connected", async () => {
    const g = setup();
    g.state.refuse = refusal();
    expect(await g.outbox.send('channel_x', '99', 'task answer')).toEqual({ ok: true, queued: 'channel_x refused it (channel_x: 429 Too Many Requests)' });
    expect(await g.outbox.send('channel_y', '99', 'nowhere')).toMatchObject({ ok: false, reason: 'not_found' });
    g.state.refuse = undefined;
    await until(async () => (await g.store.outboxStats()).waiting === 0, HANG_MS, 'the answer to go');
    expect(g.delivered).toEqual([{ how: 'send', chatId: '99', text: 'task answer' }]);
    expect(await g.outbox.send('channel_x', '99', 'straight out')).toEqual({ ok: true });
  });

  it('a reply growing by edits: a 429 on the way is waited out for its retry_after (not kept), and the final text grows in one message', async () => {
    const g = setupWith(editingAdapter);
    g.state.refuseNext.push(refusal(30));
    const final = 'Paragraph one.\n\nParagraph two.';
    await deliverTurn(g.guarded, to, turn(['Paragraph one.\n\n', 'Paragraph two.'], final), { mode: 'streaming', showToolCalls: false, log: g.log });
    expect(g.state.refuseNext).toEqual([]); // the 429 was answered
    expect((await g.store.outboxStats()).waiting).toBe(0);
    expect(g.posts).toHaveLength(1);
    expect([...g.shown.values()]).toEqual([final]);
  });

  it('a reply growing by edits that the platform refuses on the way is kept once, as its whole final text', async () => {
    const g = setupWith(editingAdapter);
    g.state.refuse = new ChannelError('channel_x', 'network', 'ECONNRESET');
    const final = 'Paragraph one.\n\nParagraph two.';
    await deliverTurn(g.guarded, to, turn(['Paragraph one.\n\n', 'Paragraph two.'], final), { mode: 'streaming', showToolCalls: false, log: g.log });
    expect((await g.store.outboxStats()).waiting).toBe(1);
    g.state.refuse = undefined;
    await until(async () => (await g.store.outboxStats()).waiting === 0, HANG_MS, 'the kept reply to go');
    expect(g.posts).toEqual([final]);
  });

  it('the progress note of a long buffered turn is never kept, and not sent while replies of its conversation wait', async () => {
    const g = setup();
    g.state.refuse = refusal();
    await expect(g.guarded.reply(to, PROGRESS_NOTE)).rejects.toThrow(/429/);
    expect((await g.store.outboxStats()).waiting).toBe(0);
    await g.guarded.reply(to, 'kept');
    const attempts = g.state.attempts;
    g.state.refuse = undefined;
    expect(await g.guarded.reply(to, PROGRESS_NOTE)).toBeUndefined();
    expect(g.state.attempts).toBe(attempts);
    await until(async () => (await g.store.outboxStats()).waiting === 0, HANG_MS, 'the kept reply to go');
    expect(g.delivered.map((d) => d.text)).toEqual(['kept']);
  });
});
