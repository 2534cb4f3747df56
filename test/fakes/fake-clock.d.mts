import type { Clock } from '../../src/core/scheduler/clock.js';

/** A clock moved by hand: timers fire in time order as `advance` passes them. */
export interface FakeClock extends Clock {
  advance(ms: number): Promise<void>;
  /** Delays of the timers set so far (to see chained long waits). */
  readonly delays: number[];
  pending(): number;
}

export function createFakeClock(start: number): FakeClock;
