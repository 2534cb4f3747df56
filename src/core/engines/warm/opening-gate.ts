/**
 * A resident protocol's first turn can come while its session (ACP) or thread (Codex) is still
 * opening: the turn's send waits here until it is open, and an interrupt before then drops it.
 */
export interface OpeningGate {
  /** The session is open: `ready` (the channel told), then the turn that waited, if any. */
  opened(ready: () => void): void;
  /** Sends now when open (true); otherwise keeps `send` for `opened` (false). */
  run(send: () => void): boolean;
  /** The waiting turn is dropped (interrupted before it was sent). */
  drop(): void;
}

export function createOpeningGate(): OpeningGate {
  let open = false;
  let queued: (() => void) | undefined;
  return {
    opened(ready) {
      open = true;
      ready();
      const next = queued;
      queued = undefined;
      next?.();
    },
    run(send) {
      if (!open) {
        queued = send;
        return false;
      }
      send();
      return true;
    },
    drop() {
      queued = undefined;
    },
  };
}
