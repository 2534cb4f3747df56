import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cliPath } from '../../helpers/cli.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';

describe('service init on a terminal (tmux)', () => {
  it('asks for template, engine (installed ones marked) and name', async () => {
    const standIn = createStandIn();
    const dir = path.join(testdir(), 'asked-bot');
    const socket = `service-init-${process.pid}-${Date.now()}`;
    const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    const screen = () => tmux('capture-pane', '-p', '-t', 'init');
    const until = async (text: string) => {
      const end = Date.now() + 15_000;
      while (!screen().includes(text)) {
        if (Date.now() > end) throw new Error(`never saw "${text}":\n${screen()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const env = `PATH='${standIn.PATH}' NO_COLOR=1`;
    tmux('new-session', '-d', '-s', 'init', '-x', '160', '-y', '40', `env ${env} '${process.execPath}' '${cliPath}' init '${dir}'; echo EXITED-$?; sleep 30`);
    try {
      await until('Template');
      tmux('send-keys', '-t', 'init', 'Down', 'Enter'); // from the default (customer-support) to data-analyst
      await until('found on PATH');
      tmux('send-keys', '-t', 'init', 'Enter'); // the suggested engine
      await until('Assistant name');
      tmux('send-keys', '-t', 'init', 'C-u', 'Tmux Bot', 'Enter');
      await until('EXITED-0');
    } finally {
      try {
        tmux('kill-server');
      } catch {
        // gone already
      }
    }
    const config = parse(fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8')) as { name: string; engine: string };
    expect(config).toMatchObject({ name: 'Tmux Bot', engine: 'engine_b' });
    expect(fs.existsSync(path.join(dir, 'data', 'sample-sales.csv'))).toBe(true);
  });
});
