import { describe, expect, it } from 'vitest';
import { createClaudeParser } from '../../../src/core/engines/claude-code.js';
import { createCodexParser } from '../../../src/core/engines/codex.js';
import { createOpenCodeParser } from '../../../src/core/engines/opencode.js';
import type { LineParser } from '../../../src/core/engines/runner.js';
import { ofType, replay, texts } from '../../helpers/fixtures.js';

/**
 * Recorded `text-then-tool` runs (the model writes, calls a tool, then answers): every engine
 * streams both texts once, and each engine's own final message holds only the last one, so the
 * reply is built from the text events, not from that message.
 */
const PREAMBLE = 'FAKE-LLM-PREAMBLE: I will run a command first.';
const ANSWER = 'FAKE-LLM-REPLY: TEXT-THEN-TOOL say what you will do, then run a shell command';

const PARSERS: Array<[string, () => LineParser]> = [
  ['engine_b', createClaudeParser],
  ['engine_c', createOpenCodeParser],
  ['engine_d', createCodexParser],
];

describe.each(PARSERS)('%s text-then-tool (recorded)', (engine, createParser) => {
  it('text before the tool call and the answer after it are streamed once each, in order, a blank line apart', () => {
    const events = replay(createParser(), engine, 'text-then-tool');
    expect(texts(events)).toBe(`${PREAMBLE}\n\n${ANSWER}`);
    const order = events.filter((e) => e.type === 'text' || e.type === 'tool_call').map((e) => e.type);
    expect(order[0]).toBe('text');
    expect(order.indexOf('tool_call')).toBeGreaterThan(0);
    expect(order.at(-1)).toBe('text');
  });

  it("the engine's final message is only the last text, not a repeat of the stream", () => {
    expect(ofType(replay(createParser(), engine, 'text-then-tool'), 'final')).toEqual([{ type: 'final', text: ANSWER }]);
  });
});
