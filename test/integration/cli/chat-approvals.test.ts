import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliPath, runCli } from '../../helpers/cli.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { startTerminal } from '../../helpers/terminal.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/**
 * `service chat` answers an engine's permission request inline (skipPermissions: false): the
 * stand-in engine_b asks the way Claude Code does (ASK:, an MCP call to our helper), the terminal
 * shows the request and takes the next line as the answer.
 */
function setup() {
  const standIn = createStandIn();
  const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'skipPermissions: false\n') });
  return { dir, standIn, exists: (name: string) => fs.existsSync(path.join(dir, name)) };
}

describe('service chat: approvals asked inline (spawned for real)', () => {
  it('piped REPL: the line after the message answers; y runs the command, n denies it, a allows Bash for the session', async () => {
    const t = setup();
    const input = ['ASK:echo one > ONE.txt', 'y', 'ASK:echo two > TWO.txt', 'n', 'ASK:echo three > THREE.txt', 'a', 'ASK:echo four > FOUR.txt', ''].join('\n');
    const r = await runCli(['chat', '-d', t.dir], { env: t.standIn.env, input });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Approval needed: Bash: echo one > ONE.txt\nallow? [y/N/a]\nAllowed Bash: echo one > ONE.txt\n');
    expect(r.stdout).toContain('Denied Bash: echo two > TWO.txt\n');
    expect(r.stdout).toContain('DENIED: The person denied this Bash call.');
    expect(r.stdout).toContain('Bash is allowed without asking for everyone in this session, until /reset.');
    // The fourth call is allowed without a question (allow always), so no line was taken for it.
    expect(r.stdout).not.toContain('Approval needed: Bash: echo four');
    expect(r.stdout.match(/ALLOWED/g)).toHaveLength(3);
    expect([t.exists('ONE.txt'), t.exists('TWO.txt'), t.exists('THREE.txt'), t.exists('FOUR.txt')]).toEqual([true, false, true, true]);
    // Every answer was a line for the approval, not a message to the assistant.
    expect((t.standIn.runs() as Array<{ prompt: string }>).map((run) => run.prompt)).toEqual([
      'ASK:echo one > ONE.txt',
      'ASK:echo two > TWO.txt',
      'ASK:echo three > THREE.txt',
      'ASK:echo four > FOUR.txt',
    ]);
  });

  it('a line that is no answer asks again; an empty line denies', async () => {
    const t = setup();
    const r = await runCli(['chat', '-d', t.dir], { env: t.standIn.env, input: 'ASK:echo x > X.txt\nmaybe\n\n' });
    expect(r.stdout).toContain('Answer y (allow), n (deny) or a (allow this tool for the rest of the session).\nallow? [y/N/a]\n');
    expect(r.stdout).toContain('Denied Bash: echo x > X.txt');
    expect(t.exists('X.txt')).toBe(false);
    expect(t.standIn.runs()).toHaveLength(1);
  });

  it('-m reads the answer from stdin; stdin that ends first denies', async () => {
    const t = setup();
    const allowed = await runCli(['chat', '-d', t.dir, '-m', 'ASK:echo m > M.txt'], { env: t.standIn.env, input: 'y\n' });
    expect(allowed).toMatchObject({ code: 0 });
    expect(allowed.stdout).toContain('Allowed Bash: echo m > M.txt');
    expect(allowed.stdout).toContain('ALLOWED');
    expect(t.exists('M.txt')).toBe(true);

    const ended = await runCli(['chat', '-d', t.dir, '-m', 'ASK:echo e > E.txt'], { env: t.standIn.env, input: '' });
    expect(ended.code).toBe(0);
    expect(ended.stdout).toContain('(input ended before an answer: denied)');
    expect(ended.stdout).toContain('DENIED: The person denied this Bash call.');
    expect(t.exists('E.txt')).toBe(false);
  });

  it('--json: the approval_request is an NDJSON event; the answer is still the next line', async () => {
    const t = setup();
    const r = await runCli(['chat', '-d', t.dir, '--json', '-m', 'ASK:echo j > J.txt'], { env: t.standIn.env, input: 'y\n' });
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    const request = events.find((e) => e.type === 'approval_request');
    expect(request).toEqual({
      type: 'approval_request',
      id: expect.stringMatching(/^[a-z2-9]{5}$/),
      tool: 'Bash',
      summary: 'echo j > J.txt',
      detail: 'echo j > J.txt',
      cut: false,
    });
    expect(t.exists('J.txt')).toBe(true);
    expect(events.find((e) => e.type === 'completion')).toMatchObject({ status: 'completed', finalText: 'ALLOWED' });
  });

  it('on a terminal (tmux): the request, the prompt, y runs the command and the REPL goes on', async () => {
    const t = setup();
    const env = Object.entries({ ...t.standIn.env, NO_COLOR: '1', HOME: t.dir })
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ');
    const term = startTerminal(`cd '${t.dir}' && env ${env} '${process.execPath}' '${cliPath}' chat`, { width: 160, height: 50 });
    try {
      await term.waitFor('you>', 'the prompt');
      term.keys('ASK:echo tty > TTY.txt', 'Enter');
      await term.waitFor('Approval needed: Bash: echo tty > TTY.txt', 'the request');
      await term.waitFor('allow? [y/N/a]', 'the question');
      term.keys('y', 'Enter');
      await term.waitFor('ALLOWED', 'the reply after the command ran');
      expect(t.exists('TTY.txt')).toBe(true);
      await term.waitFor((s) => s.trimEnd().endsWith('you>'), 'the prompt again');
      term.keys('C-d');
      await term.waitFor('EXITED-0', 'the exit');
    } finally {
      term.close();
    }
  });

  it('-m on a terminal (tmux): the prompt takes n; the turn ends with the denial and the command exits', async () => {
    const t = setup();
    const env = Object.entries({ ...t.standIn.env, NO_COLOR: '1', HOME: t.dir })
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ');
    const term = startTerminal(`cd '${t.dir}' && env ${env} '${process.execPath}' '${cliPath}' chat -m 'ASK:echo mtty > MTTY.txt'`, { width: 160, height: 50 });
    try {
      await term.waitFor('allow? [y/N/a]', 'the question');
      term.keys('n', 'Enter');
      await term.waitFor('DENIED: The person denied this Bash call.', 'the reply');
      await term.waitFor('EXITED-0', 'the exit');
      expect(t.exists('MTTY.txt')).toBe(false);
    } finally {
      term.close();
    }
  });
});
