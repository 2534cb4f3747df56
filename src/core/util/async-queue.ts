/**
 * A push-driven async iterable: producers push, one consumer iterates with for-await.
 * Used wherever an event source (a process, a turn) is turned into a stream.
 */
export interface AsyncQueue<T> extends AsyncIterable<T> {
  push(value: T): void;
  /** No more values; the iteration ends after the buffered ones. */
  end(): void;
  readonly ended: boolean;
}

export function createAsyncQueue<T>(): AsyncQueue<T> {
  const buffer: T[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  return {
    push(value) {
      if (ended) return;
      buffer.push(value);
      notify();
    },
    end() {
      ended = true;
      notify();
    },
    get ended() {
      return ended;
    },
    async *[Symbol.asyncIterator]() {
      try {
        for (;;) {
          if (buffer.length > 0) {
            yield buffer.shift() as T;
            continue;
          }
          if (ended) return;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        // A consumer that stops early (a client that went away) must not make the producer buffer forever.
        ended = true;
        buffer.length = 0;
      }
    },
  };
}
