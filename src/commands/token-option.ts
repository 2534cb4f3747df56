import fs from 'node:fs';
import { AppError } from '../core/errors.js';
import type { CommandIO } from './io.js';

/**
 * `service gateway --token <t>` or `--token-file <path>`: the token to start with, if either is
 * given. A command line is visible to every local user (`ps`, /proc/<pid>/cmdline), so `--token`
 * works but says so on stderr; `--token-file` (or SERVICE_TOKEN, or gateway.token with a
 * `${VAR}`) keeps it out of sight. A token file is read once, its first line trimmed; one that
 * other users can read is started with, and warned about.
 */
export function readTokenOption(opts: { token?: string; tokenFile?: string }, io: Pick<CommandIO, 'err'>): string | undefined {
  if (opts.token !== undefined && opts.tokenFile !== undefined) throw new AppError('usage', '--token and --token-file: give one of them');
  if (opts.token !== undefined) {
    io.err(
      'warning: --token puts the token on the command line, where every user of this machine can read it (ps); prefer SERVICE_TOKEN or --token-file <path>',
    );
    return opts.token;
  }
  if (opts.tokenFile === undefined) return undefined;
  const file = opts.tokenFile;
  let text: string;
  let mode: number;
  try {
    text = fs.readFileSync(file, 'utf8');
    mode = fs.statSync(file).mode;
  } catch (err) {
    throw new AppError('usage', `--token-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const token = text.split(/\r?\n/, 1)[0]?.trim() ?? '';
  if (token === '') throw new AppError('usage', `--token-file ${file}: the file is empty; put the token on its first line`);
  if ((mode & 0o077) !== 0) {
    io.err(`warning: --token-file ${file} can be read by other users (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
  }
  return token;
}
