import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cliPath } from '../../helpers/cli.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { startTerminal } from '../../helpers/terminal.js';
import { testdir } from '../../helpers/testdir.js';

describe('service init on a terminal (tmux)', () => {
  it('asks for template, engine (installed ones marked) and name', async () => {
    const standIn = createStandIn();
    const dir = path.join(testdir(), 'asked-bot');
    const term = startTerminal(`env PATH='${standIn.PATH}' NO_COLOR=1 '${process.execPath}' '${cliPath}' init '${dir}'`);
    try {
      await term.waitFor('Template');
      term.keys('Down', 'Enter'); // from the default (customer-support) to data-analyst
      await term.waitFor('found on PATH');
      term.keys('Enter'); // the suggested engine
      await term.waitFor('Assistant name');
      term.keys('C-u', 'Tmux Bot', 'Enter');
      await term.waitFor('EXITED-0');
    } finally {
      term.close();
    }
    const config = parse(fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8')) as { name: string; engine: string };
    expect(config).toMatchObject({ name: 'Tmux Bot', engine: 'engine_b' });
    expect(fs.existsSync(path.join(dir, 'data', 'sample-sales.csv'))).toBe(true);
  });

  it('Ctrl-C at any prompt is a normal exit: no trace, exit 130, nothing written', async () => {
    const standIn = createStandIn();
    for (const answered of [[], ['Enter'], ['Enter', 'Enter']]) {
      const dir = path.join(testdir(), 'cancelled-bot');
      const term = startTerminal(`env PATH='${standIn.PATH}' NO_COLOR=1 '${process.execPath}' '${cliPath}' init '${dir}'`);
      try {
        await term.waitFor('Template');
        for (const key of answered) {
          await term.waitFor((s) => s.includes('?') && !s.includes('EXITED'));
          term.keys(key);
        }
        await term.waitFor(['Template', 'Engine', 'Assistant name'][answered.length] ?? '');
        term.keys('C-c');
        const screen = await term.waitFor('EXITED-');
        expect(screen, screen).toContain('EXITED-130');
        expect(screen).not.toMatch(/ExitPromptError|Error:| {4}at |This is a bug/);
      } finally {
        term.close();
      }
      expect(fs.existsSync(dir), `${answered.length} answers, then Ctrl-C`).toBe(false);
    }
  });
});
