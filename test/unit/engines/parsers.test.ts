import { describe, expect, it } from 'vitest';
import { createCursorParser } from '../../../src/core/engines/cursor-agent.js';
import { createClaudeParser } from '../../../src/core/engines/claude-code.js';
import { createOpenCodeParser } from '../../../src/core/engines/opencode.js';
import { createCodexParser } from '../../../src/core/engines/codex.js';
import { ofType, replay, texts } from '../../helpers/fixtures.js';

const REPLY = 'FAKE-LLM-REPLY: RUN-TOOL turn one: please run a shell command';

describe('engine_b (Claude Code) parser, recorded 2.1.330 output', () => {
  const run = (scenario: string) => replay(createClaudeParser(), 'engine_b', scenario);

  it('tool call: session, tool call with JSON input, tool result, final text, cost and turns', () => {
    const events = run('tool-call');
    expect(ofType(events, 'session')[0]?.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ofType(events, 'tool_call')).toEqual([
      { type: 'tool_call', callId: expect.any(String), name: 'Bash', input: { command: 'echo FAKE-TOOL-OUTPUT', description: expect.any(String) } },
    ]);
    expect(ofType(events, 'tool_result')[0]).toMatchObject({ output: 'FAKE-TOOL-OUTPUT', isError: false });
    expect(texts(events)).toBe(REPLY);
    expect(ofType(events, 'final')).toEqual([{ type: 'final', text: REPLY }]);
    expect(ofType(events, 'usage')[0]).toMatchObject({ costUsd: 0.0016, numTurns: 2 });
    expect(ofType(events, 'failure')).toEqual([]);
  });

  it('partial messages are de-duplicated: deltas are streamed, the whole message is not repeated', () => {
    const events = run('partial-messages');
    expect(ofType(events, 'text').length).toBeGreaterThan(3);
    expect(texts(events)).toBe(REPLY);
    expect(ofType(events, 'tool_call')).toHaveLength(1);
  });

  it('resume keeps the session id and the reply saw turn one', () => {
    const events = run('resume');
    expect(texts(events)).toContain('PREVIOUS-USER-MESSAGE:');
    expect(ofType(events, 'usage')[0]?.numTurns).toBe(1);
  });

  it("cost of a resumed turn is the turn's own, not the session total (total_cost_usd is cumulative)", () => {
    expect(ofType(run('resume'), 'usage')[0]?.costUsd).toBeCloseTo(0.0008, 6);
  });

  it('wrong key: is_error with subtype "success" is a provider failure; the synthetic message is not model text', () => {
    const events = run('wrong-key');
    expect(texts(events)).toBe('');
    expect(ofType(events, 'failure')).toEqual([{ type: 'failure', kind: 'provider', status: 401, message: 'Invalid API key · Fix external API key' }]);
  });

  it('provider down is a provider failure even without an HTTP status', () => {
    const [failure] = ofType(run('provider-down'), 'failure');
    expect(failure).toMatchObject({ kind: 'provider', message: expect.stringMatching(/^API Error: Connection refused/) });
  });

  it('bogus resume id is recognised as session_not_found from the errors array', () => {
    expect(ofType(run('bogus-resume'), 'failure')).toEqual([
      { type: 'failure', kind: 'session_not_found', message: 'No conversation found with session ID: 00000000-0000-4000-8000-000000000000' },
    ]);
  });

  it('big tool output (truncated by Claude Code itself) arrives as one tool result', () => {
    const events = run('big-output');
    expect(ofType(events, 'tool_result')).toHaveLength(1);
    expect(ofType(events, 'tool_result')[0]?.output).toMatch(/x{1000}/);
    expect(ofType(events, 'final')).toHaveLength(1);
  });

  it('an unrelated failure mentioning "session" is not session_not_found', () => {
    const parser = createClaudeParser();
    expect(parser.finish({ code: 1, signal: null, stderrTail: 'Error: session storage is read-only' })).toEqual([
      { type: 'failure', kind: 'engine', message: 'Error: session storage is read-only' },
    ]);
  });

  it('never throws on garbage lines', () => {
    const parser = createClaudeParser();
    for (const line of ['', 'not json', '[]', '{"type":"assistant"}', '{"type":"result","is_error":"yes"}', '{"type":"user","message":{"content":7}}']) {
      expect(() => parser.parseLine(line)).not.toThrow();
    }
  });
});

describe('engine_c (OpenCode) parser, recorded 1.18.33 output', () => {
  const run = (scenario: string) => replay(createOpenCodeParser(), 'engine_c', scenario);

  it('tool call: one tool_use line becomes a call and its result; final text is the last step', () => {
    const events = run('tool-call');
    expect(ofType(events, 'session')).toHaveLength(1);
    expect(ofType(events, 'session')[0]?.sessionId).toMatch(/^ses_/);
    expect(ofType(events, 'tool_call')[0]).toMatchObject({ name: 'bash', input: { command: 'echo FAKE-TOOL-OUTPUT' } });
    expect(ofType(events, 'tool_result')[0]).toMatchObject({ output: expect.stringContaining('FAKE-TOOL-OUTPUT'), isError: false });
    expect(ofType(events, 'final')).toEqual([{ type: 'final', text: expect.stringContaining('FAKE-LLM-REPLY:') }]);
    expect(ofType(events, 'usage').every((u) => u.costUsd === undefined && u.numTurns === undefined)).toBe(true);
  });

  it('no summary event: the final text comes from the last step of a resumed turn', () => {
    const events = run('resume');
    expect(ofType(events, 'final')[0]?.text).toContain('PREVIOUS-USER-MESSAGE:');
  });

  it('wrong key is a provider failure with status 401', () => {
    expect(ofType(run('wrong-key'), 'failure')[0]).toMatchObject({ kind: 'provider', status: 401 });
  });

  it('provider down ("Cannot connect to API") is a provider failure', () => {
    expect(ofType(run('provider-down'), 'failure')[0]).toMatchObject({ kind: 'provider', message: expect.stringMatching(/^Cannot connect to API/) });
  });

  it('bogus session: nothing on stdout, ANSI "Session not found" on stderr → session_not_found', () => {
    const events = replay(createOpenCodeParser(), 'engine_c', 'bogus-resume');
    expect(events).toEqual([{ type: 'failure', kind: 'session_not_found', message: 'Error: Session not found' }]);
  });

  it('native command output parses like a turn', () => {
    expect(ofType(run('command'), 'final')[0]?.text).toContain('fakecmd was invoked with: argument-one');
  });
});

describe('engine_d (Codex) parser, recorded 0.169.0 output', () => {
  const run = (scenario: string) => replay(createCodexParser(), 'engine_d', scenario);

  it('tool output is aggregated_output; the model-metadata error item is only a warning', () => {
    const events = run('tool-call');
    expect(ofType(events, 'session')[0]?.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ofType(events, 'warning')[0]?.message).toMatch(/^Model metadata for/);
    expect(ofType(events, 'tool_call')).toEqual([
      { type: 'tool_call', callId: 'item_1', name: 'shell', input: { command: "/bin/bash -lc 'echo FAKE-TOOL-OUTPUT'" } },
    ]);
    expect(ofType(events, 'tool_result')).toEqual([{ type: 'tool_result', callId: 'item_1', output: 'FAKE-TOOL-OUTPUT\n', isError: false }]);
    expect(ofType(events, 'final')).toEqual([{ type: 'final', text: REPLY }]);
    expect(ofType(events, 'failure')).toEqual([]);
  });

  it('usage has tokens but no cost or turns', () => {
    const [usage] = ofType(run('tool-call'), 'usage');
    expect(usage).toEqual({ type: 'usage', inputTokens: 200, outputTokens: 40 });
  });

  it('wrong key: turn.failed with 401 is a provider failure', () => {
    expect(ofType(run('wrong-key'), 'failure')[0]).toMatchObject({ kind: 'provider', message: expect.stringContaining('401 Unauthorized') });
  });

  it('"Reconnecting... waiting for network" lines are warnings, not failures', () => {
    const events = run('provider-down');
    expect(ofType(events, 'warning').some((w) => w.message.startsWith('Reconnecting... waiting for network'))).toBe(true);
  });

  it('bogus resume: exit 1 and "no rollout found" on stderr → session_not_found', () => {
    expect(run('bogus-resume')).toEqual([{ type: 'failure', kind: 'session_not_found', message: expect.any(String) }]);
  });

  it('a 450 KB tool-output line is kept whole', () => {
    const [result] = ofType(run('big-output'), 'tool_result');
    expect(result?.output.length).toBeGreaterThanOrEqual(300_000);
  });
});

describe('engine_a (Cursor agent) parser, fixtures written from the documentation', () => {
  const run = (scenario: string) => replay(createCursorParser(), 'engine_a', scenario);

  it('tool calls from <name>ToolCall objects, started then completed', () => {
    const events = run('tool-call');
    expect(ofType(events, 'tool_call').map((c) => c.name)).toEqual(['shell', 'read']);
    expect(ofType(events, 'tool_result')[0]?.output).toContain('FAKE-TOOL-OUTPUT');
    expect(ofType(events, 'final')[0]?.text).toBe(REPLY);
  });

  it('partial output: deltas streamed, the repeated whole segment dropped', () => {
    const events = run('partial-output');
    expect(texts(events)).toBe('FAKE-LLM-REPLY: hello, answer with text only');
  });

  it('no cost or turns', () => {
    expect(ofType(run('tool-call'), 'usage')).toEqual([]);
  });

  it('failure without a result line takes the stderr message', () => {
    expect(ofType(run('error'), 'failure')).toEqual([{ type: 'failure', kind: 'engine', message: 'Cannot use this model: fake-model' }]);
  });
});
