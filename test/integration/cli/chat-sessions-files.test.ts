import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatLocalDay } from '../../../src/core/util/local-day.js';
import { runCli } from '../../helpers/cli.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';

/** `service chat` has named sessions and files both ways, like a chat (spawned for real). */
describe('service chat: named sessions and files', () => {
  it('/new, /sessions and /switch in the REPL; the named sessions outlive the process', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': minimalYaml() });
    const first = await runCli(['chat', '-d', dir], { env: standIn.env, input: 'one\n/new work\ntwo\n/sessions\n' });
    expect(first.stdout).toContain('ECHO: one\nTURN: 1');
    expect(first.stdout).toContain('New session "work": the next message starts a fresh conversation. "main" is kept: /switch main to go back.');
    expect(first.stdout).toContain('ECHO: two\nTURN: 1');
    expect(first.stdout).toMatch(/Sessions of this chat \(2\):\n→ work {2}last used just now, 1 turn\n {2}main {2}last used just now, 1 turn/);
    // A later `service chat` on the same --session continues the current named session.
    const later = await runCli(['chat', '-d', dir, '-m', 'three'], { env: standIn.env });
    expect(later.stdout).toBe('ECHO: three\nTURN: 2\n');
    const back = await runCli(['chat', '-d', dir], { env: standIn.env, input: '/switch main\nfour\n' });
    expect(back.stdout).toContain('ECHO: four\nTURN: 2');
  });

  it('--file and /attach send files into inbox/; files the agent sends are copied into downloads/', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': minimalYaml(), 'elsewhere/notes.md': '# notes\n' });
    const day = formatLocalDay(Date.now());
    const one = await runCli(['chat', '-d', dir, '-m', 'read this', '--file', path.join(dir, 'elsewhere', 'notes.md')], { env: standIn.env });
    expect(one.code).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'inbox', day, 'notes.md'), 'utf8')).toBe('# notes\n');
    expect((standIn.runs()[0] as { prompt: string }).prompt).toBe(
      `read this\n\nFiles sent with this message, saved in your workspace:\n- inbox/${day}/notes.md (8 B, text/markdown)`,
    );

    const repl = await runCli(['chat', '-d', dir], {
      env: standIn.env,
      input: `/attach ${path.join(dir, 'elsewhere', 'notes.md')}\n/attach /no/such/file\nagain\n`,
    });
    expect(repl.stdout).toContain('Attached notes.md: it goes with your next message.');
    expect(repl.stdout).toContain('/attach failed: cannot attach /no/such/file: no such file');
    expect((standIn.runs()[1] as { prompt: string }).prompt).toContain(`- inbox/${day}/notes (2).md (8 B, text/markdown)`);

    const out = await runCli(['chat', '-d', dir, '-m', 'make one MAKE-FILE:summary.txt:4 SAY:Here.'], { env: standIn.env });
    expect(out.stdout).toBe('Here.\n📎 summary.txt (4 B) → downloads/summary.txt\n');
    expect(fs.readFileSync(path.join(dir, 'downloads', 'summary.txt'), 'utf8')).toBe('aaaa');
    const json = await runCli(['chat', '-d', dir, '--json', '-m', 'MAKE-FILE:summary.txt:2 SAY:Again.'], { env: standIn.env });
    const file = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((e) => e.type === 'file');
    expect(file).toMatchObject({ name: 'summary.txt', size: 2, path: path.join('downloads', 'summary (2).txt') });
  });
});
