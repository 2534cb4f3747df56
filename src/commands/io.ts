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

export const processIO: CommandIO = {
  out: (t) => process.stdout.write(t.endsWith('\n') ? t : `${t}\n`),
  write: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t.endsWith('\n') ? t : `${t}\n`),
  isTTY: Boolean(process.stdout.isTTY && process.stdin.isTTY),
};
