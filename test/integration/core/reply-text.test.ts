import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/core/events.js';
import { assertEnding, collect, completionOf, createTestAssistant } from '../../helpers/assistant.js';
import { fixtureDir, readFixture } from '../../helpers/fixtures.js';

/**
 * The reply of a turn is every `text` event of the turn, in order: `completion.finalText` is
 * exactly what the `text` events streamed, so a client that reads only `completion` and one
 * that concatenates `text` see the same reply (also when the agent wrote before a tool call).
 */
const ENGINES = ['engine_a', 'engine_b', 'engine_c', 'engine_d', 'engine_e', 'engine_f'] as const;

const joinedText = (events: StreamEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.content] : [])).join('');

/** Every recorded run of an engine that ended well (exit 0): the ones with a reply. */
function successfulFixtures(engine: string): string[] {
  return (
    fs
      .readdirSync(fixtureDir(engine))
      .filter((f) => f.endsWith('.ndjson'))
      .map((f) => f.slice(0, -'.ndjson'.length))
      // Gemini CLI exits 0 on SIGTERM too: a run the capture had to cut has no reply.
      .filter((scenario) => readFixture(engine, scenario).meta.exitCode === 0 && !readFixture(engine, scenario).meta.killedByCapture)
      .sort()
  );
}

describe.each(ENGINES)('%s: completion.finalText is the text events joined', (engine) => {
  it('a tool call between two paragraphs: finalText holds the text before and after it (stand-in)', async () => {
    const t = createTestAssistant({ engine });
    const events = await collect(t.assistant.chat('PARAGRAPHS'));
    assertEnding(events);
    const completion = completionOf(events);
    expect(completion.status).toBe('completed');
    expect(events.map((e) => e.type).filter((type) => type === 'tool_call')).toHaveLength(1);
    expect(completion.finalText).toBe(joinedText(events));
    expect(completion.finalText).toMatch(/^First paragraph\.\n\nSecond paragraph\.\n\nThird paragraph\.$/);
    // history and the activity feed keep the whole reply too
    expect((await t.store.readHistory('default')).at(-1)?.text).toBe(completion.finalText);
    expect((await t.assistant.recentActivity(1))[0]?.responsePreview).toBe('First paragraph. Second paragraph. Third paragraph.');
    t.close();
  });

  it('text before a tool call is part of the reply; a [PASS] answer after it is still silent, an [ESCALATE] one still escalates', async () => {
    const t = createTestAssistant({ engine });
    const said = await collect(t.assistant.chat('TEXT-THEN-TOOL SAY:done'));
    expect(completionOf(said)).toMatchObject({ status: 'completed', finalText: 'Let me look that up.\n\ndone' });
    expect(completionOf(said).finalText).toBe(joinedText(said));
    const passed = await collect(t.assistant.chat('TEXT-THEN-TOOL SAY:[PASS]', { sessionKey: 'group' }));
    expect(completionOf(passed)).toMatchObject({ status: 'silent', finalText: '[PASS]' });
    await collect(t.assistant.chat('TEXT-THEN-TOOL SAY:[ESCALATE] refund above the limit', { sessionKey: 'esc' }));
    expect((await t.assistant.recentActivity(1))[0]).toMatchObject({ sessionKey: 'esc', escalated: true });
    t.close();
  });

  it.each(successfulFixtures(engine))('recorded run %s: finalText === joined text events, not empty', async (scenario) => {
    const t = createTestAssistant({ engine });
    const events = await collect(t.assistant.chat(`REPLAY:${scenario}`));
    assertEnding(events);
    const completion = completionOf(events);
    expect(completion.status).toBe('completed');
    expect(completion.finalText).toBe(joinedText(events));
    expect(completion.finalText).toContain('FAKE-LLM-REPLY:');
    if (scenario === 'text-then-tool') {
      // the real CLIs: text, a tool call, then the answer; their own final message is only the answer
      expect(completion.finalText).toMatch(/^FAKE-LLM-PREAMBLE: I will run a command first\.\n\nFAKE-LLM-REPLY: TEXT-THEN-TOOL/);
    }
    t.close();
  });
});
