import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, runCli } from '../../helpers/cli.js';
import { testdir } from '../../helpers/testdir.js';

const version = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;

describe('service --version', () => {
  // bin/service.js answers these two before the CLI loads; the rest go through commander.
  it.each([['--version'], ['-v']])('%s alone prints the package version and exits 0', async (flag) => {
    const r = await runCli([flag]);
    expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('prints the same line when other arguments come with it (commander answers those)', async () => {
    const r = await runCli(['--dir', testdir(), '--version']);
    expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});
