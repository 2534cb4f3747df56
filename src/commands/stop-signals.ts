/** How a shell reports a command ended by these signals (128 + the signal's number). */
export const SIGNAL_EXIT = { SIGINT: 130, SIGHUP: 129, SIGTERM: 143 } as const;
export type StopSignal = keyof typeof SIGNAL_EXIT;

/**
 * For a command that runs turns in this process (`chat`, `cron run`): when one of `signals`
 * arrives, stop the running turns instead of node's default of ending at once. An engine runs in a
 * process group of its own, so neither Ctrl-C at the terminal, a closed terminal nor this process's
 * end reaches it: without this it went on working, with nobody reading it. `first` runs as the
 * signal arrives, before the turns are stopped (a REPL stops taking lines, so none read ahead
 * starts a turn); the command's own flow then ends, and `received()` tells it which signal came,
 * for its exit code.
 */
export function stopTurnsOn(
  assistant: { drain(graceMs: number, why?: string): Promise<void> },
  signals: readonly StopSignal[],
  first?: (signal: StopSignal) => void,
): { received(): StopSignal | undefined; off(): void } {
  let received: StopSignal | undefined;
  const handlers = signals.map((signal) => {
    const handler = () => {
      received ??= signal;
      outliveTerminal();
      if (first) first(signal);
      void assistant.drain(0, `stopped by ${signal}`);
    };
    process.once(signal, handler);
    return () => process.removeListener(signal, handler);
  });
  return {
    received: () => received,
    off: () => {
      for (const off of handlers) off();
    },
  };
}

/**
 * The terminal may be gone (SIGHUP, a closed window): a write to it fails with EPIPE/EIO, which
 * must not end the process before its engines are stopped and its state is written.
 */
export function outliveTerminal(): void {
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
}
