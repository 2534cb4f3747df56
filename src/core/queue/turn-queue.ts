/**
 * Admission and ordering of turns. Turns of one session key run one at a time in arrival order;
 * different keys run in parallel. `maxQueuePerSession` bounds how many wait behind the running
 * turn of a key; `maxConcurrent` bounds the turns admitted (running or waiting) across all keys.
 * Limits are read on every admission, so a config change applies to the next turn. No I/O here.
 */
export interface QueueLimits {
  maxConcurrent: number;
  maxQueuePerSession: number;
}

export type Admission = { ok: true; ticket: Ticket } | { ok: false; reason: 'busy' | 'queue_full'; limit: number };

/** What a refused turn is told (the spec's texts). */
export function formatAdmissionRefusal(refused: Extract<Admission, { ok: false }>): string {
  return refused.reason === 'busy'
    ? `Server busy: too many concurrent requests (limit: ${refused.limit}). Try again later.`
    : `Too many pending requests for this session (limit: ${refused.limit}). Try again later.`;
}

export interface Ticket {
  readonly key: string;
  /** Resolves when this turn may run (immediately when the key is idle). */
  readonly ready: Promise<void>;
  /** Leave the queue: after running, or when given up while waiting. Idempotent. */
  release(): void;
}

export interface TurnQueue {
  admit(key: string): Admission;
  /**
   * Admit, waiting for a free slot while the limits refuse (for callers whose messages are already
   * durable: channels, the scheduler); resolves with the refusal only once `signal` aborts.
   */
  admitWhenFree(key: string, signal?: AbortSignal): Promise<Admission>;
  /** Let the callers waiting for a slot try again (a shutdown wants them admitted, and stopped). */
  wakeWaiting(): void;
  isRunning(key: string): boolean;
  /** Turns admitted (running + waiting). */
  size(): number;
  stats(): { running: number; waiting: number; keys: number };
}

export function createTurnQueue(limits: () => QueueLimits): TurnQueue {
  const lanes = new Map<string, Array<{ start: () => void; started: boolean }>>();
  let admitted = 0;
  /** Callers waiting for a slot, woken whenever a turn leaves the queue. */
  const waiting = new Set<() => void>();
  const wakeWaiting = () => {
    for (const wake of [...waiting]) wake();
  };

  const startHead = (key: string) => {
    const head = lanes.get(key)?.[0];
    if (head && !head.started) {
      head.started = true;
      head.start();
    }
  };

  const queue: TurnQueue = {
    admit(key) {
      const { maxConcurrent, maxQueuePerSession } = limits();
      const lane = lanes.get(key) ?? [];
      const waiting = lane.filter((e) => !e.started).length;
      if (lane.length > 0 && waiting >= maxQueuePerSession) return { ok: false, reason: 'queue_full', limit: maxQueuePerSession };
      if (admitted >= maxConcurrent) return { ok: false, reason: 'busy', limit: maxConcurrent };

      let start!: () => void;
      const ready = new Promise<void>((resolve) => (start = resolve));
      const entry = { start, started: false };
      lane.push(entry);
      lanes.set(key, lane);
      admitted++;
      let released = false;
      startHead(key);
      return {
        ok: true,
        ticket: {
          key,
          ready,
          release() {
            if (released) return;
            released = true;
            admitted--;
            const current = lanes.get(key) ?? [];
            const i = current.indexOf(entry);
            if (i >= 0) current.splice(i, 1);
            if (current.length === 0) lanes.delete(key);
            else startHead(key);
            wakeWaiting();
          },
        },
      };
    },
    async admitWhenFree(key, signal) {
      let admission = queue.admit(key);
      while (!admission.ok && !signal?.aborted) {
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiting.delete(wake);
            signal?.removeEventListener('abort', wake);
            resolve();
          };
          waiting.add(wake);
          signal?.addEventListener('abort', wake, { once: true });
        });
        admission = queue.admit(key);
      }
      return admission;
    },
    wakeWaiting,
    isRunning: (key) => lanes.get(key)?.[0]?.started === true,
    size: () => admitted,
    stats() {
      let running = 0;
      for (const lane of lanes.values()) if (lane[0]?.started) running++;
      return { running, waiting: admitted - running, keys: lanes.size };
    },
  };
  return queue;
}
