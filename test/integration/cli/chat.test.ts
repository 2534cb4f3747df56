import { describe, expect, it } from 'vitest';
import { cliPath, runCli } from '../../helpers/cli.js';
import { createStandIn, isAlive } from '../../helpers/stand-in.js';
import { STOP_SIGNALS, stopWhileEngineRuns } from '../../helpers/signal-stop.js';
import { startTerminal } from '../../helpers/terminal.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';
import { HANG_MS, poll } from '../../helpers/wait.js';

function setup() {
  const standIn = createStandIn();
  const dir = testdir({ 'service.yaml': minimalYaml() });
  return { dir, standIn };
}

describe('service chat -m / --json (spawned for real)', () => {
  it('prints the reply and exits 0; a failed turn exits 1 with the error on the output', async () => {
    const { dir, standIn } = setup();
    const ok = await runCli(['chat', '-d', dir, '-m', 'hello there'], { env: standIn.env });
    expect(ok).toMatchObject({ code: 0, stdout: 'ECHO: hello there\nTURN: 1\n', stderr: '' });
    const again = await runCli(['chat', '-d', dir, '-m', 'and again'], { env: standIn.env });
    expect(again.stdout).toBe('ECHO: and again\nTURN: 2\n');
    const failed = await runCli(['chat', '-d', dir, '-m', 'FAIL: no luck'], { env: standIn.env });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('error: no luck');
  });

  it('--json prints every event as one NDJSON line, ending with done and completion', async () => {
    const { dir, standIn } = setup();
    const r = await runCli(['chat', '-d', dir, '-s', 'k1', '--json', '-m', 'TOOL:Bash check'], { env: standIn.env });
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    expect(events.map((e) => e.type)).toEqual(['tool_call', 'tool_result', ...events.slice(2, -2).map(() => 'text'), 'done', 'completion']);
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: 'ECHO: TOOL:Bash check\nTURN: 1' });
  });

  it('a slash command with -m prints its text; --json prints the command object', async () => {
    const { dir, standIn } = setup();
    const r = await runCli(['chat', '-d', dir, '--json', '-m', '/model list'], { env: standIn.env });
    expect(JSON.parse(r.stdout)).toMatchObject({ type: 'command', engine: 'engine_b', models: expect.any(Array) });
    const unknown = await runCli(['chat', '-d', dir, '-m', '/nope'], { env: standIn.env });
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toContain('Unknown command "/nope"');
  });

  it('reads messages from a pipe, one per line, with \\ continuing a line', async () => {
    const { dir, standIn } = setup();
    const r = await runCli(['chat', '-d', dir], { env: standIn.env, input: 'first\\\nstill first\nsecond\n' });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('ECHO: first\nTURN: 1\nECHO: second\nTURN: 2\n');
    expect((standIn.runs()[0] as { prompt: string }).prompt).toBe('first\nstill first');
  });

  it('/help in the terminal lists /exit too, and /exit ends the chat', async () => {
    const { dir, standIn } = setup();
    const r = await runCli(['chat', '-d', dir], { env: standIn.env, input: '/help\n/exit\nnever sent\n' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\/exit\s+leave the chat/);
    expect(r.stdout).toMatch(/\/reset\s/);
    expect(standIn.runs()).toHaveLength(0);
  });
});

describe('service chat -m ended by a signal', () => {
  it.each(STOP_SIGNALS)('%s (%s): the running engine is stopped, then the chat exits %i as the shell reports that signal', async (signal, _what, code) => {
    const { dir, standIn } = setup();
    const r = await stopWhileEngineRuns({ args: ['chat', '-d', dir, '-m', 'HANG'], standIn, signal });
    expect(r.code, r.output).toBe(code);
    expect(r.engineOutlived, 'the engine outlived the chat').toBe(false);
    expect(r.output).not.toMatch(/ {4}at |This is a bug/);
  });
});

describe('service chat reading a pipe, ended by Ctrl-C', () => {
  it('the running engine is stopped, lines read ahead are not sent, and the chat exits 130', async () => {
    const { dir, standIn } = setup();
    // The pipe stays open: more lines could follow; the one after HANG was read ahead and must not run.
    const r = await stopWhileEngineRuns({ args: ['chat', '-d', dir], standIn, signal: 'SIGINT', stdin: 'HANG\nREAD-AHEAD\n' });
    expect(r.code, r.output).toBe(130);
    expect(r.engineOutlived, 'the engine outlived the chat').toBe(false);
    expect(r.output).not.toMatch(/ {4}at |This is a bug/);
    expect(standIn.runs().map((run) => run.prompt)).toEqual(['HANG']);
  });
});

describe('service chat REPL in a terminal (tmux)', () => {
  it('a turn, a slash command, Ctrl-C stops the running turn, Ctrl-C twice quits', async () => {
    const { dir, standIn } = setup();
    const env = Object.entries({ ...standIn.env, NO_COLOR: '1', HOME: dir })
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ');
    const term = startTerminal(`cd '${dir}' && env ${env} '${process.execPath}' '${cliPath}' chat`, { width: 160, height: 50 });
    try {
      await term.waitFor('you>', 'the prompt');
      term.keys('hello from tmux', 'Enter');
      await term.waitFor('ECHO: hello from tmux', 'the reply');
      term.keys('/status', 'Enter');
      await term.waitFor('Session "default": engine session', 'the /status answer');
      term.keys('HANG', 'Enter');
      const pid = await poll(() => standIn.runs().find((r) => r.prompt === 'HANG')?.pid as number | undefined, HANG_MS, 'the HANG turn', 50);
      term.keys('C-c');
      await term.waitFor('(stopped)', 'the stopped turn');
      expect(isAlive(pid)).toBe(false);
      term.keys('C-c');
      await term.waitFor('press Ctrl-C again', 'the quit hint');
      term.keys('C-c');
      await term.waitFor('EXITED-0', 'the exit');
    } finally {
      term.close();
    }
  });

  it('on a terminal that reports 0 columns the reply shows, with no spinner flooding the screen', async () => {
    const { dir, standIn } = setup();
    const env = Object.entries({ ...standIn.env, NO_COLOR: '1', HOME: dir })
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ');
    // `stty cols 0`: the terminal's size as some serial consoles and embedded terminals report it.
    const term = startTerminal(`stty cols 0 && cd '${dir}' && env ${env} '${process.execPath}' '${cliPath}' chat`, { width: 160, height: 50 });
    try {
      await term.waitFor('you>', 'the prompt');
      term.keys('hello narrow', 'Enter');
      await term.waitFor('ECHO: hello narrow', 'the reply');
      term.keys('and again', 'Enter');
      const screen = await term.waitFor('ECHO: and again', 'the second reply');
      // ora's redraw with an infinite line count draws this before flooding (and blocking) the terminal.
      expect(screen).not.toContain('content truncated to fit terminal');
      expect(screen).not.toContain('thinking');
      term.keys('C-d');
      await term.waitFor('EXITED-0', 'the exit');
    } finally {
      term.close();
    }
  });
});
