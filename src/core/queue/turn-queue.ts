/**
 * Admission and ordering of turns. Turns of one session key run one at a time in arrival order;
 * different keys run in parallel. `maxQueuePerSession` bounds how many wait behind the running
 * turn of a key; `maxConcurrent` bounds the turns admitted (running or waiting) across all keys;
 * `maxTurnsPerPerson` bounds the turns one person in a chat (not an admin) has admitted, so one
 * member with turns waiting on unanswered approvals cannot hold every slot. Limits are read on
 * every admission, so a config change applies to the next turn. No I/O here.
 */
export interface QueueLimits {
  maxConcurrent: number;
  maxQueuePerSession: number;
  /** Absent: no per-person limit. */
  maxTurnsPerPerson?: number;
}

export type Admission = { ok: true; ticket: Ticket } | { ok: false; reason: 'busy' | 'queue_full' | 'person_busy'; limit: number };

/** What a refused turn is told (the spec's texts, and ours for the per-person limit). */
export function formatAdmissionRefusal(refused: Extract<Admission, { ok: false }>): string {
  if (refused.reason === 'person_busy') {
    return `You already have ${refused.limit} turn${refused.limit === 1 ? '' : 's'} running or waiting (limit: ${refused.limit} per person). Try again when one has finished.`;
  }
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
  /** `person`: who in a chat started it, counted against maxTurnsPerPerson (absent: not limited per person). */
  admit(key: string, person?: string): Admission;
  /**
   * Admit, waiting for a free slot while the limits refuse (for callers whose messages are already
   * durable: channels, the scheduler); resolves with the refusal only once `signal` aborts.
   */
  admitWhenFree(key: string, signal?: AbortSignal, person?: string): Promise<Admission>;
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
  const perPerson = new Map<string, number>();
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
    admit(key, person) {
      const { maxConcurrent, maxQueuePerSession, maxTurnsPerPerson = Number.POSITIVE_INFINITY } = limits();
      const lane = lanes.get(key) ?? [];
      const waiting = lane.filter((e) => !e.started).length;
      if (lane.length > 0 && waiting >= maxQueuePerSession) return { ok: false, reason: 'queue_full', limit: maxQueuePerSession };
      if (person !== undefined && (perPerson.get(person) ?? 0) >= maxTurnsPerPerson) return { ok: false, reason: 'person_busy', limit: maxTurnsPerPerson };
      if (admitted >= maxConcurrent) return { ok: false, reason: 'busy', limit: maxConcurrent };
      if (person !== undefined) perPerson.set(person, (perPerson.get(person) ?? 0) + 1);

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
            if (person !== undefined) {
              const left = (perPerson.get(person) ?? 1) - 1;
              if (left > 0) perPerson.set(person, left);
              else perPerson.delete(person);
            }
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
    async admitWhenFree(key, signal, person) {
      let admission = queue.admit(key, person);
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
        admission = queue.admit(key, person);
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
