/**
 * Why a turn was aborted, carried as the reason of its AbortSignal so the completion can say it:
 * a user's abort (`POST /abort`, `/stop`, Ctrl-C) ends with plain "Aborted", a turn cut by
 * shutdown with "Aborted: the gateway is shutting down", so a client can tell the two apart.
 */
export class TurnStop {
  readonly message: string;

  constructor(message: string) {
    this.message = message;
  }
}

export const SHUTDOWN_REASON = 'the gateway is shutting down';

/** The stop every turn still going gets when the assistant drains. */
export const createShutdownStop = (why: string = SHUTDOWN_REASON): TurnStop => new TurnStop(`Aborted: ${why}`);

/** The completion message of an aborted turn: the stop's own words, else `fallback`. */
export function abortMessage(signal: AbortSignal | undefined, fallback: string): string {
  return signal?.reason instanceof TurnStop ? signal.reason.message : fallback;
}
