import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createClaudeParser } from '../../../src/core/engines/claude-code.js';
import { runProcess, type LineParser } from '../../../src/core/engines/runner.js';
import type { AgentEvent } from '../../../src/core/events.js';
import { createStandIn, isAlive } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, poll, until } from '../../helpers/wait.js';

async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const all: AgentEvent[] = [];
  for await (const e of events) all.push(e);
  return all;
}

const terminals = (events: AgentEvent[]) => events.filter((e) => e.type === 'done' || e.type === 'error');

function claude(prompt: string, opts: { timeoutMs?: number; signal?: AbortSignal; parser?: LineParser } = {}) {
  const s = createStandIn();
  const cwd = testdir();
  /** Pids the runner has told of (at spawn, and each time a snapshot of the tree finds more). */
  const tracked = new Set<number>();
  const events = collect(
    runProcess(
      {
        binary: path.join(s.binDir, 'claude'),
        args: ['-p', '--output-format', 'stream-json'],
        cwd,
        env: { ...process.env, ...s.env },
        stdin: prompt,
        timeoutMs: opts.timeoutMs ?? HANG_MS,
        killGraceMs: 500,
        ...(opts.signal ? { signal: opts.signal } : {}),
        onProcesses: (processes) => {
          for (const p of processes) tracked.add(p.pid);
        },
      },
      opts.parser ?? createClaudeParser(),
    ),
  );
  return { events, standIn: s, tracked };
}

describe('the subprocess runner', () => {
  it('streams parsed events and ends with exactly one done', async () => {
    const { events } = claude('TOOL:Bash hello');
    const all = await events;
    expect(all.map((e) => e.type)).toEqual(expect.arrayContaining(['session', 'tool_call', 'tool_result', 'text', 'usage', 'done']));
    expect(terminals(all)).toEqual([{ type: 'done', text: 'ECHO: TOOL:Bash hello\nTURN: 1', durationMs: expect.any(Number) }]);
    expect(all.at(-1)?.type).toBe('done');
  });

  it('a hang hits the timeout: "Agent invocation timed out", and the process is gone', async () => {
    // 5 s: long enough for the stand-in to start and log its pid on a loaded machine.
    const { events, standIn } = claude('HANG', { timeoutMs: 5_000 });
    const all = await events;
    expect(terminals(all)).toEqual([{ type: 'error', code: 'timeout', message: 'Agent invocation timed out' }]);
    const pid = standIn.runs()[0]?.pid as number;
    expect(pid, 'the stand-in ran').toBeGreaterThan(0);
    expect(isAlive(pid)).toBe(false);
  });

  it('an abort is reported as aborted, not as a timeout, and kills the process', async () => {
    const ac = new AbortController();
    const { events, standIn } = claude('HANG', { signal: ac.signal });
    const pid = await poll(() => standIn.runs()[0]?.pid as number | undefined, HANG_MS, 'the engine to start', 25);
    ac.abort();
    const all = await events;
    expect(terminals(all)).toEqual([{ type: 'error', code: 'aborted', message: 'Aborted' }]);
    expect(isAlive(pid)).toBe(false);
  });

  it('a grandchild dies with the process group', async () => {
    const { events, standIn } = claude('GRANDCHILD', { timeoutMs: 5_000 });
    const grandchild = await poll(() => standIn.runs().find((r) => r.grandchild)?.grandchild as number | undefined, HANG_MS, 'the grandchild', 25);
    expect(isAlive(grandchild)).toBe(true);
    const all = await events;
    expect(terminals(all)[0]).toMatchObject({ code: 'timeout' });
    expect(isAlive(grandchild)).toBe(false);
  });

  it('a tool shell in a session of its own (setsid, as the real CLIs run tools) dies with the run on abort', async () => {
    const ac = new AbortController();
    const { events, standIn, tracked } = claude('SETSID-CHILD', { signal: ac.signal });
    const orphan = await poll(() => standIn.runs().find((r) => r.setsidChild)?.setsidChild as number | undefined, HANG_MS, 'the setsid child', 25);
    await until(() => tracked.has(orphan), HANG_MS, 'a snapshot of the tree to find it', 25);
    ac.abort();
    await events;
    expect(isAlive(orphan)).toBe(false);
  });

  it('processes a turn started do not outlive it, also when the engine exits normally', async () => {
    const gate = path.join(testdir(), 'seen');
    const { events, standIn, tracked } = claude(`SETSID-CHILD THEN-ANSWER GATE:${gate}`);
    // The engine answers (and exits) once a snapshot of the tree has found its tool shell.
    const orphan = await poll(() => standIn.runs().find((r) => r.setsidChild)?.setsidChild as number | undefined, HANG_MS, 'the setsid child', 25);
    await until(() => tracked.has(orphan), HANG_MS, 'a snapshot of the tree to find it', 25);
    fs.writeFileSync(gate, '');
    const all = await events;
    expect(terminals(all)[0]?.type).toBe('done');
    expect(isAlive(orphan)).toBe(false);
  });

  it('a crash ends with the exit code and the stderr tail, once', async () => {
    const all = await claude('CRASH').events;
    expect(terminals(all)).toEqual([expect.objectContaining({ type: 'error', code: 'engine_reported', message: 'stand-in: simulated crash', exitCode: 3 })]);
  });

  it('a 1 MB stderr flood neither blocks the engine nor grows the tail past its bound', async () => {
    const all = await claude('STDERR-FLOOD then answer').events;
    expect(terminals(all)[0]?.type).toBe('done');
    const crash = await claude('STDERR-FLOOD CRASH').events;
    const [err] = terminals(crash);
    expect(err?.type).toBe('error');
    if (err?.type === 'error') {
      expect(err.stderrTail?.length ?? 0).toBeLessThanOrEqual(8 * 1024);
      expect(err.stderrTail?.split('\n').length ?? 0).toBeLessThanOrEqual(20);
    }
  });

  it('a 500 KB single stdout line arrives whole', async () => {
    const all = await claude('BIG-LINE').events;
    const result = all.find((e) => e.type === 'tool_result');
    expect(result?.type === 'tool_result' && result.output.length).toBe(500_000);
    expect(terminals(all)[0]?.type).toBe('done');
  });

  it('a missing binary is one spawn_failed error', async () => {
    const all = await collect(runProcess({ binary: '/nonexistent/claude', args: [], cwd: testdir(), env: process.env, timeoutMs: 1000 }, createClaudeParser()));
    expect(all).toEqual([{ type: 'error', code: 'spawn_failed', message: 'cannot start claude: not found on PATH' }]);
  });

  it('stdout held open by an escaped grandchild does not hang the run', async () => {
    // A shell that backgrounds a sleeper in a new session (outside the group) holding stdout, then
    // exits. Its environment cleared (`env -i`), it carries no run marker: the tree cannot find it.
    const dir = testdir();
    const script = path.join(dir, 'escape.sh');
    const pidFile = path.join(dir, 'sleeper.pid');
    fs.writeFileSync(
      script,
      `#!/bin/sh\necho '{"type":"result","is_error":false,"result":"ok","session_id":"s"}'\nsetsid env -i PATH=/usr/bin:/bin sh -c 'echo $$ > ${pidFile}; exec sleep 300' &\nwhile [ ! -s ${pidFile} ]; do sleep 0.05; done\nexit 0\n`,
      { mode: 0o755 },
    );
    const all = await collect(runProcess({ binary: script, args: [], cwd: dir, env: process.env, timeoutMs: HANG_MS, drainMs: 300 }, createClaudeParser()));
    expect(terminals(all)).toEqual([{ type: 'done', text: 'ok', durationMs: expect.any(Number) }]);
    // The run ended while the sleeper still held stdout: it did not wait for the pipe to close.
    const sleeper = Number(fs.readFileSync(pidFile, 'utf8'));
    try {
      expect(isAlive(sleeper)).toBe(true);
    } finally {
      process.kill(sleeper, 'SIGKILL');
    }
  });
});

describe('the runner with an engine that converses over stdin', () => {
  /** A program that echoes each stdin line as {"echo": line} and exits when stdin ends (or not, with `linger`). */
  const echoScript = (linger: boolean) =>
    `const rl=require('readline').createInterface({input:process.stdin});` +
    `rl.on('line',(l)=>process.stdout.write(JSON.stringify({echo:l})+'\\n'));` +
    `rl.on('close',()=>{${linger ? "process.stdout.write(JSON.stringify({lingering:process.pid})+'\\n');setInterval(()=>{},1000);" : 'process.exit(0);'}});`;

  /** Sends two lines; the second echo ends the conversation. */
  function echoConversation(): LineParser & { seen: string[] } {
    const seen: string[] = [];
    let channel: { send(l: string): void; end(): void } | undefined;
    return {
      seen,
      conversation: {
        open(c) {
          channel = c;
          c.send('one');
          c.send('two');
        },
      },
      parseLine(line) {
        const echo = (JSON.parse(line) as { echo?: string }).echo;
        if (echo !== undefined) seen.push(echo);
        if (echo === 'two') channel?.end();
        return echo !== undefined ? [{ type: 'text', delta: `${echo};` }] : [];
      },
      finish: () => [],
    };
  }

  const run = (linger: boolean, parser: LineParser) =>
    collect(
      runProcess(
        { binary: process.execPath, args: ['-e', echoScript(linger)], cwd: testdir(), env: process.env, timeoutMs: HANG_MS, killGraceMs: 500, endGraceMs: 300 },
        parser,
      ),
    );

  it('stdin stays open for the conversation; ending it closes stdin and the run is done', async () => {
    const parser = echoConversation();
    const all = await run(false, parser);
    expect(parser.seen).toEqual(['one', 'two']);
    expect(terminals(all)).toEqual([{ type: 'done', text: 'one;two;', durationMs: expect.any(Number) }]);
  });

  it('an engine still running after the conversation ended is stopped, and that is no failure', async () => {
    const parser = echoConversation();
    const all = await run(true, parser);
    expect(terminals(all)).toEqual([{ type: 'done', text: 'one;two;', durationMs: expect.any(Number) }]);
  });

  it('writing to an engine that already exited neither throws nor hangs', async () => {
    let channel: { send(l: string): void; end(): void } | undefined;
    const parser: LineParser = {
      conversation: { open: (c) => (channel = c) },
      parseLine: () => [],
      finish: () => {
        for (let i = 0; i < 100; i++) channel?.send('x'.repeat(1000));
        return [{ type: 'failure', kind: 'engine', message: 'gone' }];
      },
    };
    const all = await collect(
      runProcess({ binary: process.execPath, args: ['-e', 'process.exit(0)'], cwd: testdir(), env: process.env, timeoutMs: HANG_MS, killGraceMs: 500 }, parser),
    );
    expect(terminals(all)).toEqual([expect.objectContaining({ type: 'error', message: 'gone' })]);
  });
});
