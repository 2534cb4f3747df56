import { spawn } from 'node:child_process';
import { cliPath } from './cli.js';
import { isAlive, type StandIn } from './stand-in.js';
import { HANG_MS, poll } from './wait.js';

/** The signals that stop a command, what sends each, and the exit code a shell reports for it. */
export const STOP_SIGNALS = [
  ['SIGINT', 'Ctrl-C', 130],
  ['SIGHUP', 'a closed terminal', 129],
  ['SIGTERM', 'a kill', 143],
] as const;

export interface SignalStop {
  /** The command's exit code. */
  code: number | null;
  /** Its stdout and stderr, as they came. */
  output: string;
  /** Whether the engine of the HANG turn was still running once the command had exited. */
  engineOutlived: boolean;
}

/**
 * Run `service <args>` with the stand-ins, wait until the stand-in engine runs the `HANG` prompt,
 * send the command `signal`, and report how it ended. `stdin` is written and left open (more
 * lines could follow), as a pipe into `service chat` is. Whatever is left running is killed
 * afterwards, so a failed assertion leaves nothing behind.
 */
export async function stopWhileEngineRuns(o: { args: string[]; standIn: StandIn; signal: NodeJS.Signals; stdin?: string }): Promise<SignalStop> {
  const child = spawn(process.execPath, [cliPath, ...o.args], {
    env: { ...process.env, NO_COLOR: '1', ...o.standIn.env },
    stdio: [o.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  if (o.stdin !== undefined) child.stdin?.write(o.stdin);
  let pid: number | undefined;
  try {
    pid = await poll(() => o.standIn.runs().find((r) => r.prompt === 'HANG')?.pid as number | undefined, HANG_MS, 'the HANG turn', 50);
    child.kill(o.signal);
    const code = await exited;
    return { code, output, engineOutlived: isAlive(pid) };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
  }
}
