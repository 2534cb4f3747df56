import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createAcpConversation, type AcpTurn } from '../../../src/core/engines/acp-client.js';
import type { AgentEvent } from '../../../src/core/events.js';
import { fixtureDir } from '../../helpers/fixtures.js';
import { readTranscript, replayTranscript } from '../../helpers/transcripts.js';

/**
 * Recorded ACP conversations with the real `gemini --acp` and `qwen --acp` (test/fixtures/acp,
 * written by capture-acp.ts through our own client) replayed through a fresh client: it must send
 * the same messages in the same order, and turn the agent's lines into the same events.
 */

/** Feed the agent's lines; before each, wait until the client sent what it had sent at that point in the recording. */
async function replay(name: string) {
  const { lines, meta } = readTranscript<{ turn: Omit<AcpTurn, 'cwd' | 'mcpServers'>; events: AgentEvent[] }>(fixtureDir('acp'), name);
  const conversation = createAcpConversation({ ...meta.turn, cwd: '/home/user/assistant', mcpServers: [], replayQuietMs: 0 });
  // session/cancel: the abort that made the recorded client cancel.
  return { ...(await replayTranscript(conversation, lines, 'session/cancel')), recordedEvents: meta.events };
}

const names = fs
  .readdirSync(fixtureDir('acp'))
  .filter((f) => f.endsWith('.ndjson'))
  .map((f) => f.slice(0, -'.ndjson'.length))
  .sort();

const texts = (events: AgentEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('');
const of = <T extends AgentEvent['type']>(events: AgentEvent[], type: T) => events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type);

describe('ACP client, recorded conversations with gemini --acp 0.61.0 and qwen --acp 0.24.4', () => {
  it('every recorded conversation is there', () => {
    for (const agent of ['gemini', 'qwen']) {
      for (const scenario of ['tool-call', 'resume', 'unknown-session', 'permission-refused', 'cancel', 'wrong-key'])
        expect(names).toContain(`${agent}-${scenario}`);
    }
  });

  it.each(names)('%s: the same messages are sent, and the recorded text, tool calls and session come out', async (name) => {
    const r = await replay(name);
    expect(r.sent).toEqual(r.recordedSent);
    expect(texts(r.events)).toBe(texts(r.recordedEvents));
    expect(of(r.events, 'tool_call')).toEqual(of(r.recordedEvents, 'tool_call'));
    expect(of(r.events, 'tool_result')).toEqual(of(r.recordedEvents, 'tool_result'));
    expect(of(r.events, 'session')).toEqual(of(r.recordedEvents, 'session'));
    expect(of(r.events, 'warning')).toEqual(of(r.recordedEvents, 'warning'));
  });

  it('gemini tool call: announced once with the command, its output as the result', async () => {
    const { events } = await replay('gemini-tool-call');
    expect(of(events, 'tool_call')).toEqual([
      { type: 'tool_call', callId: expect.stringMatching(/^run_shell_command/), name: 'execute', input: expect.any(Object) },
    ]);
    expect(of(events, 'tool_result')).toEqual([{ type: 'tool_result', callId: expect.any(String), output: expect.any(String), isError: false }]);
    expect(texts(events)).toBe('FAKE-LLM-REPLY: RUN-TOOL turn one: please run a shell command');
    expect(of(events, 'usage')).toEqual([{ type: 'usage', inputTokens: 200, outputTokens: 40 }]);
  });

  it("qwen tool call: the pending call waits for its input; the name is the agent's tool name", async () => {
    const { events } = await replay('qwen-tool-call');
    expect(of(events, 'tool_call')).toEqual([
      { type: 'tool_call', callId: expect.any(String), name: 'run_shell_command', input: { command: 'echo FAKE-TOOL-OUTPUT', description: 'Print a marker' } },
    ]);
    expect(of(events, 'tool_result')[0]?.output).toContain('FAKE-TOOL-OUTPUT');
    expect(of(events, 'usage')).toEqual([{ type: 'usage', inputTokens: 200, outputTokens: 40 }]);
  });

  it('qwen resume: session/resume, the same session, the answer saw turn one', async () => {
    const { events, sent } = await replay('qwen-resume');
    expect(sent.map((m) => m.method)).toContain('session/resume');
    expect(texts(events)).toContain('PREVIOUS-USER-MESSAGE: RUN-TOOL turn one');
  });

  it('gemini resume: its session/load fails on a stored session (0.61), the client starts a new one', async () => {
    const { events, sent } = await replay('gemini-resume');
    expect(sent.map((m) => m.method).slice(1, 3)).toEqual(['session/load', 'session/new']);
    expect(of(events, 'warning')).toContainEqual({ type: 'warning', message: 'the previous engine session was not found; a new session was started' });
  });

  it('skipPermissions false: the agent asked, the reject option went back, a warning came out', async () => {
    for (const agent of ['gemini', 'qwen']) {
      const { events, sent } = await replay(`${agent}-permission-refused`);
      const answer = sent.find((m) => (m.result as { outcome?: unknown } | undefined)?.outcome);
      expect(answer?.result).toEqual({ outcome: { outcome: 'selected', optionId: expect.any(String) } });
      expect(of(events, 'warning')[0]?.message).toMatch(/^refused permission for .*FAKE-WRITTEN\.txt.*: skipPermissions is false$/);
      expect(sent.map((m) => m.method)).not.toContain('session/set_mode');
    }
  });

  it('cancel: session/cancel, and the prompt answered "cancelled" ends the conversation', async () => {
    for (const agent of ['gemini', 'qwen']) {
      const { sent, ended } = await replay(`${agent}-cancel`);
      expect(sent.map((m) => m.method)).toContain('session/cancel');
      expect(ended).toBe(true);
    }
  });

  it('wrong key: a provider failure with the API message', async () => {
    const gemini = await replay('gemini-wrong-key');
    expect(of(gemini.events, 'failure')).toEqual([
      { type: 'failure', kind: 'provider', message: 'API error 400: API key not valid. Please pass a valid API key.' },
    ]);
    const qwen = await replay('qwen-wrong-key');
    expect(of(qwen.events, 'failure')).toEqual([{ type: 'failure', kind: 'provider', message: expect.stringMatching(/401 Incorrect API key provided/) }]);
  });
});
