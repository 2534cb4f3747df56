import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliPath } from '../../helpers/cli.js';
import { testdir } from '../../helpers/testdir.js';

/** `service … | head -1`: the reader quits before the CLI is done writing; that is not an error. */
describe('output into a pipe whose reader has gone', () => {
  it('ends normally, exit 0, with no EPIPE trace', async () => {
    const tasks = Array.from({ length: 400 }, (_, i) => `  - { id: t${i}, name: Task number ${i}, schedule: "0 9 * * *", prompt: hi }`).join('\n');
    const dir = testdir({ 'service.yaml': `name: piped\nengine: engine_b\ntasks:\n${tasks}\n` });
    const child = spawn(process.execPath, [cliPath, 'cron', 'list', '-d', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader is gone before the first line
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(stderr).not.toMatch(/EPIPE|This is a bug/);
    expect(code).toBe(0);
  });
});
