import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCursorParser } from '../../../src/core/engines/cursor-agent.js';
import { createClaudeParser } from '../../../src/core/engines/claude-code.js';
import { createOpenCodeParser } from '../../../src/core/engines/opencode.js';
import { createCodexParser } from '../../../src/core/engines/codex.js';
import { runProcess, type LineParser, type ProcessSpec } from '../../../src/core/engines/runner.js';
import type { AgentEvent } from '../../../src/core/events.js';
import { createStandIn, isAlive } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { until } from '../../helpers/wait.js';
import { collectEscapesPerTest } from '../../helpers/resources.js';

/**
 * Issue 12, item 1: a failure inside one run (the OS refusing the spawn, a parser that throws)
 * ends that run with one `error` event and never escapes as an unhandled rejection or an
 * uncaught exception (which would take the whole gateway down).
 */
async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const all: AgentEvent[] = [];
  for await (const e of events) all.push(e);
  return all;
}

const terminals = (events: AgentEvent[]) => events.filter((e) => e.type === 'done' || e.type === 'error');

// Anything that escapes a run lands here instead of killing the test worker silently.
const escaped = collectEscapesPerTest();

const spec = (over: Partial<ProcessSpec>): ProcessSpec => ({
  binary: process.execPath,
  args: ['-e', 'process.stdout.write("{}\\n")'],
  cwd: testdir(),
  env: { ...process.env },
  timeoutMs: 20_000,
  killGraceMs: 500,
  ...over,
});

describe('a failure inside one run ends that run, never the process', () => {
  it('an argument the OS refuses (a NUL byte) is one spawn_failed error with a clear message', async () => {
    const events = await collect(runProcess(spec({ args: ['-e', '1', 'x\u0000y'] }), createClaudeParser()));
    expect(events).toEqual([
      { type: 'error', code: 'spawn_failed', message: 'cannot start node: argument 3 contains a NUL byte, which no program can receive' },
    ]);
    expect(escaped).toEqual([]);
  });

  it('an environment value the OS refuses (a NUL byte) is one spawn_failed error', async () => {
    const events = await collect(runProcess(spec({ env: { ...process.env, SOME_KEY: 'a\u0000b' } }), createClaudeParser()));
    expect(terminals(events)).toEqual([
      { type: 'error', code: 'spawn_failed', message: 'cannot start node: environment variable SOME_KEY contains a NUL byte, which no program can receive' },
    ]);
    expect(events.at(-1)?.type).toBe('error');
    expect(escaped).toEqual([]);
  });

  it('a parser that throws on a line ends the run with an error naming it, and the engine is stopped', async () => {
    const s = createStandIn();
    const throwing: LineParser = {
      parseLine: () => {
        throw new Error('parser exploded');
      },
      finish: () => [],
    };
    const events = await collect(
      runProcess(spec({ binary: path.join(s.binDir, 'claude'), args: ['-p'], env: { ...process.env, ...s.env }, stdin: 'HANG' }), throwing),
    );
    expect(terminals(events)).toEqual([
      expect.objectContaining({ type: 'error', code: 'internal', message: 'could not read the output of claude: parser exploded', kind: 'engine' }),
    ]);
    expect(events.at(-1)?.type).toBe('error');
    const pid = Number(s.runs()[0]?.pid);
    await until(() => !isAlive(pid), 5_000, 'the engine to be stopped');
    expect(escaped).toEqual([]);
  });

  it('a parser whose finish() throws ends the run with an error, once', async () => {
    const inner = createClaudeParser();
    const parser: LineParser = {
      parseLine: (l) => inner.parseLine(l),
      finish: () => {
        throw new Error('finish exploded');
      },
    };
    const events = await collect(runProcess(spec({}), parser));
    expect(terminals(events)).toEqual([
      expect.objectContaining({ type: 'error', code: 'internal', message: 'could not read the output of node: finish exploded', kind: 'engine' }),
    ]);
    expect(escaped).toEqual([]);
  });
});

describe('an engine killed by a signal is reported with the signal, not "code null"', () => {
  const parsers: Record<string, () => LineParser> = {
    engine_a: createCursorParser,
    engine_b: createClaudeParser,
    engine_c: createOpenCodeParser,
    engine_d: createCodexParser,
  };
  for (const [engine, create] of Object.entries(parsers)) {
    it(`${engine}: "… was killed by SIGKILL"`, async () => {
      const events = await collect(runProcess(spec({ binary: '/bin/sh', args: ['-c', 'kill -KILL $$'] }), create()));
      const [terminal] = terminals(events);
      expect(terminal).toMatchObject({ type: 'error', message: expect.stringContaining('killed by SIGKILL') });
      expect(JSON.stringify(events)).not.toContain('code null');
    });
  }
});
