import { randomBytes } from 'node:crypto';
import type { TaskConfig } from '../config/schema.js';
import type { ConfigSource } from '../config/source.js';
import { addTask, editTask } from '../config/write-back.js';
import { AppError, errorMessage } from '../errors.js';
import type { StreamEvent } from '../events.js';
import type { Logger } from '../logger.js';
import type { TaskRun } from '../store/types.js';
import { createAsyncQueue } from '../util/async-queue.js';
import { AT_FORMAT, explainInvalidCron, nextTaskTime, parseTaskTime } from './cron.js';
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
  /** A cron expression, or (a one-shot task) `at`: the time it runs once. */
  schedule?: string;
  at?: string;
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
  /**
   * What the scheduler calls at a task's time (skipped while a run of the task started here is
   * going). `claim` takes the time in the store first: false when another gateway took it.
   */
  runScheduled(task: TaskConfig, claim?: () => Promise<boolean>): Promise<void>;
  /** Edit `enabled` in service.yaml; undefined when there is no such task. */
  setEnabled(id: string, enabled: boolean): Promise<TaskSummary | undefined>;
  /** Write a new task into service.yaml (comments and placeholders kept); throws TaskRejected. */
  create(input: NewTask): Promise<TaskSummary>;
  /** Remove a task from service.yaml; false when there is no such task. */
  remove(id: string): Promise<boolean>;
  /** The last `limit` runs, newest first; undefined when there is no such task. */
  history(id: string, limit: number): Promise<TaskRunView[] | undefined>;
}

/** A task to create (POST /api/tasks, /remind, /task add): `schedule` or `at`. */
export interface NewTask {
  /** Made up when absent (`prefix` and six characters). */
  id?: string;
  prefix?: string;
  name?: string;
  schedule?: string;
  /** ISO 8601; in the future. */
  at?: string;
  prompt: string;
  enabled?: boolean;
  target?: { channel: string; chatId: string };
}

/** A task that cannot be created as asked: the field and why. */
export class TaskRejected extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'TaskRejected';
  }
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
      ...(t.schedule !== undefined ? { schedule: t.schedule } : {}),
      ...(t.at !== undefined ? { at: t.at } : {}),
      enabled: t.enabled,
      ...(t.target ? { target: t.target } : {}),
      nextRun: t.enabled ? (nextTaskTime(t, new Date(now()))?.toISOString() ?? null) : null,
      running: running.has(t.id),
      lastRun: last ? formatRun(last) : null,
    };
  };

  const { remove, retire } = createTaskRemoval(deps, find);

  /** One run, marked as running while it goes. */
  const runTracked = async (task: TaskConfig, onEvent?: (e: StreamEvent) => void): Promise<TaskOutcome> => {
    running.add(task.id);
    try {
      return await deps.runner.run(task, onEvent ? { onEvent } : {});
    } finally {
      running.delete(task.id);
      await retire(task);
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
    async runScheduled(task, claim) {
      // Taken by another gateway (the claim says so in the log): a one-shot task is retired all the same.
      if (claim && !(await claim())) return retire(task);
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
    async create(input) {
      const task = checkNewTask(input, tasks(), now());
      deps.config.edit(addTask(task));
      deps.log.info(`task ${task.id} created (${task.schedule ?? `once at ${task.at}`})`);
      const made = find(task.id);
      if (!made) throw new TaskRejected('id', `task ${task.id} was written but is not in service.yaml now`);
      return summarise(made);
    },
    remove,
    async history(id, limit) {
      if (!find(id)) return undefined;
      return (await deps.runner.history(id, limit)).map(formatRun);
    },
  };
}

// --- internal ---

/** Removing a task from service.yaml, and a one-shot task once it has had its run. */
function createTaskRemoval(deps: TaskControlDeps, find: (id: string) => TaskConfig | undefined) {
  const remove = async (id: string): Promise<boolean> => {
    if (!find(id)) return false;
    try {
      deps.config.edit(editTask(id, 'delete'));
      return true;
    } catch (err) {
      // Removed meanwhile (by hand, by another process): what was asked has happened.
      if (err instanceof AppError && err.code === 'task_not_found') return false;
      throw err;
    }
  };
  /** A one-shot task has had its run (here, or on another gateway that took its time): it goes. */
  const retire = async (task: TaskConfig) => {
    if (task.at === undefined) return;
    await remove(task.id).then(
      (removed) => removed && deps.log.info(`task ${task.id} ran once (at ${task.at}) and was removed from service.yaml`),
      (err: unknown) => deps.log.error(`task ${task.id}: cannot remove it after its run: ${errorMessage(err)}`),
    );
  };

  return { remove, retire };
}

function formatRun(r: TaskRun): TaskRunView {
  return { ...r, startedAt: new Date(r.startedAt).toISOString(), endedAt: new Date(r.endedAt).toISOString() };
}

/** The task as it is written into service.yaml, or why it cannot be. */
function checkNewTask(input: NewTask, existing: readonly TaskConfig[], now: number): Record<string, unknown> & { id: string; schedule?: string; at?: string } {
  if ((input.schedule === undefined) === (input.at === undefined))
    throw new TaskRejected('schedule', 'give a cron expression (`schedule`) or a time (`at`), one of the two');
  if (input.schedule !== undefined) {
    const why = explainInvalidCron(input.schedule);
    if (why) throw new TaskRejected('schedule', why);
  }
  if (input.at !== undefined) {
    const at = parseTaskTime(input.at);
    if (at === undefined) throw new TaskRejected('at', AT_FORMAT);
    if (at <= now) throw new TaskRejected('at', `${input.at} has passed`);
  }
  const taken = new Set(existing.map((t) => t.id));
  if (input.id !== undefined && taken.has(input.id)) throw new TaskRejected('id', `a task with id "${input.id}" exists`);
  let id = input.id;
  while (id === undefined || taken.has(id)) id = `${input.prefix ?? 'task'}-${randomBytes(4).readUInt32BE(0).toString(36).padStart(6, '0').slice(-6)}`;
  const name = input.name ?? (input.prompt.replace(/\s+/g, ' ').trim().slice(0, 60) || id);
  return {
    id,
    name,
    ...(input.schedule !== undefined ? { schedule: input.schedule } : {}),
    ...(input.at !== undefined ? { at: new Date(parseTaskTime(input.at) ?? now).toISOString() } : {}),
    prompt: input.prompt,
    ...(input.enabled === false ? { enabled: false } : {}),
    ...(input.target ? { target: { channel: input.target.channel, chatId: input.target.chatId } } : {}),
  };
}
