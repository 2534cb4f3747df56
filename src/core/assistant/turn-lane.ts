import type { Ticket } from '../queue/turn-queue.js';
import type { CoordinationStore } from '../store/types.js';

/**
 * Step "queue" of a turn (turn-pipeline.ts): the turn waits for its session key's lane here (the
 * turns before it on the key end first), then, with a store shared by several gateways of the
 * assistant, for the key on the others (another host may be running it). What it takes: that
 * session-key lock, released by disposing it. An abort while waiting ends the wait without a
 * lock; the pipeline then ends the turn as aborted.
 */
export type Lane = { ok: true; lock?: AsyncDisposable } | { ok: false; message: string };

export async function enterLane(
  ticket: Ticket,
  key: string,
  signal: AbortSignal,
  keyLocks: Pick<CoordinationStore, 'lockSessionKey'> | undefined,
): Promise<Lane> {
  await Promise.race([ticket.ready, new Promise((r) => signal.addEventListener('abort', r, { once: true }))]);
  if (!keyLocks || signal.aborted) return { ok: true };
  try {
    const unlock = await keyLocks.lockSessionKey(key, signal);
    return { ok: true, lock: { [Symbol.asyncDispose]: unlock } };
  } catch (err) {
    if (signal.aborted) return { ok: true };
    return { ok: false, message: `cannot take session ${key} from the assistant's other gateways: ${(err as Error).message}` };
  }
}
