import { describe, expect, it } from 'vitest';
import { assertEnding, collect, completionOf, createTestAssistant } from '../../helpers/assistant.js';
import { collectEscapesPerTest } from '../../helpers/resources.js';

/**
 * Issue 12, item 1, through the chat core: a value the OS cannot pass to an engine (here a NUL in
 * a prompt that engine_a takes as argv, as a channel message could carry) fails that turn with
 * error → done → completion failed and a clear message; the next turn on the same core runs.
 */
// Anything that escapes a run lands here instead of killing the test worker silently.
const escaped = collectEscapesPerTest();

describe('a turn that cannot be spawned fails alone', () => {
  it('NUL in an argv prompt (engine_a): error → done → completion failed, then the next turn completes', async () => {
    const t = createTestAssistant({ engine: 'engine_a' });
    const failed = await collect(t.assistant.chat('hello\u0000world', { sessionKey: 'k' }));
    assertEnding(failed);
    const error = failed.find((e) => e.type === 'error');
    expect(error).toEqual({
      type: 'error',
      message: expect.stringMatching(/^cannot start agent: argument \d+ contains a NUL byte, which no program can receive$/),
    });
    const message = error?.type === 'error' ? error.message : '';
    expect(completionOf(failed)).toMatchObject({ status: 'failed', message });
    const next = await collect(t.assistant.chat('hello again', { sessionKey: 'k' }));
    expect(completionOf(next)).toMatchObject({ status: 'completed', finalText: expect.stringContaining('ECHO: hello again') });
    expect(escaped).toEqual([]);
    t.close();
  });
});
