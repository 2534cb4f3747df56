import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/core/events.js';
import { assertEnding, collect, completionOf, createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';
import { poll } from '../../helpers/wait.js';

/**
 * Chat approvals through the assistant with a real engine process (engine_b's stand-in asks the
 * way Claude Code does, through our MCP helper): the request reaches the turn's stream, and the
 * answer routing (who may answer, timeout, abort) decides whether the command's file appears.
 */
let t: TestAssistant | undefined;
afterEach(async () => {
  await t?.assistant.drain(0);
  t?.close();
  t = undefined;
});

const SIDE_EFFECT = 'APPROVED-SIDE-EFFECT.txt';
const ASK = `ASK:echo done > ${SIDE_EFFECT}`;

/** Start a turn; resolve with the first approval_request it streams and the rest of the turn. */
function startTurn(a: TestAssistant, opts: Parameters<TestAssistant['assistant']['chat']>[1], prompt = ASK) {
  const events: StreamEvent[] = [];
  const done = (async () => {
    for await (const e of a.assistant.chat(prompt, opts)) events.push(e);
    return events;
  })();
  const request = poll(
    () => events.find((e): e is Extract<StreamEvent, { type: 'approval_request' }> => e.type === 'approval_request'),
    undefined,
    'an approval_request',
  );
  return { request, done };
}

const sideEffect = (a: TestAssistant) => fs.existsSync(path.join(a.dir, SIDE_EFFECT));

describe('chat approvals through the assistant (skipPermissions: false)', () => {
  it('the request streams as approval_request {id, tool, summary, detail, cut}; the one who started the turn allows it, the command runs', async () => {
    t = createTestAssistant({ yaml: 'skipPermissions: false\n' });
    const turn = startTurn(t, { sessionKey: 'tg:dm:1', source: 'channel_e', caller: 'channel_e:1' });
    const req = await turn.request;
    const shown = `echo done > ${SIDE_EFFECT}`;
    expect(req).toEqual({ type: 'approval_request', id: expect.any(String), tool: 'Bash', summary: shown, detail: shown, cut: false });
    const answer = await t.assistant.runCommand('/allow', { sessionKey: 'tg:dm:1', caller: 'channel_e:1', allowConfigChanges: false, source: 'channel_e' });
    expect(answer).toMatchObject({ approval: req.id, decision: 'allow' });
    const events = await turn.done;
    assertEnding(events);
    expect(completionOf(events)).toMatchObject({ status: 'completed', finalText: 'ALLOWED' });
    expect(sideEffect(t)).toBe(true);
    // Order on the wire: the tool call, then its approval request, then its result.
    const types = events.map((e) => e.type);
    expect(types.indexOf('tool_call')).toBeLessThan(types.indexOf('approval_request'));
    expect(types.indexOf('approval_request')).toBeLessThan(types.indexOf('tool_result'));
  });

  it('someone else in the chat is refused (the request keeps waiting); an admin denies it; the agent goes on without the command', async () => {
    t = createTestAssistant({ yaml: 'skipPermissions: false\n' });
    const turn = startTurn(t, { sessionKey: 'tg:group:9', source: 'channel_e', caller: 'channel_e:1' });
    const req = await turn.request;
    const stranger = await t.assistant.runCommand(`/allow ${req.id}`, { sessionKey: 'tg:group:9', caller: 'channel_e:2', allowConfigChanges: false });
    expect(stranger).toMatchObject({ error: 'approval_not_allowed' });
    const admin = await t.assistant.runCommand('/deny', { sessionKey: 'tg:group:9', caller: 'channel_e:7', allowConfigChanges: true });
    expect(admin).toMatchObject({ decision: 'deny' });
    const events = await turn.done;
    expect(completionOf(events)).toMatchObject({ status: 'completed', finalText: expect.stringMatching(/^DENIED: The person denied/) });
    expect(sideEffect(t)).toBe(false);
  });

  it('no answer within approvalTimeoutSeconds denies', async () => {
    t = createTestAssistant({ yaml: 'skipPermissions: false\napprovalTimeoutSeconds: 0.5\n' });
    const events = await collect(t.assistant.chat(ASK, { sessionKey: 'k', caller: 'channel_e:1' }));
    expect(events.some((e) => e.type === 'approval_request')).toBe(true);
    expect(completionOf(events)).toMatchObject({ status: 'completed', finalText: expect.stringMatching(/^DENIED: No answer within 1 s/) });
    expect(sideEffect(t)).toBe(false);
  });

  it('an abort while the request waits denies it and ends the turn aborted; nothing is left waiting', async () => {
    t = createTestAssistant({ yaml: 'skipPermissions: false\n' });
    const turn = startTurn(t, { sessionKey: 'k', caller: 'channel_e:1' });
    await turn.request;
    expect(t.assistant.abort('k')).toBe(true);
    const events = await turn.done;
    assertEnding(events);
    expect(completionOf(events).status).toBe('aborted');
    expect(t.assistant.answerApproval({ sessionKey: 'k', decision: 'allow', privileged: true })).toMatchObject({ ok: false, reason: 'none_waiting' });
    expect(sideEffect(t)).toBe(false);
  });

  it('a scheduled task cannot be asked: the tool is denied at once, nothing is shown', async () => {
    t = createTestAssistant({ yaml: 'skipPermissions: false\n' });
    const events = await collect(t.assistant.chat(ASK, { sessionKey: 'cron:x', source: 'cron', askApprovals: false }));
    expect(events.some((e) => e.type === 'approval_request')).toBe(false);
    expect(completionOf(events)).toMatchObject({ finalText: expect.stringMatching(/^DENIED: No one can approve/) });
  });

  it('/allow always: the second ask of the tool in the session runs without a request; /reset forgets it', async () => {
    t = createTestAssistant({ yaml: 'skipPermissions: false\n' });
    const turn = startTurn(t, { sessionKey: 'k', caller: 'channel_e:1' }, `${ASK}\nASK2:echo again >> ${SIDE_EFFECT}`);
    await turn.request;
    expect(await t.assistant.runCommand('/allow always', { sessionKey: 'k', caller: 'channel_e:1', allowConfigChanges: false })).toMatchObject({
      decision: 'allow_always',
    });
    const events = await turn.done;
    expect(events.filter((e) => e.type === 'approval_request')).toHaveLength(1);
    expect(completionOf(events)).toMatchObject({ finalText: 'ALLOWED\nALLOWED' });
    expect(fs.readFileSync(path.join(t.dir, SIDE_EFFECT), 'utf8')).toBe('done\nagain\n');
    await t.assistant.runCommand('/reset', { sessionKey: 'k' });
    const again = startTurn(t, { sessionKey: 'k', caller: 'channel_e:1' });
    await again.request;
    t.assistant.answerApproval({ sessionKey: 'k', decision: 'deny', privileged: true });
    await again.done;
  });

  it('/allow and /deny with nothing waiting say so; /help lists them', async () => {
    t = createTestAssistant({ yaml: 'skipPermissions: false\n' });
    expect(await t.assistant.runCommand('/deny', { sessionKey: 'k' })).toMatchObject({ error: 'approval_none_waiting' });
    expect((await t.assistant.runCommand('/help', { sessionKey: 'k' })).text).toMatch(/\/allow \[always\] \[id\][\s\S]*\/deny \[id\]/);
    expect(t.assistant.runsAtOnce('/allow x')).toBe(true);
    expect(t.assistant.runsAtOnce('/STOP')).toBe(true);
    expect(t.assistant.runsAtOnce('/status')).toBe(false);
    expect(t.assistant.runsAtOnce('allow')).toBe(false);
  });
});
