import { describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/core/events.js';
import { assertEnding, collect, completionOf, createTestAssistant } from '../../helpers/assistant.js';

/**
 * The resume fallback, per engine, from each CLI's recorded output: a resumed turn that the
 * engine answers with "unknown session" (its `bogus-resume` fixture, replayed by the stand-in
 * when asked to resume) is run once more as a new session, transparently; any other failure of a
 * resumed turn (its `wrong-key` fixture) is reported as it is and not retried.
 * engine_a has no recorded unknown-session output (its CLI cannot run here); its not-retried case
 * uses the documented `error` fixture, and the stand-in's invented wording covers the retry in
 * test/integration/engines/turn.test.ts.
 */
const CASES = [
  { engine: 'engine_a', unknownSession: undefined, otherFailure: 'error', otherMessage: 'Cannot use this model: fake-model' },
  { engine: 'engine_b', unknownSession: 'bogus-resume', otherFailure: 'wrong-key', otherMessage: 'Invalid API key' },
  { engine: 'engine_c', unknownSession: 'bogus-resume', otherFailure: 'wrong-key', otherMessage: 'Incorrect API key' },
  { engine: 'engine_d', unknownSession: 'bogus-resume', otherFailure: 'wrong-key', otherMessage: '401' },
  { engine: 'engine_e', unknownSession: 'bogus-resume', otherFailure: 'wrong-key', otherMessage: 'API key not valid' },
  { engine: 'engine_f', unknownSession: 'bogus-resume', otherFailure: 'wrong-key', otherMessage: 'Incorrect API key' },
] as const;

type Run = { prompt: string; sessionIn: string | null; sessionOut: string };

describe.each(CASES)('$engine: resume fallback from recorded output', ({ engine, unknownSession, otherFailure, otherMessage }) => {
  /** A key with a saved session, then one more turn on it. */
  async function resumedTurn(prompt: string) {
    const t = createTestAssistant({ engine });
    assertEnding(await collect(t.assistant.chat('first turn', { sessionKey: 'k' })));
    const saved = (await t.store.getSession('k'))?.sessionId;
    expect(saved).toBeTruthy();
    const events = await collect(t.assistant.chat(prompt, { sessionKey: 'k' }));
    assertEnding(events);
    return { t, saved, events, runs: t.standIn.runs() as Run[] };
  }

  it.skipIf(!unknownSession)('the engine reports the session as unknown: a new session answers, and nothing of the failed attempt shows', async () => {
    const prompt = `REPLAY-ON-RESUME:${unknownSession}`;
    const { t, saved, events, runs } = await resumedTurn(prompt);
    expect(runs.map((r) => r.sessionIn)).toEqual([null, saved, null]);
    expect(completionOf(events)).toMatchObject({ status: 'completed', finalText: `ECHO: ${prompt}\nTURN: 1`, sessionId: runs[2]?.sessionOut });
    expect(events.filter((e: StreamEvent) => e.type === 'error')).toEqual([]);
    expect((await t.store.getSession('k'))?.sessionId).toBe(runs[2]?.sessionOut);
    t.close();
  });

  it('any other failure of a resumed turn is reported as it is and not retried', async () => {
    const { t, saved, events, runs } = await resumedTurn(`REPLAY-ON-RESUME:${otherFailure}`);
    expect(runs.map((r) => r.sessionIn)).toEqual([null, saved]);
    expect(completionOf(events)).toMatchObject({ status: 'failed', message: expect.stringContaining(otherMessage) });
    t.close();
  });
});
