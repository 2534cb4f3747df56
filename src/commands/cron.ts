import { editTask } from '../core/config/write-back.js';
import { AppError } from '../core/errors.js';
import { createLogger } from '../core/logger.js';
import { nextTaskTime } from '../core/scheduler/cron.js';
import type { TaskRun } from '../core/store/types.js';
import { type AssistantDirectory, addTaskRunner, openAssistantDirectory } from '../assistant-directory.js';
import type { TaskConfig } from '../core/config/schema.js';
import { createCronDelivery } from './cron-delivery.js';
import { formatRunHistory, formatTaskList } from '../core/scheduler/task-format.js';
import type { CommandIO } from './io.js';
import { SIGNAL_EXIT, stopTurnsOn } from './stop-signals.js';

export interface CronOptions {
  action: 'list' | 'run' | 'enable' | 'disable' | 'del' | 'history';
  id?: string;
  dir: string;
  json?: boolean;
}

/**
 * `service cron list|run|enable|disable|del|history`. `run` works without a gateway: the turn
 * runs in this process, the reply is printed and delivered to the task's target; exit 0 on
 * success (a silent `[PASS]` run included), 1 on failure, so scripts and system cron can use it.
 * enable/disable/del edit service.yaml (comments and placeholders kept); a running gateway
 * picks the change up by itself.
 */
export async function runCron(opts: CronOptions, io: CommandIO): Promise<number> {
  const log = createLogger({ level: 'warn' });
  const opened = openAssistantDirectory({ dir: opts.dir, log });
  const delivery = createCronDelivery({ dir: opts.dir, config: opened.config, log });
  const { runner } = addTaskRunner(opened, delivery);
  try {
    const tasks = opened.config.current().config.tasks;
    const found = opts.id === undefined ? undefined : tasks.find((t) => t.id === opts.id);
    if (opts.action === 'list') return await listTasks(opened, tasks, opts, io);
    if (!found) {
      throw new AppError('task_not_found', `no task "${opts.id}" in service.yaml`, {
        hint: tasks.length ? `tasks: ${tasks.map((t) => t.id).join(', ')}` : 'add tasks under `tasks:` in service.yaml',
      });
    }
    const task = found;
    switch (opts.action) {
      case 'run': {
        // Ctrl-C, a closed terminal or a `kill` stops the run's engine; the run is recorded as stopped.
        const stop = stopTurnsOn(opened.assistant, ['SIGINT', 'SIGHUP', 'SIGTERM']);
        try {
          const outcome = await runner.run(task);
          const { run } = outcome;
          if (opts.json) io.out(JSON.stringify({ ...run, reply: outcome.reply }, null, 2));
          else if (run.status === 'completed') io.out(outcome.reply);
          else if (run.status === 'silent') io.out('(silent: the assistant replied [PASS]; nothing was sent)');
          if (run.error && !opts.json) io.err(`error: ${run.error}`);
          const signal = stop.received();
          if (signal) return SIGNAL_EXIT[signal];
          return (run.status === 'completed' || run.status === 'silent') && run.delivered !== false ? 0 : 1;
        } finally {
          stop.off();
        }
      }
      case 'enable':
      case 'disable':
      case 'del': {
        opened.config.edit(editTask(task.id, opts.action === 'del' ? 'delete' : { enabled: opts.action === 'enable' }));
        io.out(`Task ${task.id} ${opts.action === 'del' ? 'deleted' : `${opts.action}d`} in ${opened.config.current().file}`);
        return 0;
      }
      case 'history': {
        const runs = await opened.store.taskRuns(task.id, 100);
        if (opts.json) io.out(JSON.stringify({ id: task.id, runs: runs.map(isoRun) }, null, 2));
        else if (runs.length === 0) io.out(`Task ${task.id} has not run yet.`);
        else io.out(formatRunHistory(runs).join('\n'));
        return 0;
      }
      default:
        throw new AppError('usage', `unknown cron action ${String(opts.action)}`);
    }
  } finally {
    await delivery.close();
    await opened.assistant.drain(0);
    await opened.close();
  }
}

async function listTasks(opened: AssistantDirectory, tasks: readonly TaskConfig[], opts: CronOptions, io: CommandIO): Promise<number> {
  const rows = [];
  for (const t of tasks) {
    const [last] = await opened.store.taskRuns(t.id, 1);
    rows.push({
      id: t.id,
      name: t.name,
      ...(t.schedule !== undefined ? { schedule: t.schedule } : {}),
      ...(t.at !== undefined ? { at: t.at } : {}),
      enabled: t.enabled,
      nextRun: t.enabled ? (nextTaskTime(t, new Date())?.toISOString() ?? null) : null,
      target: t.target ?? null,
      lastRun: last ? { startedAt: new Date(last.startedAt).toISOString(), status: last.status } : null,
    });
  }
  if (opts.json) io.out(JSON.stringify({ tasks: rows }, null, 2));
  else if (rows.length === 0) io.out('No tasks. Add them under `tasks:` in service.yaml.');
  else io.out(formatTaskList(rows).join('\n'));
  return 0;
}

function isoRun(r: TaskRun): Record<string, unknown> {
  return { ...r, startedAt: new Date(r.startedAt).toISOString(), endedAt: new Date(r.endedAt).toISOString() };
}
