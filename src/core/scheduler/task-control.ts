import type { TaskConfig } from '../config/schema.js';
import type { ConfigSource } from '../config/source.js';
import { editTask } from '../config/write-back.js';
import { errorMessage } from '../errors.js';
import type { StreamEvent } from '../events.js';
import type { Logger } from '../logger.js';
import type { TaskRun } from '../store/types.js';
import { createAsyncQueue } from '../util/async-queue.js';
import { nextCronTime } from './cron.js';
import type { TaskOutcome, TaskRunner } from './task-runner.js';

/**
 * The scheduled tasks as an operator drives them from outside the terminal (the HTTP API and the
 * dashboard): list them with their next run and last status, run one now while watching its
 * turn, enable or disable one, read its history. One run of a task at a time: a run asked for
 * while one is going is refused, and a scheduled time that comes while a run started here is
 * going is skipped and recorded, as the scheduler does for its own runs.
 */
export interface TaskControlDeps {
  config: ConfigSource;
  runner: TaskRunner;
  /** Whether a scheduler in this process runs the tasks at their times (the gateway: yes). */
  scheduled: boolean;
  log: Logger;
  now?: () => number;
}

/** A run as the API shows it: times as ISO 8601 strings. */
export type TaskRunView = Omit<TaskRun, 'startedAt' | 'endedAt'> & { startedAt: string; endedAt: string };

export interface TaskSummary {
  id: string;
  name: string;
  schedule: string;
  enabled: boolean;
  target?: { channel: string; chatId: string };
  /** The next time the schedule names (ISO 8601), or null for a disabled task. */
  nextRun: string | null;
  running: boolean;
  lastRun: TaskRunView | null;
}

export type TaskRunRefusal = { ok: false; reason: 'not_found' | 'running'; error: string };
export type TaskRunStart = { ok: true; events: AsyncIterable<StreamEvent> } | TaskRunRefusal;

export interface TaskControl {
  readonly scheduled: boolean;
  list(): Promise<TaskSummary[]>;
  get(id: string): Promise<TaskSummary | undefined>;
  /** Start a run now; its turn's events stream as they happen and end once the run is recorded. */
  run(id: string): TaskRunStart;
  /** Run now and wait for the recorded outcome (`/cron run`): refused the same way as `run`. */
  runToEnd(id: string): Promise<{ ok: true; outcome: TaskOutcome } | TaskRunRefusal>;
  /** What the scheduler calls at a task's time (skipped while a run of the task started here is going). */
  runScheduled(task: TaskConfig): Promise<void>;
  /** Edit `enabled` in service.yaml; undefined when there is no such task. */
  setEnabled(id: string, enabled: boolean): Promise<TaskSummary | undefined>;
  /** The last `limit` runs, newest first; undefined when there is no such task. */
  history(id: string, limit: number): Promise<TaskRunView[] | undefined>;
}

export function createTaskControl(deps: TaskControlDeps): TaskControl {
  const now = deps.now ?? Date.now;
  const running = new Set<string>();
  const tasks = () => deps.config.current().config.tasks;
  const find = (id: string) => tasks().find((t) => t.id === id);

  const summarise = async (t: TaskConfig): Promise<TaskSummary> => {
    const [last] = await deps.runner.history(t.id, 1);
    return {
      id: t.id,
      name: t.name,
      schedule: t.schedule,
      enabled: t.enabled,
      ...(t.target ? { target: t.target } : {}),
      nextRun: t.enabled ? nextRunOf(t, now()) : null,
      running: running.has(t.id),
      lastRun: last ? formatRun(last) : null,
    };
  };

  /** One run, marked as running while it goes. */
  const runTracked = async (task: TaskConfig, onEvent?: (e: StreamEvent) => void): Promise<TaskOutcome> => {
    running.add(task.id);
    try {
      return await deps.runner.run(task, onEvent ? { onEvent } : {});
    } finally {
      running.delete(task.id);
    }
  };
  /** The task when a run may start now, else why not. */
  const startable = (id: string): { ok: true; task: TaskConfig } | TaskRunRefusal => {
    const task = find(id);
    if (!task) return { ok: false, reason: 'not_found', error: `no task with id "${id}"` };
    if (running.has(id)) return { ok: false, reason: 'running', error: `task ${id} is running; wait for that run to end` };
    return { ok: true, task };
  };

  return {
    scheduled: deps.scheduled,
    list: () => Promise.all(tasks().map(summarise)),
    async get(id) {
      const t = find(id);
      return t ? summarise(t) : undefined;
    },
    run(id) {
      const start = startable(id);
      if (!start.ok) return start;
      const { task } = start;
      const out = createAsyncQueue<StreamEvent>();
      let ended = false;
      void runTracked(task, (e) => {
        if (e.type === 'completion') ended = true;
        out.push(e);
      })
        .catch((err: unknown) => {
          deps.log.error(`task ${id}: ${errorMessage(err)}`);
          // The turn's own stream always ends with a completion; this covers a failure around it.
          if (ended) return;
          const message = `task run failed: ${errorMessage(err)}`;
          out.push({ type: 'error', message });
          out.push({ type: 'done', durationMs: 0 });
          out.push({ type: 'completion', status: 'failed', message });
        })
        .finally(() => out.end());
      return { ok: true, events: out };
    },
    async runToEnd(id) {
      const start = startable(id);
      return start.ok ? { ok: true, outcome: await runTracked(start.task) } : start;
    },
    async runScheduled(task) {
      if (running.has(task.id)) {
        deps.log.warn(`task ${task.id}: a run started by hand is still going; this scheduled run is skipped`);
        await deps.runner.recordSkipped(task, now());
        return;
      }
      await runTracked(task);
    },
    async setEnabled(id, enabled) {
      if (!find(id)) return undefined;
      deps.config.edit(editTask(id, { enabled }));
      const t = find(id);
      return t ? summarise(t) : undefined;
    },
    async history(id, limit) {
      if (!find(id)) return undefined;
      return (await deps.runner.history(id, limit)).map(formatRun);
    },
  };
}

// --- internal ---

function formatRun(r: TaskRun): TaskRunView {
  return { ...r, startedAt: new Date(r.startedAt).toISOString(), endedAt: new Date(r.endedAt).toISOString() };
}

/** From the schedule, as the scheduler arms it (it re-arms from the time a run fired, so the two agree). */
function nextRunOf(task: TaskConfig, at: number): string | null {
  try {
    return nextCronTime(task.schedule, new Date(at)).toISOString();
  } catch {
    return null;
  }
}
