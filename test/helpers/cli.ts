import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandIO } from '../../src/commands/io.js';
import { HANG_MS } from './wait.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cliPath = path.join(repoRoot, 'bin', 'service.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the built CLI for real (`node bin/service.js ...`); `npm test` builds dist first. */
export function runCli(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, ...args], {
      cwd: opts.cwd ?? repoRoot,
      env: { ...process.env, NO_COLOR: '1', ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`service ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? HANG_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/**
 * Run `service <args>` in this process: the program the CLI runs (src/commands/program.ts) with an io
 * that records what it prints, for tests of argument handling and output that need no process of
 * their own. `env` is merged into process.env for the call and put back after (the commands read
 * process.env, as the spawned CLI does); one call at a time per test file.
 */
export async function runCommand(args: string[], opts: { env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  const { createProgram } = await import('../../src/commands/program.js');
  let stdout = '';
  let stderr = '';
  const io: CommandIO = {
    out: (t) => void (stdout += t.endsWith('\n') ? t : `${t}\n`),
    write: (t) => void (stdout += t),
    err: (t) => void (stderr += t.endsWith('\n') ? t : `${t}\n`),
    isTTY: false,
  };
  const saved = Object.entries(opts.env ?? {}).map(([key]) => [key, process.env[key]] as const);
  for (const [key, value] of Object.entries(opts.env ?? {})) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  try {
    const code = await createProgram(io).run(args);
    return { code, stdout, stderr };
  } finally {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}
