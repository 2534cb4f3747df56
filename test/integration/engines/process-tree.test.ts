import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createClaudeParser } from '../../../src/core/engines/claude-code.js';
import { pidsAfter } from '../../../src/core/engines/proc-snapshot.js';
import { runProcess } from '../../../src/core/engines/runner.js';
import type { AgentEvent } from '../../../src/core/events.js';
import type { ProcessIdentity } from '../../../src/core/store/types.js';
import { createStandIn, isAlive } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, poll, until } from '../../helpers/wait.js';

/**
 * The process tree reads only the processes created since its last snapshot (the pids after
 * the last one it saw). These are the cases that shortcut could get wrong.
 */
async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const all: AgentEvent[] = [];
  for await (const e of events) all.push(e);
  return all;
}

const RESULT = `echo '{"type":"result","is_error":false,"result":"ok","session_id":"s"}'`;

function script(dir: string, body: string): string {
  const file = path.join(dir, 'engine.sh');
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

describe('the process tree', () => {
  it('a child that left the engine group and was orphaned before any snapshot still dies with the run', async () => {
    // `set -m`: the shell puts its background job in a group of its own (same session) and exits
    // at once, long before the first one-second snapshot: only the scan after the exit can find it.
    const dir = testdir();
    const pidFile = path.join(dir, 'job.pid');
    const engine = script(dir, `set -m\nsleep 300 &\necho $! > ${pidFile}\n${RESULT}\nexit 0`);
    const all = await collect(runProcess({ binary: engine, args: [], cwd: dir, env: process.env, timeoutMs: HANG_MS, drainMs: 300 }, createClaudeParser()));
    expect(all.at(-1)).toMatchObject({ type: 'done', text: 'ok' });
    const job = Number(fs.readFileSync(pidFile, 'utf8'));
    expect(job).toBeGreaterThan(0);
    expect(isAlive(job)).toBe(false);
  });

  it('a job that left for a session of its own, whose parent exited before any snapshot, still dies with the run (its environment marks it)', async () => {
    // What a member's `(sleep 60; sed … service.yaml) &` becomes under a tool shell that exits at
    // once: not in the engine's group or session, its parent gone, re-parented away. Only the
    // run's marker in its environment relates it; without it the write outlives the turn's check.
    const dir = testdir();
    const pidFile = path.join(dir, 'job.pid');
    const engine = script(dir, `sh -c 'setsid sleep 300 & echo $! > ${pidFile}'\n${RESULT}\nexit 0`);
    const all = await collect(runProcess({ binary: engine, args: [], cwd: dir, env: process.env, timeoutMs: HANG_MS, drainMs: 300 }, createClaudeParser()));
    expect(all.at(-1)).toMatchObject({ type: 'done', text: 'ok' });
    const job = Number(fs.readFileSync(pidFile, 'utf8'));
    expect(job).toBeGreaterThan(0);
    const survived = isAlive(job);
    if (survived) process.kill(job, 'SIGKILL');
    expect(survived).toBe(false);
  });

  it('records processes, never the threads of one (a threaded engine: the node stand-in)', async () => {
    const s = createStandIn();
    const seen: ProcessIdentity[][] = [];
    // Checked when told, while they run: a thread is reachable as /proc/<tid> but not listed there.
    const notListed: number[] = [];
    // The engine answers once this file exists: written when a snapshot has found its tool shell.
    const gate = path.join(testdir(), 'seen');
    const onProcesses = (processes: ProcessIdentity[]) => {
      seen.push(processes);
      const listed = new Set(fs.readdirSync('/proc'));
      for (const p of processes) if (!listed.has(String(p.pid)) && isAlive(p.pid)) notListed.push(p.pid);
      const child = s.runs().find((r) => r.setsidChild)?.setsidChild;
      if (child !== undefined && processes.some((p) => p.pid === child)) fs.writeFileSync(gate, '');
    };
    const all = await collect(
      runProcess(
        {
          binary: path.join(s.binDir, 'claude'),
          args: ['-p', '--output-format', 'stream-json'],
          cwd: testdir(),
          env: { ...process.env, ...s.env },
          stdin: `SETSID-CHILD THEN-ANSWER GATE:${gate}`,
          timeoutMs: HANG_MS,
          onProcesses,
        },
        createClaudeParser(),
      ),
    );
    expect(all.at(-1)?.type).toBe('done');
    const recorded = seen.at(-1) ?? [];
    const engine = s.runs()[0]?.pid as number;
    const child = s.runs().find((r) => r.setsidChild)?.setsidChild as number;
    // The wrapper exec's node, so the engine is the root; the setsid `sleep` was found by a snapshot.
    expect(recorded.map((p) => p.pid)).toEqual(expect.arrayContaining([engine, child]));
    expect(notListed).toEqual([]);
    expect(recorded.length).toBeLessThan(4);
    expect(isAlive(child)).toBe(false);
  });

  it('runs at once share the snapshots: each run’s tool shell is found and dies with its run', async () => {
    const runs = Array.from({ length: 3 }, () => {
      const s = createStandIn();
      const ac = new AbortController();
      const tracked = new Set<number>();
      const events = collect(
        runProcess(
          {
            binary: path.join(s.binDir, 'claude'),
            args: ['-p', '--output-format', 'stream-json'],
            cwd: testdir(),
            env: { ...process.env, ...s.env },
            stdin: 'SETSID-CHILD',
            timeoutMs: HANG_MS,
            killGraceMs: 500,
            signal: ac.signal,
            onProcesses: (processes) => {
              for (const p of processes) tracked.add(p.pid);
            },
          },
          createClaudeParser(),
        ),
      );
      return { s, ac, events, tracked };
    });
    const orphans = await Promise.all(
      runs.map((r) => poll(() => r.s.runs().find((x) => x.setsidChild)?.setsidChild as number | undefined, HANG_MS, 'the setsid child', 25)),
    );
    // Each run's snapshots have found its tool shell.
    await until(() => runs.every((r, i) => r.tracked.has(orphans[i] as number)), HANG_MS, 'the snapshots to find every tool shell', 25);
    for (const r of runs) r.ac.abort();
    for (const r of runs) expect((await r.events).at(-1)).toMatchObject({ type: 'error', code: 'aborted' });
    for (const pid of orphans) expect(isAlive(pid), `orphan ${pid}`).toBe(false);
  });
});

describe('pidsAfter: the pids handed out after one, in order', () => {
  it('counts up to the last pid handed out', () => {
    expect(pidsAfter(100, 104, 32_768, 10)).toEqual([101, 102, 103, 104]);
    expect(pidsAfter(100, 100, 32_768, 10)).toEqual([]);
  });

  it('wraps at pid_max', () => {
    expect(pidsAfter(32_765, 2, 32_768, 10)).toEqual([32_766, 32_767, 1, 2]);
  });

  it('gives up past the limit (the caller lists /proc instead)', () => {
    expect(pidsAfter(100, 5_000, 32_768, 1_024)).toBeUndefined();
    expect(pidsAfter(32_000, 2_000, 32_768, 1_024)).toBeUndefined();
  });
});
