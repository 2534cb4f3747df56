import { type CommandCall, commandResult, type CommandResult, type SlashCommand } from '../commands/command-table.js';
import type { ConfigSource } from '../config/source.js';
import { editTask } from '../config/write-back.js';
import { nextTaskTime } from './cron.js';
import { formatRunHistory, formatTaskList } from './task-format.js';
import type { TaskControl } from './task-control.js';
import type { TaskRunner } from './task-runner.js';

/**
 * `/cron list|run|enable|disable|del|history <id>`: the scheduler's own slash command, added to
 * the assistant's command table by whoever runs tasks (the gateway, `service chat`, embedding).
 */
export interface CronCommandDeps {
  config: ConfigSource;
  tasks: TaskRunner;
  /** Runs go through it, so a run asked for here never overlaps another run of the same task. */
  control: TaskControl;
  /** Next run times as the running scheduler sees them; without a scheduler, from the cron expression. */
  nextRun?: (id: string) => Date | undefined;
  now?: () => number;
}

const SUBCOMMANDS = ['list', 'run', 'enable', 'disable', 'del', 'history'];

const HISTORY_FOR_ADMINS =
  "/cron history shows what scheduled runs replied, wherever it was delivered (the owner's own chat too): only the terminal, the HTTP API and admins in a chat (access.admins) may read it.";

export function createCronCommand(deps: CronCommandDeps): SlashCommand {
  const now = deps.now ?? Date.now;
  const nextRun = (id: string): Date | undefined => {
    const fromScheduler = deps.nextRun?.(id);
    if (fromScheduler) return fromScheduler;
    const task = deps.config.current().config.tasks.find((t) => t.id === id);
    return task?.enabled ? nextTaskTime(task, new Date(now())) : undefined;
  };

  const run = async ([sub, id]: string[], call: CommandCall): Promise<CommandResult> => {
    const tasks = deps.config.current().config.tasks;
    if (!sub || sub === 'list') {
      if (tasks.length === 0) return commandResult('No scheduled tasks (add them under `tasks:` in service.yaml).', { tasks: [] });
      const rows = await Promise.all(
        tasks.map(async (t) => {
          const [last] = await deps.tasks.history(t.id, 1);
          return {
            id: t.id,
            name: t.name,
            ...(t.schedule !== undefined ? { schedule: t.schedule } : {}),
            ...(t.at !== undefined ? { at: t.at } : {}),
            enabled: t.enabled,
            nextRun: t.enabled ? (nextRun(t.id)?.toISOString() ?? null) : null,
            lastRun: last ? { startedAt: new Date(last.startedAt).toISOString(), status: last.status } : null,
          };
        }),
      );
      // The same table as `service cron list`.
      return commandResult(`Tasks:\n${formatTaskList(rows).join('\n')}`, {
        tasks: tasks.map((t) => ({ id: t.id, name: t.name, ...(t.schedule !== undefined ? { schedule: t.schedule } : { at: t.at }), enabled: t.enabled })),
      });
    }
    if (!SUBCOMMANDS.includes(sub)) {
      return commandResult(`Unknown /cron subcommand "${sub}". Use list, run, enable, disable, del or history.`, { error: 'unknown_command' });
    }
    if (!id) return commandResult(`Usage: /cron ${sub} <id>`, { error: 'usage' });
    const task = tasks.find((t) => t.id === id);
    if (!task) return commandResult(`No task with id "${id}". Known: ${tasks.map((t) => t.id).join(', ') || '(none)'}`, { error: 'task_not_found' });
    if (sub === 'enable' || sub === 'disable') {
      deps.config.edit(editTask(id, { enabled: sub === 'enable' }));
      return commandResult(`Task ${id} ${sub}d.`, { id, enabled: sub === 'enable' });
    }
    if (sub === 'del') {
      deps.config.edit(editTask(id, 'delete'));
      return commandResult(`Task ${id} deleted from service.yaml.`, { id });
    }
    if (sub === 'run') {
      const started = await deps.control.runToEnd(id);
      if (!started.ok) return commandResult(`Task ${id} was not started: ${started.error}.`, { id, error: started.reason });
      const { outcome } = started;
      const text = outcome.reply || outcome.run.error || outcome.run.preview || '(no reply)';
      return commandResult(`Task ${id} ${outcome.run.status}: ${text}`, { id, status: outcome.run.status });
    }
    // A run's reply may have gone to the owner's private chat: its history is the owner's to read.
    if (!call.privileged) return commandResult(HISTORY_FOR_ADMINS, { error: 'not_allowed_here' });
    const runs = await deps.tasks.history(id, 20);
    const lines = formatRunHistory(runs);
    const iso = runs.map((r) => ({ ...r, startedAt: new Date(r.startedAt).toISOString(), endedAt: new Date(r.endedAt).toISOString() }));
    return commandResult(runs.length ? `Last runs of ${id}:\n${lines.join('\n')}` : `Task ${id} has not run yet.`, { id, runs: iso });
  };

  return {
    name: 'cron',
    usage: '/cron list|run|enable|disable|del|history <id>',
    help: 'scheduled tasks',
    changesConfig: ([sub]) => sub !== undefined && ['run', 'enable', 'disable', 'del'].includes(sub),
    run,
  };
}
