import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatOptions } from '../../../src/core/assistant/turn-options.js';
import type { StreamEvent } from '../../../src/core/events.js';
import { formatLocalDay } from '../../../src/core/util/local-day.js';
import { assertEnding, collect, completionOf, createTestAssistant, imagesDirOf, type TestAssistant } from '../../helpers/assistant.js';

/**
 * Issue 30: the turn pipeline (src/core/assistant/turn-pipeline.ts) takes its resources step by
 * step, and every way a turn can end gives back all it took: the queue ticket with the person's
 * slot (maxTurnsPerPerson: 1, so a slot kept would refuse the person's next turn), the abort
 * controller and the running entry (`abort(key)` finds nothing), the budget hold (a probe finds
 * nothing held), the running-turn record, the workspace's images and outbox, and the control-file
 * guard's window (an outside edit of service.yaml is reloaded again).
 */
let t: TestAssistant | undefined;
afterEach(() => {
  t?.close();
  t = undefined;
});

const KEY = 'channel_e:group:g1';
const member = (who: string, extra: ChatOptions = {}): ChatOptions => ({
  sessionKey: KEY,
  source: 'channel_e',
  sender: who,
  caller: `channel_e:${who}`,
  admin: false,
  waitForCapacity: false,
  ...extra,
});

/**
 * Reads a turn's stream until its text so far satisfies `until`; the rest is collected in the
 * background (`rest`: wrapped, since an async function returning a promise would wait for it).
 */
async function startTurn(stream: AsyncIterable<StreamEvent>, until: (text: string) => boolean): Promise<{ rest: Promise<StreamEvent[]> }> {
  const it = stream[Symbol.asyncIterator]();
  const seen: StreamEvent[] = [];
  let text = '';
  for (;;) {
    const next = await it.next();
    if (next.done) throw new Error(`the turn ended before the awaited text: ${JSON.stringify(seen)}`);
    seen.push(next.value);
    if (next.value.type === 'text') text += next.value.content;
    if (until(text)) break;
  }
  const rest = (async () => {
    for (let next = await it.next(); !next.done; next = await it.next()) seen.push(next.value);
    return seen;
  })();
  return { rest };
}
// The engine streams its text in pieces: the gate is reached once they add up to its sentence.
const atGate = (text: string) => text.includes('Before the gate.');

/** Nothing of any turn is held any more: checked on the state itself, then by the person's next turn. */
async function expectAllReleased(a: TestAssistant, probe: number): Promise<void> {
  expect(a.assistant.status()).toMatchObject({ running: 0, waiting: 0 });
  expect(a.assistant.abort(KEY)).toBe(false);
  expect(await a.store.runningTurns()).toEqual([]);
  expect(fs.readdirSync(path.join(a.dir, '.service', 'outbox'))).toEqual([]);
  if (fs.existsSync(imagesDirOf(a.dir))) expect(fs.readdirSync(imagesDirOf(a.dir))).toEqual([]);
  // No hold: a hold of a tenth of a cent fits under a cap of what is spent plus half a cent.
  const now = Date.now();
  const spent = await a.store.dailyCost(formatLocalDay(now));
  const id = `probe-${probe}`;
  expect(await a.store.holdBudget({ id, day: formatLocalDay(now), amountUsd: 0.001, expiresAt: now + 60_000 }, spent + 0.005, now)).toEqual({ held: true });
  await a.store.releaseBudget(id);
  // The guard's window is closed: an outside edit is taken in.
  const file = path.join(a.dir, 'service.yaml');
  fs.appendFileSync(file, `# probe ${probe}\n`);
  a.config.reload();
  expect(a.config.text()).toContain(`# probe ${probe}`);
  // The ticket and the person's slot: the same person's next turn runs (from the terminal: never refused by the budget).
  const next = await collect(a.assistant.chat(`SAY:next ${probe}`, member('u1', { source: 'terminal' })));
  expect(completionOf(next)).toMatchObject({ status: 'completed', finalText: `next ${probe}` });
}

describe('every way a turn ends gives back what it took', () => {
  it('completed, failed by the engine, refused for its input, aborted while running', async () => {
    const a = createTestAssistant({ yaml: 'maxTurnsPerPerson: 1\naccess:\n  dailyBudgetUsd: 1\n' });
    t = a;
    const done = await collect(a.assistant.chat('SAY:all good', member('u1')));
    assertEnding(done);
    expect(completionOf(done)).toMatchObject({ status: 'completed', finalText: 'all good' });
    await expectAllReleased(a, 1);

    const failed = await collect(a.assistant.chat('FAIL:boom', member('u1')));
    assertEnding(failed);
    expect(completionOf(failed)).toMatchObject({ status: 'failed' });
    await expectAllReleased(a, 2);

    const bad = await collect(a.assistant.chat('look', member('u1', { images: [{ data: 'not base64!', mimeType: 'image/png' }] })));
    assertEnding(bad);
    expect(completionOf(bad)).toMatchObject({ status: 'failed', message: expect.stringContaining('not valid base64') });
    await expectAllReleased(a, 3);

    const running = await startTurn(a.assistant.chat('GATE:never hold on', member('u1')), atGate);
    expect(a.assistant.abort(KEY)).toBe(true);
    const aborted = await running.rest;
    assertEnding(aborted);
    expect(completionOf(aborted)).toMatchObject({ status: 'aborted' });
    await expectAllReleased(a, 4);
  });

  it("refused by the person's limit, and aborted while queued behind the key's running turn", async () => {
    const a = createTestAssistant({ yaml: 'maxTurnsPerPerson: 1\naccess:\n  dailyBudgetUsd: 1\n' });
    t = a;
    const first = await startTurn(a.assistant.chat('GATE:gate-1 SAY:first', member('u1')), atGate);
    const second = await collect(a.assistant.chat('SAY:too many', member('u1')));
    assertEnding(second);
    expect(completionOf(second)).toMatchObject({ status: 'failed', message: expect.stringContaining('limit: 1 per person') });

    const stop = new AbortController();
    const queued = collect(a.assistant.chat('SAY:queued', member('u2', { signal: stop.signal })));
    await expect.poll(() => a.assistant.status().waiting).toBe(1);
    stop.abort();
    const gaveUp = await queued;
    assertEnding(gaveUp);
    expect(completionOf(gaveUp)).toMatchObject({ status: 'aborted', message: 'Aborted before it started' });

    fs.writeFileSync(path.join(a.dir, 'gate-1'), '');
    expect(completionOf(await first.rest)).toMatchObject({ status: 'completed', finalText: expect.stringContaining('first') });
    await expectAllReleased(a, 5);
  });

  it('the workspace cannot be prepared: the turn fails alone, and what it had taken is given back', async () => {
    const a = createTestAssistant({ yaml: 'maxTurnsPerPerson: 1\naccess:\n  dailyBudgetUsd: 1\n' });
    t = a;
    const outbox = path.join(a.dir, '.service', 'outbox');
    fs.rmSync(outbox, { recursive: true, force: true });
    fs.writeFileSync(outbox, 'a file where the outbox folder goes');
    const failed = await collect(a.assistant.chat('SAY:never', member('u1')));
    assertEnding(failed);
    expect(completionOf(failed)).toMatchObject({ status: 'failed', message: expect.stringMatching(/^turn failed: .*ENOTDIR/) });
    expect(a.standIn.runs()).toEqual([]);
    fs.rmSync(outbox);
    fs.mkdirSync(outbox);
    await expectAllReleased(a, 6);
  });

  it('refused by the budget when it starts (the turn before it spent the day): its ticket and slot are given back', async () => {
    // The stand-in reports $0.0123 a turn: the first turn spends a $0.01 day while the second waits behind it.
    const a = createTestAssistant({ yaml: 'maxTurnsPerPerson: 1\naccess:\n  dailyBudgetUsd: 0.01\n' });
    t = a;
    const first = await startTurn(a.assistant.chat('GATE:gate-2 SAY:first', member('u2')), atGate);
    const second = collect(a.assistant.chat('SAY:second', member('u1')));
    await expect.poll(() => a.assistant.status().waiting).toBe(1);
    fs.writeFileSync(path.join(a.dir, 'gate-2'), '');
    expect(completionOf(await first.rest)).toMatchObject({ status: 'completed' });
    const refused = await second;
    assertEnding(refused);
    expect(completionOf(refused)).toMatchObject({ status: 'failed', message: expect.stringContaining('The daily budget is spent') });
    expect(a.standIn.runs()).toHaveLength(1);
    await expectAllReleased(a, 7);
  });
});
