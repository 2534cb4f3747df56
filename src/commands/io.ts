/** Where a command writes; injected so tests can call commands as functions and read their output. */
export interface CommandIO {
  /** A line (a newline is added when missing). */
  out(text: string): void;
  /** Raw text, no newline added (streamed replies). */
  write(text: string): void;
  err(text: string): void;
  /** stdout is a terminal (spinners, colours and prompts only then). */
  isTTY: boolean;
}

/**
 * Output piped into a reader that quits early (`service cron history | head -3`) is not an error:
 * once stdout is gone, what is left to print is dropped and the command ends normally.
 */
let stdoutGone = false;
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') stdoutGone = true;
  else throw err;
});
const toStdout = (t: string) => {
  if (!stdoutGone) process.stdout.write(t);
};

export const processIO: CommandIO = {
  out: (t) => toStdout(t.endsWith('\n') ? t : `${t}\n`),
  write: (t) => toStdout(t),
  err: (t) => process.stderr.write(t.endsWith('\n') ? t : `${t}\n`),
  isTTY: Boolean(process.stdout.isTTY && process.stdin.isTTY),
};
