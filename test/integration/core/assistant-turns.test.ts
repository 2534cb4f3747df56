import { describe, expect, it } from 'vitest';
import { mergePatch } from '../../../src/core/config/write-back.js';
import { assertEnding, collect, completionOf, createTestAssistant } from '../../helpers/assistant.js';
import { isAlive } from '../../helpers/stand-in.js';
import { HANG_MS, poll, until } from '../../helpers/wait.js';

type Run = { prompt: string; pid: number; startedAt: number; sessionIn: string | null; sessionOut: string };
const runsOf = (t: ReturnType<typeof createTestAssistant>) => t.standIn.runs().filter((r) => r.pid) as unknown as Run[];

describe('chat core: queueing, limits and endings', () => {
  it('turns of one key run one at a time, in arrival order', async () => {
    const t = createTestAssistant();
    const prompts = ['first SLEEP:300', 'second SLEEP:300', 'third SLEEP:300'];
    const results = await Promise.all(prompts.map((p) => collect(t.assistant.chat(p, { sessionKey: 'k' }))));
    results.forEach(assertEnding);
    const runs = runsOf(t);
    expect(runs.map((r) => r.prompt)).toEqual(prompts);
    const done = results.map((r) => completionOf(r));
    expect(done.map((c) => c.status)).toEqual(['completed', 'completed', 'completed']);
    // each run started after the previous one had slept its 300 ms
    for (let i = 1; i < runs.length; i++) expect(runs[i]!.startedAt - runs[i - 1]!.startedAt).toBeGreaterThanOrEqual(300);
    expect(done.map((c) => c.finalText?.split('\n')[1])).toEqual(['TURN: 1', 'TURN: 2', 'TURN: 3']);
    t.close();
  });

  it('different keys run in parallel', async () => {
    const t = createTestAssistant();
    // Turns that never end by themselves: three engines at once can only mean they run in parallel.
    const turns = ['a', 'b', 'c'].map((k) => collect(t.assistant.chat(`HANG ${k}`, { sessionKey: k })));
    await until(() => runsOf(t).length === 3, HANG_MS, 'three engines running at once');
    for (const k of ['a', 'b', 'c']) expect(t.assistant.abort(k)).toBe(true);
    expect((await Promise.all(turns)).map((events) => completionOf(events).status)).toEqual(['aborted', 'aborted', 'aborted']);
    t.close();
  });

  it('maxQueuePerSession: one more gets the exact in-stream error, at once', async () => {
    const t = createTestAssistant({ yaml: 'maxQueuePerSession: 1\n' });
    let runningEnded = false;
    const running = collect(t.assistant.chat('HANG a', { sessionKey: 'k' })).finally(() => (runningEnded = true));
    await until(() => runsOf(t).length === 1, HANG_MS, 'the first turn to run');
    const waiting = collect(t.assistant.chat('b', { sessionKey: 'k' }));
    const rejected = await collect(t.assistant.chat('c', { sessionKey: 'k' }));
    // "At once": answered while the turn ahead of it still runs (it never ends by itself).
    expect(runningEnded).toBe(false);
    expect(rejected).toEqual([
      { type: 'error', message: 'Too many pending requests for this session (limit: 1). Try again later.' },
      { type: 'done', durationMs: 0 },
      { type: 'completion', status: 'failed', message: 'Too many pending requests for this session (limit: 1). Try again later.' },
    ]);
    expect(t.assistant.abort('k')).toBe(true);
    expect(completionOf(await running).status).toBe('aborted');
    const next = completionOf(await waiting);
    expect(`${next.status}: ${next.message ?? ''}`).toBe('completed: ');
    t.close();
  });

  it('maxConcurrent: one more gets the exact busy error; a live config change applies to the next turn', async () => {
    const t = createTestAssistant({ yaml: 'maxConcurrent: 2\n' });
    const a = collect(t.assistant.chat('SLEEP:800', { sessionKey: 'a' }));
    const b = collect(t.assistant.chat('SLEEP:800', { sessionKey: 'b' }));
    const c = await collect(t.assistant.chat('x', { sessionKey: 'c' }));
    expect(c[0]).toEqual({ type: 'error', message: 'Server busy: too many concurrent requests (limit: 2). Try again later.' });
    assertEnding(c);
    t.config.edit(mergePatch({ maxConcurrent: 3 }, {}));
    const d = await collect(t.assistant.chat('y', { sessionKey: 'd' }));
    expect(completionOf(d).status).toBe('completed');
    await Promise.all([a, b]);
    t.close();
  });

  it('every path ends with done then exactly one completion', async () => {
    const t = createTestAssistant();
    const cases: Array<[string, string, Record<string, unknown>]> = [
      ['hello', 'completed', { finalText: 'ECHO: hello\nTURN: 1' }],
      ['SAY:[PASS]', 'silent', { finalText: '[PASS]' }],
      ['EMPTY', 'failed', { message: 'The engine returned an empty reply' }],
      ['FAIL: model exploded', 'failed', { message: 'model exploded' }],
      ['HANG', 'failed', { message: 'Agent invocation timed out' }],
      ['CRASH', 'failed', { message: 'stand-in: simulated crash' }],
    ];
    for (const [prompt, status, fields] of cases) {
      // Only the hanging engine meets a short timeout: on a loaded machine a 1 s limit could cut the others too.
      t.config.edit(mergePatch({ timeout: prompt === 'HANG' ? 1 : 600 }, {}));
      const events = await collect(t.assistant.chat(prompt, { sessionKey: prompt }));
      assertEnding(events);
      expect(completionOf(events)).toMatchObject({ status, ...fields });
      if (status === 'failed') expect(events.find((e) => e.type === 'error')).toEqual({ type: 'error', message: fields.message });
      const done = events.at(-2);
      expect(done).toMatchObject({ type: 'done', durationMs: expect.any(Number) });
    }
    t.close();
  });

  it('done carries cost and turns from engine_b only', async () => {
    const b = createTestAssistant({ engine: 'engine_b' });
    const withCost = await collect(b.assistant.chat('hi'));
    expect(withCost.at(-2)).toMatchObject({ type: 'done', costUsd: 0.0123, numTurns: 2, sessionId: expect.any(String) });
    b.close();
    const d = createTestAssistant({ engine: 'engine_d' });
    const without = await collect(d.assistant.chat('hi'));
    expect(without.at(-2)).not.toHaveProperty('costUsd');
    expect(without.at(-2)).not.toHaveProperty('numTurns');
    d.close();
  });

  it('abort kills the engine, yields aborted with the text so far, keeps history; waiting turns proceed', async () => {
    const t = createTestAssistant();
    const events: Array<{ type: string }> = [];
    const running = (async () => {
      for await (const e of t.assistant.chat('HANG', { sessionKey: 'k' })) events.push(e);
    })();
    const next = collect(t.assistant.chat('after', { sessionKey: 'k' }));
    const pid = await poll(() => runsOf(t)[0]?.pid, HANG_MS, 'the engine to start', 20);
    expect(t.assistant.abort('k')).toBe(true);
    await running;
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'aborted', finalText: '' });
    expect(events.some((e) => e.type === 'error')).toBe(false);
    expect(isAlive(pid)).toBe(false);
    expect(completionOf(await next).status).toBe('completed');
    expect(t.assistant.abort('k')).toBe(false);
    expect((await t.store.readHistory('k')).map((h) => h.role)).toEqual(['user', 'user', 'assistant']);
    t.close();
  });

  it('the caller stopping to read does not stop the turn; its reply still lands in history', async () => {
    const t = createTestAssistant();
    for await (const e of t.assistant.chat('SLEEP:300 disconnected client', { sessionKey: 'gone' })) {
      void e;
      break; // the reader goes away after the first event (or none)
    }
    await until(async () => (await t.store.readHistory('gone')).length === 2, HANG_MS, 'both history entries', 20);
    expect((await t.store.readHistory('gone'))[1]?.text).toContain('ECHO: SLEEP:300 disconnected client');
    t.close();
  });

  it('reset clears the engine session and the history of the key', async () => {
    const t = createTestAssistant();
    await collect(t.assistant.chat('one', { sessionKey: 'k' }));
    await collect(t.assistant.chat('two', { sessionKey: 'k' }));
    await t.assistant.reset('k');
    expect(await t.store.getSession('k')).toBeUndefined();
    expect(await t.store.readHistory('k')).toEqual([]);
    const after = await collect(t.assistant.chat('three', { sessionKey: 'k' }));
    expect(completionOf(after).finalText).toBe('ECHO: three\nTURN: 1');
    t.close();
  });
});
