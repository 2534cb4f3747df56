/**
 * Warm engine processes through the assistant, with the stand-in ACP agent as the resident engine
 * (`engine: acp`, `acp-agent`): one process per conversation, handed turn after turn; an abort
 * interrupts and keeps it; a crash fails the turn and the next one starts another process that
 * resumes the session; idle end, the pool limit (least recently used first), /reset, a config
 * change; an engine whose resident mode fails to start runs per turn.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/core/events.js';
import { assertEnding, collect, completionOf, createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';
import { until } from '../../helpers/wait.js';
import { isAlive } from '../../helpers/warm.js';

const opened: TestAssistant[] = [];
afterEach(async () => {
  for (const t of opened.splice(0)) {
    await t.assistant.drain(1_000);
    await t.close();
  }
});

function open(yaml = ''): TestAssistant {
  const t = createTestAssistant({ engine: 'acp', yaml });
  opened.push(t);
  return t;
}

async function turn(t: TestAssistant, prompt: string, key = 'k'): Promise<StreamEvent[]> {
  const events = await collect(t.assistant.chat(prompt, { sessionKey: key }));
  assertEnding(events);
  return events;
}

const pids = (t: TestAssistant) => t.assistant.engine.warm.processes().map((p) => p.pid);
/** Agent processes started so far (the stand-in logs one `run` line per start). */
const starts = (t: TestAssistant) => t.standIn.runs().filter((r) => r.argv !== undefined).length;

describe('warm engine processes (stand-in ACP agent)', () => {
  it('a follow-up turn goes to the same process: same pid, no new start, the session goes on', async () => {
    const t = open();
    expect(completionOf(await turn(t, 'one')).finalText).toBe('ECHO: one\nTURN: 1');
    const [pid] = pids(t);
    expect(pid).toBeDefined();
    expect(completionOf(await turn(t, 'two')).finalText).toBe('ECHO: two\nTURN: 2');
    expect(completionOf(await turn(t, 'three')).finalText).toBe('ECHO: three\nTURN: 3');
    expect(pids(t)).toEqual([pid]);
    expect(starts(t)).toBe(1);
    expect(isAlive(pid!)).toBe(true);
  });

  it('an abort interrupts the turn (session/cancel) and keeps the process for the next turn', async () => {
    const t = open();
    await turn(t, 'one');
    const [pid] = pids(t);
    const hanging = turn(t, 'HANG until stopped');
    await until(() => t.assistant.engine.warm.processes()[0]?.busy === true, undefined, 'the turn to run');
    expect(t.assistant.abort('k')).toBe(true);
    expect(completionOf(await hanging).status).toBe('aborted');
    // The stand-in counts answered prompts: the cancelled one is not among them.
    expect(completionOf(await turn(t, 'after')).finalText).toBe('ECHO: after\nTURN: 2');
    expect(pids(t)).toEqual([pid]);
    expect(starts(t)).toBe(1);
  });

  it('an engine that ignores the interrupt is stopped; the next turn starts another process on the same session', async () => {
    const t = open();
    await turn(t, 'one');
    const [pid] = pids(t);
    const hanging = turn(t, 'HANG IGNORE-CANCEL');
    await until(() => t.assistant.engine.warm.processes()[0]?.busy === true, undefined, 'the turn to run');
    t.assistant.abort('k');
    expect(completionOf(await hanging).status).toBe('aborted');
    await until(() => !isAlive(pid!), undefined, 'the stuck process to end');
    const next = completionOf(await turn(t, 'after'));
    expect(next.status).toBe('completed');
    expect(next.finalText).toMatch(/^ECHO: after\nTURN: [23]$/);
    expect(pids(t)).not.toEqual([pid]);
    expect(starts(t)).toBe(2);
  });

  it('a crash mid-turn fails that turn with the engine error; the next turn starts another process that resumes the session', async () => {
    const t = open();
    await turn(t, 'one');
    const [pid] = pids(t);
    const session = (await t.store.getSession('k'))?.sessionId;
    const crashed = completionOf(await turn(t, 'CRASH now'));
    expect(crashed.status).toBe('failed');
    expect(crashed.message).toMatch(/the ACP agent exited with code 3 before it answered/);
    const next = completionOf(await turn(t, 'after the crash'));
    expect(next.status).toBe('completed');
    expect(next.finalText).toMatch(/^ECHO: after the crash\nTURN: [23]$/);
    expect(next.sessionId).toBe(session);
    expect(pids(t)).toHaveLength(1);
    expect(pids(t)).not.toEqual([pid]);
  });

  it('a process that ends by itself (exit 0) as the next turn reaches it: that turn runs per turn and answers on the session', async () => {
    const t = open();
    await turn(t, 'one QUIT-ON-NEXT');
    const [pid] = pids(t);
    const session = (await t.store.getSession('k'))?.sessionId;
    const next = completionOf(await turn(t, 'two'));
    expect(next.status).toBe('completed');
    expect(next.finalText).toBe('ECHO: two\nTURN: 2');
    expect(next.sessionId).toBe(session);
    expect(isAlive(pid!)).toBe(false);
    // Per turn for that one; the turn after it is warm again, on another process.
    expect(completionOf(await turn(t, 'three')).finalText).toBe('ECHO: three\nTURN: 3');
    expect(pids(t)).toHaveLength(1);
    expect(pids(t)).not.toEqual([pid]);
  });

  it('a program whose resident processes end by themselves after one turn, twice in a row, runs per turn from then on', async () => {
    const t = open();
    for (const prompt of ['one QUIT-AFTER', 'two QUIT-AFTER']) {
      expect(completionOf(await turn(t, prompt)).status).toBe('completed');
      await until(() => pids(t).length === 0, undefined, 'the process that quit to leave the pool');
    }
    expect(starts(t)).toBe(2);
    // Per turn now: the turn starts the agent, and nothing stays behind to be handed the next one.
    expect(completionOf(await turn(t, 'three')).finalText).toBe('ECHO: three\nTURN: 3');
    expect(starts(t)).toBe(3);
    expect(pids(t)).toEqual([]);
  });

  it('an idle process ends after warm.idleSeconds; the next turn starts another on the same session', async () => {
    const t = open('warm:\n  idleSeconds: 0.2\n');
    await turn(t, 'one');
    const [pid] = pids(t);
    await until(() => !isAlive(pid!) && pids(t).length === 0, undefined, 'the idle process to end');
    expect(completionOf(await turn(t, 'two')).finalText).toBe('ECHO: two\nTURN: 2');
    expect(starts(t)).toBe(2);
  });

  it('at most warm.maxProcesses processes: a new conversation ends the least recently used idle one', async () => {
    const t = open('warm:\n  maxProcesses: 2\n');
    await turn(t, 'a1', 'a');
    await turn(t, 'b1', 'b');
    const byKey = () => Object.fromEntries(t.assistant.engine.warm.processes().map((p) => [p.sessionKey, p.pid]));
    const first = byKey();
    await turn(t, 'a2', 'a'); // b is now the least recently used
    await turn(t, 'c1', 'c');
    expect(Object.keys(byKey()).sort()).toEqual(['a', 'c']);
    expect(byKey().a).toBe(first.a);
    await until(() => !isAlive(first.b!), undefined, "b's process to end");
    // b comes back on its own session, in a new process.
    expect(completionOf(await turn(t, 'b2', 'b')).finalText).toBe('ECHO: b2\nTURN: 2');
    expect(pids(t)).toHaveLength(2);
  });

  it('with every slot busy, another conversation runs per turn', async () => {
    const t = open('warm:\n  maxProcesses: 1\n');
    const busy = turn(t, 'HANG', 'a');
    await until(() => t.assistant.engine.warm.processes()[0]?.busy === true, undefined, 'the turn to run');
    expect(completionOf(await turn(t, 'meanwhile', 'b')).finalText).toBe('ECHO: meanwhile\nTURN: 1');
    expect(t.assistant.engine.warm.processes().map((p) => p.sessionKey)).toEqual(['a']);
    t.assistant.abort('a');
    await busy;
  });

  it('/reset and another conversation never get a process that holds another session', async () => {
    const t = open();
    await turn(t, 'one', 'a');
    const [pid] = pids(t);
    await t.assistant.reset('a');
    expect(completionOf(await turn(t, 'after reset', 'a')).finalText).toBe('ECHO: after reset\nTURN: 1');
    expect(pids(t)).not.toContain(pid);
    await until(() => !isAlive(pid!), undefined, 'the old process to end');
    await turn(t, 'other', 'b');
    expect(new Set(pids(t)).size).toBe(2);
  });

  it('a change of how the engine starts (the model) retires the warm process; the next turn starts another', async () => {
    const t = open();
    await turn(t, 'one');
    const [pid] = pids(t);
    const file = path.join(t.dir, 'service.yaml');
    fs.writeFileSync(file, `${fs.readFileSync(file, 'utf8')}model: another-model\n`);
    t.config.reload();
    await until(() => !isAlive(pid!), undefined, 'the retired process to end');
    expect(completionOf(await turn(t, 'two')).finalText).toBe('ECHO: two\nTURN: 2');
    expect(pids(t)).not.toContain(pid);
  });

  it('lowering warm.maxProcesses ends the idle processes past it, least recently used first; no restart', async () => {
    const t = open('warm:\n  maxProcesses: 3\n');
    await turn(t, 'a1', 'a');
    await turn(t, 'b1', 'b');
    const first = Object.fromEntries(t.assistant.engine.warm.processes().map((p) => [p.sessionKey, p.pid]));
    const file = path.join(t.dir, 'service.yaml');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('maxProcesses: 3', 'maxProcesses: 1'));
    t.config.reload();
    await until(() => !isAlive(first.a!), undefined, "a's process (the least recently used) to end");
    expect(t.assistant.engine.warm.processes().map((p) => p.pid)).toEqual([first.b]);
  });

  it('warm.enabled false: every turn starts the engine', async () => {
    const t = open('warm:\n  enabled: false\n');
    await turn(t, 'one');
    await turn(t, 'two');
    expect(pids(t)).toEqual([]);
    expect(starts(t)).toBe(2);
  });

  it('an engine whose resident mode fails to start runs per turn, and is not tried again', async () => {
    const t = createTestAssistant({ engine: 'engine_b' });
    opened.push(t);
    expect(completionOf(await turn(t, 'one')).status).toBe('completed');
    expect(completionOf(await turn(t, 'two')).finalText).toBe('ECHO: two\nTURN: 2');
    expect(pids(t)).toEqual([]);
    expect(t.standIn.runs()).toHaveLength(2);
  });
});
