import { describe, expect, it } from 'vitest';
import { createGeminiParser } from '../../../src/core/engines/gemini-cli.js';
import { createQwenParser } from '../../../src/core/engines/qwen-code.js';
import { ofType, replay, texts } from '../../helpers/fixtures.js';

const REPLY = 'FAKE-LLM-REPLY: RUN-TOOL turn one: please run a shell command';
const PREAMBLE = 'FAKE-LLM-PREAMBLE: I will run a command first.';

describe('engine_e (Gemini CLI) parser, recorded 0.61.0 output', () => {
  const run = (scenario: string) => replay(createGeminiParser(), 'engine_e', scenario);

  it('tool call: session from init, the shell call with its parameters, its output, the text deltas joined', () => {
    const events = run('tool-call');
    expect(ofType(events, 'session')).toEqual([{ type: 'session', sessionId: expect.stringMatching(/^[0-9a-f-]{36}$/) }]);
    expect(ofType(events, 'tool_call')).toEqual([
      {
        type: 'tool_call',
        callId: expect.stringMatching(/^run_shell_command__/),
        name: 'run_shell_command',
        input: { command: 'echo FAKE-TOOL-OUTPUT', description: 'Print a marker' },
      },
    ]);
    const [call] = ofType(events, 'tool_call');
    expect(ofType(events, 'tool_result')).toEqual([{ type: 'tool_result', callId: call?.callId, output: 'FAKE-TOOL-OUTPUT', isError: false }]);
    expect(ofType(events, 'text').length).toBeGreaterThan(1);
    expect(texts(events)).toBe(REPLY);
    expect(ofType(events, 'failure')).toEqual([]);
  });

  it('no cost and no turn count: only tokens (per invocation)', () => {
    expect(ofType(run('tool-call'), 'usage')).toEqual([{ type: 'usage', inputTokens: 200, outputTokens: 40 }]);
    expect(ofType(run('resume'), 'usage')).toEqual([{ type: 'usage', inputTokens: 100, outputTokens: 20 }]);
  });

  it('resume: the answer saw turn one', () => {
    expect(texts(run('resume'))).toBe('FAKE-LLM-REPLY: turn two: what did I ask before?\nPREVIOUS-USER-MESSAGE: RUN-TOOL turn one: please run a shell command');
  });

  it('text, then a tool call, then text: two blocks separated by a blank line', () => {
    const events = run('text-then-tool');
    expect(texts(events)).toBe(`${PREAMBLE}\n\nFAKE-LLM-REPLY: TEXT-THEN-TOOL say what you will do, then run a shell command`);
    expect(events.map((e) => e.type).filter((t) => t === 'tool_call' || t === 'tool_result')).toEqual(['tool_call', 'tool_result']);
  });

  it('big tool output arrives whole in one tool result', () => {
    const [result] = ofType(run('big-output'), 'tool_result');
    expect(result?.output.length).toBeGreaterThanOrEqual(300_000);
  });

  it("wrong key: Google's 400 API_KEY_INVALID inside [API Error: …] is a provider failure with a readable message", () => {
    const events = run('wrong-key');
    expect(texts(events)).toBe('');
    expect(ofType(events, 'failure')).toEqual([
      { type: 'failure', kind: 'provider', status: 400, message: 'Gemini API error 400: API key not valid. Please pass a valid API key.' },
    ]);
  });

  it('bogus resume id: stderr only, exit 42 → session_not_found', () => {
    expect(ofType(run('bogus-resume'), 'failure')).toEqual([
      { type: 'failure', kind: 'session_not_found', message: expect.stringContaining('Invalid session identifier "00000000-0000-4000-8000-000000000000"') },
    ]);
  });

  it('a run that ended without a result line failed, even with exit code 0 (0.61 exits 0 on SIGTERM)', () => {
    for (const scenario of ['sigterm', 'provider-down']) {
      expect(ofType(run(scenario), 'failure')).toEqual([{ type: 'failure', kind: 'engine', message: 'Gemini CLI ended without a result' }]);
    }
  });

  it('an error line of severity warning is a warning; severity error is kept for a result without a message', () => {
    const parser = createGeminiParser();
    expect(parser.parseLine('{"type":"error","severity":"warning","message":"Loop detected"}')).toEqual([{ type: 'warning', message: 'Loop detected' }]);
    parser.parseLine('{"type":"error","severity":"error","message":"Maximum session turns exceeded"}');
    expect(parser.parseLine('{"type":"result","status":"error","stats":{}}')).toContainEqual({
      type: 'failure',
      kind: 'engine',
      message: 'Maximum session turns exceeded',
    });
  });

  it('never throws on garbage lines', () => {
    const parser = createGeminiParser();
    for (const line of ['', 'not json', '[1,2]', '{"type":"message","role":"assistant"}', '{"type":"tool_use"}', '{"type":"result"}', 'null']) {
      expect(() => parser.parseLine(line)).not.toThrow();
    }
  });
});

describe('engine_f (Qwen Code) parser, recorded 0.24.4 output', () => {
  const run = (scenario: string) => replay(createQwenParser(), 'engine_f', scenario);

  it('tool call: streamed deltas not repeated by the whole message; tool call and result; final text; turns', () => {
    const events = run('tool-call');
    expect(ofType(events, 'session')[0]?.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ofType(events, 'tool_call')).toEqual([
      { type: 'tool_call', callId: expect.any(String), name: 'run_shell_command', input: { command: 'echo FAKE-TOOL-OUTPUT', description: 'Print a marker' } },
    ]);
    expect(ofType(events, 'tool_result')).toMatchObject([{ output: 'FAKE-TOOL-OUTPUT', isError: false }]);
    expect(ofType(events, 'text').length).toBeGreaterThan(1);
    expect(texts(events)).toBe(REPLY);
    expect(ofType(events, 'final')).toEqual([{ type: 'final', text: REPLY }]);
    expect(ofType(events, 'usage')).toEqual([{ type: 'usage', inputTokens: 200, outputTokens: 40, numTurns: 2 }]);
  });

  it("usage of a resumed turn is the turn's own (result.usage is cumulative for the session)", () => {
    const events = run('resume');
    expect(texts(events)).toContain('PREVIOUS-USER-MESSAGE: RUN-TOOL turn one');
    expect(ofType(events, 'usage')).toEqual([{ type: 'usage', inputTokens: 100, outputTokens: 20, numTurns: 1 }]);
  });

  it('text, then a tool call, then text: two blocks', () => {
    expect(texts(run('text-then-tool'))).toBe(`${PREAMBLE}\n\nFAKE-LLM-REPLY: TEXT-THEN-TOOL say what you will do, then run a shell command`);
  });

  it('wrong key: the streamed "[API Error: 401 …]" text is not model text; a provider failure with status 401', () => {
    const events = run('wrong-key');
    expect(texts(events)).toBe('');
    expect(ofType(events, 'failure')).toEqual([
      { type: 'failure', kind: 'provider', status: 401, message: expect.stringMatching(/^API error 401 Incorrect API key provided/) },
    ]);
  });

  it('bogus resume id: stderr only, exit 1 → session_not_found', () => {
    expect(ofType(run('bogus-resume'), 'failure')).toEqual([
      { type: 'failure', kind: 'session_not_found', message: expect.stringContaining('No saved session found with ID') },
    ]);
  });

  it('killed mid-turn: an engine failure with the stderr line', () => {
    expect(ofType(run('sigterm'), 'failure')).toEqual([{ type: 'failure', kind: 'engine', message: 'Operation cancelled.' }]);
  });

  it('the goal_state stream event and other unknown events are ignored', () => {
    const parser = createQwenParser();
    expect(parser.parseLine('{"type":"stream_event","event":{"type":"goal_state","goal_state":{"v":2}}}')).toEqual([]);
    for (const line of ['', 'x', '{"type":"assistant"}', '{"type":"user","message":{"content":"x"}}', '{"type":"stream_event"}']) {
      expect(() => parser.parseLine(line)).not.toThrow();
    }
  });
});
