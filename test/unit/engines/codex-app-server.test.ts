import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ApprovalAsk } from '../../../src/core/approvals/approvals.js';
import { type CodexAppServerTurn, createCodexAppServerConversation } from '../../../src/core/engines/codex-app-server.js';
import { codex } from '../../../src/core/engines/codex.js';
import type { EngineTurn } from '../../../src/core/engines/types.js';
import type { AgentEvent } from '../../../src/core/events.js';
import { loadServiceConfig } from '../../../src/definitions.js';
import { FAKE_ASKING_COMMAND } from '../../fakes/fake-llm.js';
import { fixtureDir } from '../../helpers/fixtures.js';
import { testdir } from '../../helpers/testdir.js';
import { readTranscript, replayTranscript } from '../../helpers/transcripts.js';
import { until } from '../../helpers/wait.js';

/**
 * Recorded `codex app-server` conversations with the real Codex 0.169 (test/fixtures/engine_d-app-server,
 * written by capture-codex-app-server.ts through our own client) replayed through a fresh client: it
 * must send the same messages in the same order (approval answers included), and turn the server's
 * lines into the same events.
 */
interface Meta {
  turn: Omit<CodexAppServerTurn, 'cwd' | 'ask' | 'clientVersion'>;
  decision?: 'allow' | 'deny';
  asked: ApprovalAsk[];
  events: AgentEvent[];
}

const DIR = fixtureDir('engine_d-app-server');

/** Feed the server's lines; before each, wait until the client sent what it had sent at that point in the recording. */
async function replay(name: string) {
  const { lines, meta } = readTranscript<Meta>(DIR, name);
  const asked: ApprovalAsk[] = [];
  const ask = meta.decision
    ? async (r: ApprovalAsk) => {
        asked.push(r);
        return { allow: meta.decision === 'allow', message: meta.decision ?? '' };
      }
    : undefined;
  const conversation = createCodexAppServerConversation({ ...meta.turn, cwd: '/home/user/assistant', clientVersion: '0.1.0', ...(ask ? { ask } : {}) });
  // turn/interrupt: the abort that made the recorded client interrupt the turn.
  const { events, sent, recordedSent, ended } = await replayTranscript(conversation, lines, 'turn/interrupt');
  return { events, sent, recordedSent, meta, asked, ended };
}

const names = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith('.ndjson'))
  .map((f) => f.slice(0, -'.ndjson'.length))
  .sort();

const texts = (events: AgentEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('');
const of = <T extends AgentEvent['type']>(events: AgentEvent[], type: T) => events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type);
const failure = (events: AgentEvent[]) => events.find((e) => e.type === 'failure');
const answers = (sent: Array<Record<string, unknown>>) => sent.filter((m) => m.method === undefined && 'result' in m).map((m) => m.result);

describe('codex app-server client, recorded conversations with Codex 0.169.0', () => {
  it('every recorded conversation is there', () => {
    for (const scenario of ['approval-denied', 'approval-allowed', 'no-one-to-ask', 'text-only', 'unknown-session', 'cancel', 'wrong-key'])
      expect(names).toContain(scenario);
  });

  it.each(names)('%s: the same messages are sent, and the recorded text, tool calls and session come out', async (name) => {
    const r = await replay(name);
    expect(r.sent).toEqual(r.recordedSent);
    expect(r.asked).toEqual(r.meta.asked);
    expect(texts(r.events)).toBe(texts(r.meta.events));
    for (const type of ['tool_call', 'tool_result', 'session', 'warning', 'usage'] as const) expect(of(r.events, type)).toEqual(of(r.meta.events, type));
  });

  it('opens with initialize, initialized, thread/start (untrusted policy), then turn/start with the prompt', async () => {
    const { sent } = await replay('text-only');
    expect(sent.slice(0, 4).map((m) => m.method)).toEqual(['initialize', 'initialized', 'thread/start', 'turn/start']);
    expect(sent[2]?.params).toEqual({ cwd: '/home/user/assistant', approvalPolicy: 'untrusted', sandbox: 'danger-full-access' });
    expect(sent[3]?.params).toMatchObject({ input: [{ type: 'text', text: 'hello, answer with text only', text_elements: [] }] });
  });

  it('denied: the person saw the shell command, codex got "decline", the item ends declined and the turn answers', async () => {
    const r = await replay('approval-denied');
    expect(r.asked).toHaveLength(1);
    expect(r.asked[0]?.tool).toBe('shell');
    expect(JSON.stringify(r.asked[0]?.input)).toContain(FAKE_ASKING_COMMAND);
    expect(answers(r.sent)).toEqual([{ decision: 'decline' }]);
    expect(of(r.events, 'tool_result')).toEqual([{ type: 'tool_result', callId: expect.any(String), output: 'declined', isError: true }]);
    expect(r.events.at(-1)).toEqual({ type: 'final', text: 'FAKE-LLM-REPLY: ASK-TOOL turn one: please write a file' });
    expect(r.ended).toBe(true);
  });

  it('allowed on a resumed thread: thread/resume with the id, "accept", the command output, the earlier message remembered', async () => {
    const r = await replay('approval-allowed');
    expect(r.sent[2]).toMatchObject({ method: 'thread/resume', params: { threadId: r.meta.turn.threadId, excludeTurns: true } });
    expect(answers(r.sent)).toEqual([{ decision: 'accept' }]);
    expect(of(r.events, 'session')).toEqual([{ type: 'session', sessionId: r.meta.turn.threadId }]);
    expect(of(r.events, 'tool_result')[0]).toMatchObject({ output: 'FAKE-TOOL-OUTPUT\n', isError: false });
    expect(of(r.events, 'final')[0]?.text).toContain('PREVIOUS-USER-MESSAGE: ASK-TOOL turn one');
  });

  it('nobody to ask: declined with a warning, the turn goes on', async () => {
    const r = await replay('no-one-to-ask');
    expect(answers(r.sent)).toEqual([{ decision: 'decline' }]);
    expect(of(r.events, 'warning').map((w) => w.message)).toContain('refused permission for shell: nobody can approve it in this turn');
    expect(of(r.events, 'final')).toHaveLength(1);
  });

  it('an unknown thread id fails as session_not_found (the engine runner then starts a new thread)', async () => {
    const r = await replay('unknown-session');
    expect(failure(r.events)).toMatchObject({ kind: 'session_not_found', message: expect.stringContaining('no rollout found') });
  });

  it('abort: turn/interrupt with the thread and turn ids; the interrupted turn is no failure', async () => {
    const r = await replay('cancel');
    const interrupt = r.sent.find((m) => m.method === 'turn/interrupt');
    expect(interrupt?.params).toEqual({ threadId: expect.any(String), turnId: expect.any(String) });
    expect(failure(r.events)).toBeUndefined();
    expect(r.ended).toBe(true);
  });

  it('a rejected key is a provider failure with the server message', async () => {
    const r = await replay('wrong-key');
    expect(failure(r.events)).toMatchObject({ kind: 'provider', message: expect.stringContaining('401 Unauthorized') });
  });
});

describe('codex app-server client, protocol details from the 0.169 schema', () => {
  const open = (turn: Partial<CodexAppServerTurn> = {}) => {
    const c = createCodexAppServerConversation({
      cwd: '/w',
      prompt: 'p',
      images: [],
      approvalPolicy: 'untrusted',
      sandbox: 'danger-full-access',
      clientVersion: '0',
      ...turn,
    });
    const sent: Array<Record<string, unknown>> = [];
    c.conversation?.open({ send: (l) => sent.push(JSON.parse(l)), end: () => undefined });
    const feed = (msg: unknown) => c.parseLine(JSON.stringify(msg));
    feed({ id: 1, result: {} });
    feed({ id: 2, result: { thread: { id: 'T' } } });
    feed({ id: 3, result: { turn: { id: 'U' } } });
    return { c, sent, feed };
  };

  it('a file change asks with the paths from its item, and answers what the person said', async () => {
    const asked: ApprovalAsk[] = [];
    const t = open({ ask: async (r) => (asked.push(r), { allow: true, message: 'ok' }) });
    const item = { type: 'fileChange', id: 'fc1', status: 'inProgress', changes: [{ path: '/w/a.txt', kind: { type: 'add' }, diff: '+x' }] };
    expect(t.feed({ method: 'item/started', params: { threadId: 'T', turnId: 'U', item } })).toEqual([
      { type: 'tool_call', callId: 'fc1', name: 'file_change', input: { changes: [{ path: '/w/a.txt', kind: 'add' }] } },
    ]);
    t.feed({ method: 'item/fileChange/requestApproval', id: 7, params: { threadId: 'T', turnId: 'U', itemId: 'fc1', startedAtMs: 0 } });
    await until(() => t.sent.some((m) => m.id === 7), 5_000, 'the answer', 1);
    expect(asked).toEqual([{ tool: 'file_change', input: { path: '/w/a.txt' } }]);
    expect(t.sent.find((m) => m.id === 7)).toEqual({ id: 7, result: { decision: 'accept' } });
  });

  it('requests for extra permissions, user input and elicitations are refused; unknown requests get method-not-found', () => {
    const t = open();
    t.feed({ method: 'item/permissions/requestApproval', id: 8, params: { threadId: 'T' } });
    t.feed({ method: 'item/tool/requestUserInput', id: 9, params: { threadId: 'T' } });
    t.feed({ method: 'mcpServer/elicitation/request', id: 10, params: { threadId: 'T' } });
    t.feed({ method: 'attestation/generate', id: 11, params: {} });
    expect(t.sent.slice(-4)).toEqual([
      { id: 8, result: { permissions: {}, scope: 'turn' } },
      { id: 9, result: { answers: {} } },
      { id: 10, result: { action: 'decline', content: null, _meta: null } },
      { id: 11, error: { code: -32601, message: 'Method not found: attestation/generate' } },
    ]);
  });

  it('after an abort a waiting approval is answered "cancel"', async () => {
    let release: (v: { allow: boolean; message: string }) => void = () => undefined;
    const t = open({ ask: () => new Promise((r) => (release = r)) });
    t.feed({ method: 'item/commandExecution/requestApproval', id: 5, params: { threadId: 'T', turnId: 'U', itemId: 'c', command: 'rm -rf x' } });
    t.c.conversation?.cancel?.();
    expect(t.sent.at(-1)).toMatchObject({ method: 'turn/interrupt', params: { threadId: 'T', turnId: 'U' } });
    release({ allow: false, message: 'The turn was stopped' });
    await until(() => t.sent.some((m) => m.id === 5), 5_000, 'the answer', 1);
    expect(t.sent.find((m) => m.id === 5)).toEqual({ id: 5, result: { decision: 'cancel' } });
  });

  it('images go as localImage inputs', () => {
    const t = open({ images: ['/tmp/a.png'] });
    expect(t.sent.find((m) => m.method === 'turn/start')?.params).toMatchObject({ input: [{ type: 'text' }, { type: 'localImage', path: '/tmp/a.png' }] });
  });
});

describe('engine_d invocation', () => {
  const turnFor = (yaml: string, extra: Partial<EngineTurn> = {}): EngineTurn => ({
    prompt: 'hi',
    dir: '/w',
    stateDir: '/w/.service',
    images: [],
    config: loadServiceConfig(testdir({ 'service.yaml': `name: t\nengine: engine_d\n${yaml}` }), {}).config,
    isRoot: false,
    ...extra,
  });

  it('skipPermissions true (the default): codex exec --json with the prompt on stdin, as before', () => {
    const inv = codex.buildInvocation(turnFor(''));
    expect(inv.args.slice(0, 4)).toEqual(['exec', '--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox']);
    expect(inv.args.at(-1)).toBe('-');
    expect(inv.stdin).toBe('hi');
    expect(codex.createParser(turnFor('')).conversation).toBeUndefined();
  });

  it('skipPermissions false: codex app-server with the same -c overrides, no prompt in argv or stdin, a conversing parser', () => {
    const yaml = 'skipPermissions: false\nmodel: m1\ncodex:\n  search: true\n';
    const inv = codex.buildInvocation(turnFor(yaml, { sessionId: '01a21557-a39e-7320-a175-77005990c30b', model: 'm1' }));
    expect(inv.args.slice(0, 2)).toEqual(['--search', 'app-server']);
    expect(inv.args).toEqual(expect.arrayContaining(['-c', 'analytics.enabled=false', '-c', 'model="m1"']));
    expect(inv.args).not.toContain('--dangerously-bypass-approvals-and-sandbox');
    expect(inv.args).not.toContain('hi');
    expect(inv.stdin).toBeUndefined();
    expect(codex.createParser(turnFor(yaml)).conversation).toBeDefined();
    expect(codex.approvals).toBe('conversation');
  });

  it('app-server permissions: untrusted and no sandbox by default; mode safe sandboxes; explicit values win', () => {
    const first = (yaml: string) => {
      const sent: Array<Record<string, unknown>> = [];
      const c = codex.createParser(turnFor(`skipPermissions: false\n${yaml}`));
      c.conversation?.open({ send: (l) => sent.push(JSON.parse(l)), end: () => undefined });
      c.parseLine(JSON.stringify({ id: 1, result: {} }));
      return sent.find((m) => m.method === 'thread/start')?.params;
    };
    expect(first('')).toMatchObject({ approvalPolicy: 'untrusted', sandbox: 'danger-full-access' });
    expect(first('codex:\n  mode: safe\n')).toMatchObject({ approvalPolicy: 'untrusted', sandbox: 'workspace-write' });
    expect(first('codex:\n  approval: on-request\n')).toMatchObject({ approvalPolicy: 'on-request', sandbox: 'workspace-write' });
    expect(first('codex:\n  sandbox: read-only\n')).toMatchObject({ approvalPolicy: 'untrusted', sandbox: 'read-only' });
  });
});
