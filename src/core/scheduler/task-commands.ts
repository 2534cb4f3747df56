import { type ChatPlace, type CommandCall, commandResult, type CommandResult, type SlashCommand } from '../commands/command-table.js';
import type { TaskConfig } from '../config/schema.js';
import type { ConfigSource } from '../config/source.js';
import { ConfigError } from '../errors.js';
import { formatLocalTime } from './task-format.js';
import { type TaskControl, TaskRejected, type TaskSummary } from './task-control.js';

/**
 * Tasks from a chat: `/remind <duration> <text>` (once, later), `/task add "<cron>" <text>`
 * (repeating), `/tasks` (this chat's, with their next run), `/task del|run <id>`. What they
 * make is written to service.yaml with this chat as its target, so the reply comes back here.
 * Admins (and the owner, at the terminal or over HTTP) manage every task; other people only their
 * own chat's, up to `maxTasksPerChat`.
 */
export interface TaskCommandDeps {
  config: ConfigSource;
  control: TaskControl;
  now?: () => number;
}

/** The longest a reminder may wait. */
const MAX_DELAY_MS = 366 * 86_400_000;
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `10m`, `2h`, `1d`, `1h30m` → ms; undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim().toLowerCase();
  if (!/^(\d+[smhd])+$/.test(t)) return undefined;
  let ms = 0;
  for (const [, n, unit] of t.matchAll(/(\d+)([smhd])/g)) ms += Number(n) * (UNITS[unit ?? 's'] ?? 0);
  return ms > 0 ? ms : undefined;
}

export function createTaskCommands(deps: TaskCommandDeps): SlashCommand[] {
  const now = deps.now ?? Date.now;
  const tasks = () => deps.config.current().config.tasks;
  const refuseNew = (call: CommandCall) => refuseNewTask(deps.config, call);
  const create = (input: Parameters<TaskControl['create']>[0], said: (t: TaskSummary) => string) => createTask(deps.control, input, said);
  const list = (call: CommandCall, all: boolean) => listTasks(deps.control, call, all);

  const remind: SlashCommand = {
    name: 'remind',
    usage: '/remind <duration> <text>',
    help: 'run <text> once after <duration> (90s, 10m, 2h, 1d) and answer here',
    changesConfig: () => false,
    async run([duration], call) {
      const text = restAfter(call, 1);
      const ms = duration ? parseDuration(duration) : undefined;
      if (ms === undefined || text === '')
        return commandResult('Usage: /remind <duration> <text>, the duration as 90s, 10m, 2h, 1d or 1h30m (for example /remind 2h check the deploy)', {
          error: 'usage',
        });
      if (ms > MAX_DELAY_MS) return commandResult('A reminder can wait at most 366 days.', { error: 'usage' });
      const refused = refuseNew(call);
      if (refused) return refused;
      const at = new Date(now() + ms).toISOString();
      return create(
        { prefix: 'remind', name: `Reminder: ${oneLine(text).slice(0, 50)}`, at, prompt: text, ...target(call) },
        (t) =>
          `Reminder ${t.id} set for ${formatLocalTime(Date.parse(at))}: I will answer "${oneLine(text).slice(0, 80)}" here then. Cancel it with /task del ${t.id}.`,
      );
    },
  };

  const tasksCommand: SlashCommand = {
    name: 'tasks',
    usage: '/tasks [all]',
    help: "this chat's tasks with their next run (all: every task, admins)",
    changesConfig: () => false,
    run: ([which], call) => list(call, which === 'all'),
  };

  const task: SlashCommand = {
    name: 'task',
    usage: '/task add "<cron>" <text> | del <id> | run <id> | list',
    help: 'repeating tasks that answer in this chat',
    changesConfig: () => false,
    async run([sub, id], call) {
      if (sub === 'list' || sub === undefined) return list(call, false);
      if (sub === 'add') {
        const m = /^(["'“”])(.+?)["'“”]\s+([\s\S]+)$/.exec(restAfter(call, 1));
        if (!m?.[2] || !m[3]?.trim())
          return commandResult(`Usage: /task add "<cron expression>" <text> (for example /task add "0 9 * * 1-5" summarize the open issues)`, {
            error: 'usage',
          });
        const refused = refuseNew(call);
        if (refused) return refused;
        const [schedule, text] = [m[2].trim(), m[3].trim()];
        return create(
          { prefix: 'task', schedule, prompt: text, ...target(call) },
          (t) =>
            `Task ${t.id} added (\`${schedule}\`, next ${t.nextRun ? formatLocalTime(Date.parse(t.nextRun)) : '–'}); its answers come here. Remove it with /task del ${t.id}.`,
        );
      }
      if (sub !== 'del' && sub !== 'run') return commandResult(`Unknown /task subcommand "${sub}". Use add, del, run or list.`, { error: 'unknown_command' });
      if (!id) return commandResult(`Usage: /task ${sub} <id>`, { error: 'usage' });
      const found = tasks().find((t) => t.id === id);
      // Someone else's task is "not found" to a member: ids of other chats' tasks are not theirs to learn.
      if (!found || (!call.privileged && !inChat(found, call.chat)))
        return commandResult(`No task "${id}" in this chat (see /tasks).`, { error: 'task_not_found' });
      if (sub === 'del') {
        await deps.control.remove(id);
        return commandResult(`Task ${id} removed.`, { id });
      }
      const started = await deps.control.runToEnd(id);
      if (!started.ok) return commandResult(`Task ${id} was not started: ${started.error}.`, { id, error: started.reason });
      const { outcome } = started;
      const where = found.target ? (outcome.run.delivered ? ' (the answer was sent to its chat)' : '') : '';
      return commandResult(`Task ${id} ${outcome.run.status}${where}: ${outcome.reply || outcome.run.error || '(no reply)'}`, {
        id,
        status: outcome.run.status,
      });
    },
  };

  return [remind, task, tasksCommand];
}

// --- internal ---

const inChat = (t: Pick<TaskConfig, 'target'>, chat: ChatPlace | undefined) =>
  chat !== undefined && t.target?.channel === chat.channel && t.target.chatId === chat.chatId;

/** Why this caller may not make one more task here, or undefined when they may. */
function refuseNewTask(config: ConfigSource, call: CommandCall): CommandResult | undefined {
  if (!call.chat) return commandResult(NEEDS_CHAT, { error: 'not_here' });
  const c = config.current().config;
  const mine = c.tasks.filter((t) => inChat(t, call.chat)).length;
  if (!call.privileged && mine >= c.maxTasksPerChat) {
    return commandResult(`This chat has ${mine} task${mine === 1 ? '' : 's'} already (at most ${c.maxTasksPerChat}); remove one with /task del <id> first.`, {
      error: 'too_many_tasks',
      limit: c.maxTasksPerChat,
    });
  }
  return undefined;
}

async function createTask(control: TaskControl, input: Parameters<TaskControl['create']>[0], said: (t: TaskSummary) => string): Promise<CommandResult> {
  try {
    const made = await control.create(input);
    return commandResult(said(made), { task: made });
  } catch (err) {
    if (err instanceof TaskRejected) return commandResult(`Not created: ${err.message}`, { error: 'invalid', field: err.field });
    if (err instanceof ConfigError)
      return commandResult(`Not created: service.yaml cannot take it now (${err.problems.join('; ')})`, { error: 'command_failed' });
    throw err;
  }
}

/** This chat's tasks (every task: `all` for admins, or off the channels), with their next run. */
async function listTasks(control: TaskControl, call: CommandCall, all: boolean): Promise<CommandResult> {
  if (all && !call.privileged) return commandResult('Only admins may list every task (/tasks shows this chat’s).', { error: 'not_allowed_here' });
  const everything = all || !call.chat;
  const shown = (await control.list()).filter((t) => everything || inChat(t, call.chat));
  if (shown.length === 0) return commandResult(everything ? 'No tasks.' : 'No tasks for this chat. Add one with /remind or /task add.', { tasks: [] });
  const lines = shown.map(
    (t) => `${t.id} · ${t.schedule ? `\`${t.schedule}\`` : 'once'} · ${t.nextRun ? `next ${formatLocalTime(Date.parse(t.nextRun))}` : 'disabled'} · ${t.name}`,
  );
  return commandResult(`${everything ? 'Tasks' : 'Tasks of this chat'}:\n${lines.join('\n')}`, { tasks: shown });
}

const NEEDS_CHAT =
  'Tasks from a command answer in the chat they were made in: use this in a channel chat, or create one with a target through POST /api/tasks (or under `tasks:` in service.yaml).';

const target = (call: CommandCall) => (call.chat ? { target: { channel: call.chat.channel, chatId: call.chat.chatId } } : {});

/** The command line after its first `words` arguments, as written (line breaks kept). */
function restAfter(call: CommandCall, words: number): string {
  const line = call.line ?? '';
  const parts = line.trim().split(/(\s+)/); // words and the spaces between them
  return parts
    .slice((words + 1) * 2)
    .join('')
    .trim();
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
