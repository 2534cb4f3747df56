/**
 * The acp engine against the stand-in ACP agent (test/fakes/acp-agent.mjs), through the engine runner
 * and the real runner: the protocol's edge cases that real agents do not produce on demand.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngineRunner, type EngineTurnRequest } from '../../../src/core/engines/engine-runner.js';
import { createMemoryFailoverStore } from '../../../src/core/engines/failover.js';
import type { AgentEvent } from '../../../src/core/events.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { createStandIn, isAlive } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { until } from '../../helpers/wait.js';

interface Setup {
  args?: string[];
  yaml?: string;
}

function setup(opts: Setup = {}) {
  const standIn = createStandIn();
  const args = opts.args ?? [];
  const dir = testdir({
    'service.yaml': `name: tester\nengine: acp\nacp:\n  command: acp-agent\n  args: ${JSON.stringify(args)}\n${opts.yaml ?? ''}`,
    'skills/notes/SKILL.md': '---\nname: notes\ndescription: Keep notes.\n---\nBody\n',
  });
  const runner = createEngineRunner({
    dir,
    stateDir: path.join(dir, '.service'),
    skillsDir: path.join(dir, 'skills'),
    log: createSilentLogger(),
    failover: createMemoryFailoverStore(),
    env: { ...process.env, ...standIn.env },
  });
  const config = () => loadServiceConfig(dir, {}).config;
  const run = async (req: Partial<EngineTurnRequest> & { prompt: string }) => {
    const events: AgentEvent[] = [];
    for await (const e of runner.run({ config: config(), ...req })) events.push(e);
    return events;
  };
  /** Every message the agent received, in order (from its log). */
  const received = () =>
    standIn
      .runs()
      .flatMap((r) =>
        r.received ? [r.received as { id?: number; method?: string; params?: Record<string, unknown>; result?: unknown; error?: unknown }] : [],
      );
  return { dir, standIn, run, received };
}

const terminal = (events: AgentEvent[]) => events.find((e) => e.type === 'done' || e.type === 'error');
const sessionOf = (events: AgentEvent[]) => events.filter((e) => e.type === 'session').at(-1)?.sessionId;
const texts = (events: AgentEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('');
const warnings = (events: AgentEvent[]) => events.flatMap((e) => (e.type === 'warning' ? [e.message] : []));
const methods = (t: ReturnType<typeof setup>) => t.received().flatMap((m) => (m.method ? [m.method] : []));

describe('acp engine: a session with the stand-in agent', () => {
  it('initialize, session/new, unattended mode, prompt: text chunks, one tool call with its input and result, usage, done', async () => {
    const t = setup();
    const events = await t.run({ prompt: 'TOOL:shell hello' });
    expect(methods(t)).toEqual(['initialize', 'session/new', 'session/set_mode', 'session/prompt']);
    expect(t.received().find((m) => m.method === 'session/set_mode')?.params).toMatchObject({ modeId: 'yolo' });
    expect(t.received()[0]?.params).toEqual({ protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } });
    expect(events.filter((e) => e.type === 'tool_call')).toEqual([
      { type: 'tool_call', callId: expect.stringMatching(/^call_/), name: 'execute', input: { command: 'echo hi' } },
    ]);
    expect(events.filter((e) => e.type === 'tool_result')).toEqual([
      { type: 'tool_result', callId: expect.stringMatching(/^call_/), output: 'hi', isError: false },
    ]);
    expect(texts(events)).toBe('ECHO: TOOL:shell hello\nTURN: 1');
    expect(events.find((e) => e.type === 'usage')).toEqual({ type: 'usage', inputTokens: 10, outputTokens: 5 });
    expect(terminal(events)).toMatchObject({ type: 'done', text: 'ECHO: TOOL:shell hello\nTURN: 1' });
    expect(sessionOf(events)).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('the context file (acp.contextFile, default AGENTS.md), skill links and MCP servers in ACP shape', async () => {
    const t = setup({
      yaml: 'mcp:\n  docs:\n    command: docs-server\n    args: [--stdio]\n    env: { TOKEN: abc }\n  web:\n    url: http://127.0.0.1:9/mcp\n',
    });
    await t.run({ prompt: 'hi' });
    expect(fs.readFileSync(path.join(t.dir, 'AGENTS.md'), 'utf8')).toContain('**notes**');
    expect(fs.readlinkSync(path.join(t.dir, '.agents', 'skills', 'notes'))).toBe(path.join('..', '..', 'skills', 'notes'));
    expect(t.received().find((m) => m.method === 'session/new')?.params).toEqual({
      cwd: t.dir,
      mcpServers: [
        { name: 'docs', command: 'docs-server', args: ['--stdio'], env: [{ name: 'TOKEN', value: 'abc' }] },
        { type: 'http', name: 'web', url: 'http://127.0.0.1:9/mcp', headers: [] },
      ],
    });
  });

  it('a model the agent offers is selected with session/set_model; one it does not offer is a warning', async () => {
    const t = setup({ yaml: 'model: large\n' });
    await t.run({ prompt: 'hi' });
    expect(t.received().find((m) => m.method === 'session/set_model')?.params).toMatchObject({ modelId: 'standin-large' });
    const u = setup({ yaml: 'model: huge\n' });
    const events = await u.run({ prompt: 'hi' });
    expect(warnings(events)).toContain('the ACP agent does not offer model "huge"; it uses its own default');
    expect(terminal(events)?.type).toBe('done');
  });
});

describe('acp engine: resuming', () => {
  it('session/resume where the agent offers it: no replay, the same session continues', async () => {
    const t = setup({ args: ['--resume-capability'] });
    const id = sessionOf(await t.run({ prompt: 'one' }));
    const events = await t.run({ prompt: 'two', sessionId: id });
    expect(methods(t).filter((m) => m.startsWith('session/') && m !== 'session/set_mode')).toEqual([
      'session/new',
      'session/prompt',
      'session/resume',
      'session/prompt',
    ]);
    expect(texts(events)).toBe('ECHO: two\nTURN: 2');
    expect(sessionOf(events)).toBe(id);
  });

  it('session/load: the replayed history is not part of the new answer', async () => {
    const t = setup();
    const id = sessionOf(await t.run({ prompt: 'one' }));
    const events = await t.run({ prompt: 'two', sessionId: id });
    expect(methods(t)).toContain('session/load');
    expect(texts(events)).toBe('ECHO: two\nTURN: 2');
  });

  it('session/load answered before the replay (Gemini CLI 0.61): the late replay is still not part of the answer', async () => {
    const t = setup({ args: ['--replay-after-answer'] });
    const id = sessionOf(await t.run({ prompt: 'one' }));
    sessionOf(await t.run({ prompt: 'two', sessionId: id }));
    // The answer takes a moment, as a model's does: a replay still arriving meanwhile would be taken for it.
    const events = await t.run({ prompt: 'three SLEEP:200', sessionId: id });
    expect(texts(events)).toBe('ECHO: three SLEEP:200\nTURN: 3');
  });

  it('an unknown session: a new one in the same process, with the fallback warning', async () => {
    const t = setup();
    const events = await t.run({ prompt: 'after bogus', sessionId: '00000000-0000-4000-8000-000000000000' });
    expect(warnings(events)).toContain('the previous engine session was not found; a new session was started');
    expect(methods(t)).toEqual(['initialize', 'session/load', 'session/new', 'session/set_mode', 'session/prompt']);
    expect(terminal(events)).toMatchObject({ type: 'done', text: 'ECHO: after bogus\nTURN: 1' });
    expect(t.standIn.runs().filter((r) => r.engine)).toHaveLength(1);
  });

  it('an agent that can neither load nor resume: a new session, with a warning', async () => {
    const t = setup({ args: ['--no-load'] });
    const id = sessionOf(await t.run({ prompt: 'one' }));
    const events = await t.run({ prompt: 'two', sessionId: id });
    expect(warnings(events)).toContain('the ACP agent cannot resume sessions; a new session was started');
    expect(texts(events)).toBe('ECHO: two\nTURN: 1');
  });
});

describe('acp engine: what the agent asks of the client', () => {
  it('skipPermissions (default): a permission request is answered with the allow-once option', async () => {
    const t = setup();
    const events = await t.run({ prompt: 'ASK' });
    const answer = t.received().find((m) => m.method === undefined && JSON.stringify(m.result ?? '').includes('outcome'));
    expect(answer?.result).toEqual({ outcome: { outcome: 'selected', optionId: 'proceed_once' } });
    expect(texts(events)).toContain('PERMISSION: proceed_once');
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ isError: false, output: 'hi' });
  });

  it('skipPermissions false: rejected with the reject option, a warning, no unattended mode; the tool call fails', async () => {
    const t = setup({ yaml: 'skipPermissions: false\n' });
    const events = await t.run({ prompt: 'ASK' });
    expect(methods(t)).not.toContain('session/set_mode');
    expect(texts(events)).toContain('PERMISSION: cancel');
    expect(warnings(events)).toContain('refused permission for shell: echo hi: skipPermissions is false');
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ isError: true, output: 'denied by the user' });
    expect(terminal(events)?.type).toBe('done');
  });

  it('file system, terminal and unknown methods are answered with "Method not found"', async () => {
    const t = setup();
    const events = await t.run({ prompt: 'FS UNKNOWN-REQUEST' });
    expect(texts(events)).toContain('FS: Method not found: fs/read_text_file');
    expect(texts(events)).toContain('UNKNOWN: -32601');
    expect(terminal(events)?.type).toBe('done');
  });

  it('an agent that needs authentication gets acp.authMethod after initialize', async () => {
    const without = await setup({ args: ['--need-auth'] }).run({ prompt: 'hi' });
    expect(terminal(without)).toMatchObject({ type: 'error', message: 'the ACP agent could not create a session: Authentication required' });
    const t = setup({ args: ['--need-auth'], yaml: '  authMethod: standin-key\n' });
    const events = await t.run({ prompt: 'hi' });
    expect(methods(t).slice(0, 3)).toEqual(['initialize', 'authenticate', 'session/new']);
    expect(terminal(events)?.type).toBe('done');
  });
});

describe('acp engine: failures, abort and the process', () => {
  it('the prompt answered with an error: the error text is the turn error', async () => {
    const events = await setup().run({ prompt: 'FAIL: the model went away' });
    expect(terminal(events)).toMatchObject({ type: 'error', code: 'engine_reported', message: 'Internal error: the model went away' });
  });

  it('stopReason refusal is a failed turn', async () => {
    const events = await setup().run({ prompt: 'REFUSE' });
    expect(terminal(events)).toMatchObject({ type: 'error', message: 'the agent refused to answer (stopReason refusal)' });
  });

  it('an agent that exits without answering: a failure with its stderr', async () => {
    const events = await setup().run({ prompt: 'CRASH' });
    expect(terminal(events)).toMatchObject({ type: 'error', message: 'the ACP agent exited with code 3 before it answered: acp stand-in: simulated crash' });
  });

  it('a protocol version it does not speak is a clear error', async () => {
    const events = await setup({ args: ['--protocol', '2'] }).run({ prompt: 'hi' });
    expect(terminal(events)).toMatchObject({ type: 'error', message: 'the ACP agent speaks protocol version 2, this client 1' });
  });

  it('abort: session/cancel goes to the agent, the turn ends aborted, and the grandchild is gone', async () => {
    const t = setup();
    const controller = new AbortController();
    const running = t.run({ prompt: 'GRANDCHILD', signal: controller.signal });
    await until(() => t.standIn.runs().some((r) => r.grandchild), 60_000, 'the grandchild');
    controller.abort();
    const events = await running;
    expect(terminal(events)).toMatchObject({ type: 'error', code: 'aborted' });
    expect(methods(t)).toContain('session/cancel');
    const grandchild = t.standIn.runs().find((r) => r.grandchild)?.grandchild as number;
    expect(isAlive(grandchild)).toBe(false);
  });

  it('abort of an agent that ignores session/cancel: the process group is killed anyway', async () => {
    const t = setup();
    const controller = new AbortController();
    const running = t.run({ prompt: 'HANG IGNORE-CANCEL', signal: controller.signal });
    await until(() => methods(t).includes('session/prompt'), 60_000, 'the prompt');
    controller.abort();
    const events = await running;
    expect(terminal(events)).toMatchObject({ type: 'error', code: 'aborted' });
    const pid = t.standIn.runs().find((r) => r.engine)?.pid as number;
    expect(isAlive(pid)).toBe(false);
  });

  it('an agent that stays up after answering is stopped, and the turn is still done', async () => {
    const t = setup();
    const events = await t.run({ prompt: 'LINGER SAY:finished' });
    expect(terminal(events)).toMatchObject({ type: 'done', text: 'finished' });
    const pid = t.standIn.runs().find((r) => r.engine)?.pid as number;
    expect(isAlive(pid)).toBe(false);
  });

  it('a turn longer than timeout is cut with "Agent invocation timed out"', async () => {
    const events = await setup({ yaml: 'timeout: 2\n' }).run({ prompt: 'HANG IGNORE-CANCEL' });
    expect(terminal(events)).toMatchObject({ type: 'error', code: 'timeout', message: 'Agent invocation timed out' });
  });

  it('a command that is not installed: the error names it', async () => {
    const t = setup();
    fs.writeFileSync(path.join(t.dir, 'service.yaml'), 'name: tester\nengine: acp\nacp:\n  command: no-such-acp-agent\n');
    const events = await t.run({ prompt: 'hi' });
    expect(terminal(events)).toMatchObject({ type: 'error', code: 'spawn_failed', message: expect.stringContaining('no-such-acp-agent') });
  });
});
