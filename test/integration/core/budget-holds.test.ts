import { afterEach, describe, expect, it } from 'vitest';
import { formatLocalDay } from '../../../src/core/util/local-day.js';
import { collect, completionOf, createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';
import { parseSseStrict, startTestServer, type TestServer } from '../../helpers/server.js';
import { until } from '../../helpers/wait.js';
import { activity } from '../../unit/store/store-contract.js';

/**
 * Issue 29, medium 3: the daily budget under load. The stand-in engine_b reports $0.0123 a turn;
 * turns sleep so that they overlap. Checking the budget only when a turn was queued let every
 * turn of a burst run; now each asks again when it starts and holds its estimated cost while it
 * runs, so the day ends at most one turn's cost over the cap.
 */
const TURN_COST = 0.0123;
let t: TestAssistant | undefined;
let s: TestServer | undefined;
afterEach(async () => {
  t?.close();
  t = undefined;
  await s?.stop();
  s = undefined;
});

const today = () => formatLocalDay(Date.now());

describe('the daily budget when turns start', () => {
  it('25 channel turns at once with $0.04 left under a $0.30 cap: the day ends at most one turn over the cap; the rest are refused', async () => {
    const a = createTestAssistant({ yaml: 'maxConcurrent: 25\naccess:\n  dailyBudgetUsd: 0.30\n' });
    t = a;
    // Earlier today: 20 turns of $0.013 ($0.26 spent): the automatic hold is the most a recent turn cost.
    for (let i = 0; i < 20; i++) await t.store.recordActivity(activity({ ts: new Date().toISOString(), source: 'channel_e', costUsd: 0.013 }));
    const turns = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        collect(a.assistant.chat('SLEEP:400 hi', { sessionKey: `channel_e:dm:${i}`, source: 'channel_e', waitForCapacity: true })),
      ),
    );
    const spent = await t.store.dailyCost(today());
    expect(spent).toBeLessThanOrEqual(0.3 + TURN_COST + 1e-9);
    const ran = t.standIn.runs().length;
    expect(ran).toBeGreaterThan(0);
    expect(ran).toBeLessThanOrEqual(4);
    const refused = turns.map(completionOf).filter((c) => c.status === 'failed');
    expect(refused).toHaveLength(25 - ran);
    for (const c of refused) expect(c.message).toContain('The daily budget is spent');
    expect(await t.store.recentActivity(25, { statuses: ['refused'] })).toHaveLength(25 - ran);
  });

  it('over HTTP, a $0.02 cap with nothing known about a turn: turns run one at a time until the cap, then are refused', async () => {
    s = await startTestServer({ yaml: 'access:\n  dailyBudgetUsd: 0.02\n' });
    const srv = s;
    const bodies = await Promise.all(
      Array.from({ length: 10 }, async (_, i) =>
        parseSseStrict(await (await srv.api('/chat', { json: { message: 'SLEEP:200 hi', sessionKey: `k${i}` } })).text()),
      ),
    );
    expect(await srv.store.dailyCost(today())).toBeLessThanOrEqual(0.02 + TURN_COST + 1e-9);
    expect(srv.standIn.runs()).toHaveLength(2); // $0.0123 left room for a second, whose hold was then the first's cost
    const completions = bodies.map((b) => b.at(-1) as { status: string; message?: string });
    expect(completions.filter((c) => c.status === 'completed')).toHaveLength(2);
    expect(completions.filter((c) => c.message?.includes('The daily budget is spent'))).toHaveLength(8);
  });

  it('a configured hold (access.reservePerTurnUsd) sizes what each running turn keeps; the owner at the terminal is never held or refused', async () => {
    const a = createTestAssistant({ yaml: 'maxConcurrent: 10\naccess:\n  dailyBudgetUsd: 0.05\n  reservePerTurnUsd: 0.02\n' });
    t = a;
    const channel = Array.from({ length: 6 }, (_, i) =>
      collect(a.assistant.chat('SLEEP:300 hi', { sessionKey: `c${i}`, source: 'channel_e', waitForCapacity: true })),
    );
    const owner = collect(t.assistant.chat('SLEEP:300 mine', { sessionKey: 'me', source: 'terminal' }));
    const done = (await Promise.all(channel)).map(completionOf);
    expect(completionOf(await owner).status).toBe('completed');
    // 0 + 0.02 + 0.02 < 0.05 lets three start together; their $0.0369 leaves room for one more.
    const completed = done.filter((c) => c.status === 'completed').length;
    expect(completed).toBeGreaterThanOrEqual(3);
    expect(completed).toBeLessThanOrEqual(5);
    expect(await t.store.dailyCost(today())).toBeLessThanOrEqual(0.05 + TURN_COST + TURN_COST + 1e-9); // the owner's turn counts too
    // Spent: the owner still runs (and it counts).
    expect(completionOf(await collect(t.assistant.chat('later', { sessionKey: 'me', source: 'terminal' }))).status).toBe('completed');
  });

  it('refusals that never ran (busy, bad input) say nothing about what a turn costs: they do not shrink the hold to 0', async () => {
    const a = createTestAssistant({ yaml: 'maxConcurrent: 10\naccess:\n  dailyBudgetUsd: 0.05\n' });
    t = a;
    await a.store.recordActivity(activity({ ts: new Date().toISOString(), source: 'http', costUsd: 0.02, durationMs: 900 }));
    for (let i = 0; i < 30; i++) {
      await a.store.recordActivity(activity({ ts: new Date().toISOString(), status: 'failed', error: 'Server busy', costUsd: 0, durationMs: 0 }));
    }
    const turns = Array.from({ length: 6 }, (_, i) =>
      collect(a.assistant.chat('SLEEP:300 hi', { sessionKey: `b${i}`, source: 'http', waitForCapacity: true })),
    );
    await Promise.all(turns);
    expect(await a.store.dailyCost(today())).toBeLessThanOrEqual(0.05 + TURN_COST + 1e-9);
    expect(a.standIn.runs().length).toBeLessThanOrEqual(3);
  });

  it('a turn waiting for room is stopped by an abort like any queued turn, and holds nothing after', async () => {
    t = createTestAssistant({ yaml: 'access:\n  dailyBudgetUsd: 1\n  reservePerTurnUsd: 1\n' });
    const first = collect(t.assistant.chat('SLEEP:600 first', { sessionKey: 'a', source: 'http' }));
    const ctl = new AbortController();
    const second = collect(t.assistant.chat('second', { sessionKey: 'b', source: 'http', signal: ctl.signal }));
    // The first holds the whole day's budget: the second waits; aborting it ends it at once.
    await until(() => (t?.standIn.runs().length ?? 0) === 1, undefined, 'the first turn to run');
    ctl.abort();
    expect(completionOf(await second)).toMatchObject({ status: 'aborted' });
    expect(completionOf(await first).status).toBe('completed');
    expect(t.standIn.runs()).toHaveLength(1);
    // Both holds are gone: the next turn starts at once.
    expect(completionOf(await collect(t.assistant.chat('third', { sessionKey: 'c', source: 'http' }))).status).toBe('completed');
  });
});
