import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliPath, runCli } from '../../helpers/cli.js';
import { createStandIn, isAlive } from '../../helpers/stand-in.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

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
    const events = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string });
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
});

describe('service chat REPL in a terminal (tmux)', () => {
  it('a turn, a slash command, Ctrl-C stops the running turn, Ctrl-C twice quits', async () => {
    const { dir, standIn } = setup();
    const socket = `service-test-${process.pid}-${Date.now()}`;
    const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    const screen = () => tmux('capture-pane', '-p', '-t', 'chat', '-S', '-200');
    const until = async (pred: (s: string) => boolean, what: string) => {
      const end = Date.now() + 15_000;
      while (Date.now() < end) {
        const s = screen();
        if (pred(s)) return s;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`never saw ${what}; screen:\n${screen()}`);
    };
    const env = Object.entries({ ...standIn.env, NO_COLOR: '1', HOME: dir }).map(([k, v]) => `${k}='${v}'`).join(' ');
    tmux('new-session', '-d', '-s', 'chat', '-x', '160', '-y', '50', `cd '${dir}' && env ${env} '${process.execPath}' '${cliPath}' chat; echo EXITED-$?; sleep 30`);
    try {
      await until((s) => s.includes('you>'), 'the prompt');
      tmux('send-keys', '-t', 'chat', 'hello from tmux', 'Enter');
      await until((s) => s.includes('ECHO: hello from tmux'), 'the reply');
      tmux('send-keys', '-t', 'chat', '/status', 'Enter');
      await until((s) => s.includes('Session "default": engine session'), 'the /status answer');
      tmux('send-keys', '-t', 'chat', 'HANG', 'Enter');
      const pid = await (async () => {
        for (;;) {
          const run = standIn.runs().find((r) => r.prompt === 'HANG');
          if (run) return run.pid as number;
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      tmux('send-keys', '-t', 'chat', 'C-c');
      await until((s) => s.includes('(stopped)'), 'the stopped turn');
      expect(isAlive(pid)).toBe(false);
      tmux('send-keys', '-t', 'chat', 'C-c');
      await until((s) => s.includes('press Ctrl-C again'), 'the quit hint');
      tmux('send-keys', '-t', 'chat', 'C-c');
      await until((s) => s.includes('EXITED-0'), 'the exit');
    } finally {
      try {
        tmux('kill-server');
      } catch {
        // already gone
      }
    }
    void path;
  });
});
