import type { TaskConfig } from '../config/schema.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import { MAX_TIMER_MS, type Clock } from '../util/clock.js';
import { nextCronTime, nextTaskTime } from './cron.js';

/**
 * Runs the enabled `tasks` of service.yaml at their cron times, and one-shot tasks (`at`) once at
 * their time (at once if it passed while no gateway ran). One timer per task, re-armed
 * after each run from the time it actually fired: a gateway that was down at a scheduled time
 * does not replay it. A run still going when the next time comes is skipped and recorded.
 * `refresh()` picks up added, removed, re-scheduled, enabled and disabled tasks. `stop()` and
 * `start()` again (a gateway that stops and becomes leader again) re-arm from the time of start;
 * `catchUp(since)` runs, once, the last time each task had since then (a takeover's gap).
 */
export interface SchedulerDeps {
  tasks: () => readonly TaskConfig[];
  clock: Clock;
  /** `at`: the cron time this run is for (unix ms), the same for every scheduler that reaches it. */
  run: (task: TaskConfig, at: number) => Promise<unknown>;
  onSkipped: (task: TaskConfig, at: number) => void;
  log: Logger;
}

export interface Scheduler {
  /** Arm every enabled task (again, after `stop()`). */
  start(): void;
  refresh(): void;
  stop(): void;
  /** Run each task's last cron time after `since` and not after now (unix ms), if it has one. */
  catchUp(since: number): void;
  nextRun(id: string): Date | undefined;
  isRunning(id: string): boolean;
}

interface Slot {
  task: TaskConfig;
  next: number;
  timer?: { clear(): void };
}

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const slots = new Map<string, Slot>();
  const running = new Set<string>();
  /** Until `start()`: a gateway that follows another keeps its scheduler unarmed. */
  let stopped = true;

  const runOnce = (task: TaskConfig, at: number, now: number) => {
    if (running.has(task.id)) {
      deps.log.warn(`task ${task.id}: still running at its next time; this run is skipped`);
      deps.onSkipped(task, now);
      return;
    }
    running.add(task.id);
    void deps
      .run(task, at)
      .catch((err: unknown) => deps.log.error(`task ${task.id}: ${errorMessage(err)}`))
      .finally(() => running.delete(task.id));
  };

  const arm = (slot: Slot) => {
    slot.timer?.clear();
    const wait = Math.max(0, slot.next - deps.clock.now());
    slot.timer = deps.clock.setTimer(() => fire(slot), Math.min(wait, MAX_TIMER_MS));
  };

  const fire = (slot: Slot) => {
    if (stopped || slots.get(slot.task.id) !== slot) return;
    const now = deps.clock.now();
    if (now < slot.next) return arm(slot); // a chained part of a long wait
    runOnce(slot.task, slot.next, now);
    const next = slot.task.at === undefined ? nextTaskTime(slot.task, new Date(Math.max(now, slot.next))) : undefined;
    // A one-shot (`at`) has run: its slot goes (the task removes itself from service.yaml after its run).
    if (!next) return void slots.delete(slot.task.id);
    slot.next = next.getTime();
    arm(slot);
  };

  const armNew = (task: TaskConfig) => {
    try {
      const slot: Slot = { task, next: firstRunOf(task, deps.clock.now()) };
      slots.set(task.id, slot);
      arm(slot);
      deps.log.info(`task ${task.id}: next run ${new Date(slot.next).toISOString()}`);
    } catch (err) {
      deps.log.error(`task ${task.id}: cannot schedule "${task.schedule ?? task.at}": ${errorMessage(err)}`);
    }
  };

  /**
   * Enabled tasks not armed yet. Arming one (its next cron time) costs a fraction of a ms, so a
   * change that adds hundreds at once (a PATCH of the task list, a start with 1,000 tasks) arms
   * ARM_SLICE of them at a time, letting other events in between: until its slice comes, a task
   * has no nextRun. `refresh()` recomputes the list, so a slice never arms a task since removed.
   */
  let unarmed: TaskConfig[] = [];
  let sliceQueued = false;
  const armSlice = () => {
    for (const task of unarmed.splice(0, ARM_SLICE)) armNew(task);
    if (unarmed.length === 0 || sliceQueued) return;
    sliceQueued = true;
    setImmediate(() => {
      sliceQueued = false;
      if (!stopped) armSlice();
    });
  };

  const scheduler: Scheduler = {
    start() {
      stopped = false;
      scheduler.refresh();
    },
    refresh() {
      if (stopped) return;
      const wanted = new Map(
        deps
          .tasks()
          .filter((t) => t.enabled)
          .map((t) => [t.id, t]),
      );
      for (const [id, slot] of slots) {
        const t = wanted.get(id);
        if (!t || t.schedule !== slot.task.schedule || t.at !== slot.task.at) {
          slot.timer?.clear();
          slots.delete(id);
        } else {
          slot.task = t; // prompt or target edits apply to the next run
        }
      }
      unarmed = [...wanted.values()].filter((t) => !slots.has(t.id));
      armSlice();
    },
    stop() {
      stopped = true;
      unarmed = [];
      for (const slot of slots.values()) slot.timer?.clear();
      slots.clear();
    },
    catchUp(since) {
      if (stopped) return;
      for (const task of unarmed.splice(0)) armNew(task);
      const now = deps.clock.now();
      for (const slot of slots.values()) {
        // A one-shot's own timer runs it (at once when its time has passed).
        if (slot.task.schedule === undefined) continue;
        const missed = lastCronTimeBetween(slot.task.schedule, since, now);
        if (missed === undefined) continue;
        deps.log.info(`task ${slot.task.id}: catching up its run of ${new Date(missed).toISOString()}`);
        runOnce(slot.task, missed, now);
      }
    },
    nextRun: (id) => {
      const slot = slots.get(id);
      return slot ? new Date(slot.next) : undefined;
    },
    isRunning: (id) => running.has(id),
  };
  return scheduler;
}

// --- internal ---

/** New tasks armed per turn of the event loop: 10 keeps /health's slowest answer during a 1,000-task PATCH under 50 ms (docs/performance.md). */
const ARM_SLICE = 10;

/** A task's first time from `now`: its next cron time, or a one-shot's `at` (throws when it is not a time). */
function firstRunOf(task: TaskConfig, now: number): number {
  // A one-shot whose time passed while no gateway ran runs now: a reminder late beats none.
  if (task.at === undefined) return nextCronTime(task.schedule ?? '', new Date(now)).getTime();
  const at = nextTaskTime(task, new Date(now));
  if (!at) throw new Error(`"${task.at}" is not a time`);
  return at.getTime();
}

/** The last cron time in (from, to], if any; bounded, since a takeover's gap is seconds long. */
function lastCronTimeBetween(schedule: string, from: number, to: number): number | undefined {
  let last: number | undefined;
  let t = nextCronTime(schedule, new Date(from)).getTime();
  for (let i = 0; t <= to && i < 10_000; i++) {
    last = t;
    t = nextCronTime(schedule, new Date(t)).getTime();
  }
  return last;
}
