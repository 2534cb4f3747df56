import { editTask, mergePatch } from '../config/write-back.js';
import type { ConfigSource } from '../config/source.js';
import { engineDefinitions } from '../engines/registry.js';
import { errorMessage } from '../errors.js';
import { scanSkills } from '../skills/skills.js';

/**
 * Slash commands (a message starting with `/`), answered as one JSON object
 * `{type: 'command', text, ...}`; `/model list` is exactly `{type, engine, models, text}`.
 */
export type CommandResult = { type: 'command'; text: string } & Record<string, unknown>;

/** What the scheduler supplies for `/cron run` and `/cron history`. */
export interface TaskCommands {
  run(id: string): Promise<{ status: string; text: string }>;
  history(id: string, limit: number): Array<Record<string, unknown>>;
  nextRun(id: string): Date | undefined;
}

export interface CommandContext {
  sessionKey: string;
  /** False for IM channels: commands that change the configuration are refused there. */
  allowConfigChanges: boolean;
  config: ConfigSource;
  skillsDir: string;
  env: NodeJS.ProcessEnv;
  listModels(): Promise<{ models: string[]; source: string }>;
  reset(key: string): Promise<void>;
  abort(key: string): boolean;
  statusText(key: string): string;
  tasks?: TaskCommands;
}

interface CommandSpec {
  usage: string;
  help: string;
  /** Whether this invocation would change service.yaml or run a task. */
  changesConfig(args: string[]): boolean;
  run(args: string[], ctx: CommandContext): Promise<CommandResult>;
}

const result = (text: string, extra: Record<string, unknown> = {}): CommandResult => ({ type: 'command', text, ...extra });

const COMMANDS: Record<string, CommandSpec> = {
  help: {
    usage: '/help',
    help: 'this list',
    changesConfig: () => false,
    run: async () => result(['Commands:', ...Object.values(COMMANDS).map((c) => `  ${c.usage.padEnd(34)} ${c.help}`)].join('\n')),
  },
  status: {
    usage: '/status',
    help: 'assistant, engine, model and this session',
    changesConfig: () => false,
    run: async (_a, ctx) => result(ctx.statusText(ctx.sessionKey)),
  },
  engine: {
    usage: '/engine [name]',
    help: 'show or switch the engine (saved in service.yaml)',
    changesConfig: (a) => a.length > 0,
    run: async ([name], ctx) => {
      const current = ctx.config.current().config.engine;
      const all = Object.values(engineDefinitions).map((e) => `${e.id} (${e.title})`);
      if (!name) return result(`Engine: ${current}\nAvailable: ${all.join(', ')}`, { engine: current });
      if (!engineDefinitions[name]) return result(`Unknown engine "${name}". Available: ${all.join(', ')}`, { error: 'unknown_engine' });
      ctx.config.edit(mergePatch({ engine: name }, ctx.env));
      return result(`Engine switched to ${name}; the next turn starts a new ${name} session.`, { engine: name });
    },
  },
  model: {
    usage: '/model [list|name]',
    help: 'show, list or switch the model (saved in service.yaml)',
    changesConfig: (a) => a.length > 0 && a[0] !== 'list',
    run: async ([arg], ctx) => {
      const { engine, model } = ctx.config.current().config;
      if (!arg) return result(`Model: ${model ?? '(engine default)'} on ${engine}`, { engine, model: model ?? '' });
      if (arg === 'list') {
        const listing = await ctx.listModels();
        const text = `Models for ${engine}${listing.source === 'documented' ? ' (documented list)' : ''}:\n${listing.models.map((m) => `  ${m}`).join('\n')}`;
        return { type: 'command', engine, models: listing.models, text };
      }
      ctx.config.edit(mergePatch({ model: arg }, ctx.env));
      return result(`Model switched to ${arg}.`, { engine, model: arg });
    },
  },
  skill: {
    usage: '/skill',
    help: 'installed skills',
    changesConfig: () => false,
    run: async (_a, ctx) => {
      const scan = scanSkills(ctx.skillsDir);
      const lines = scan.skills.map((s) => `  ${s.name}: ${s.description}`);
      const problems = scan.problems.map((p) => `  skills/${p.folder}: ${p.problem}`);
      return result([`Skills (${scan.skills.length}):`, ...lines, ...(problems.length ? ['Invalid skill folders:', ...problems] : [])].join('\n'), {
        skills: scan.skills.map(({ name, description }) => ({ name, description })),
      });
    },
  },
  cron: {
    usage: '/cron list|run|enable|disable|del|history <id>',
    help: 'scheduled tasks',
    changesConfig: ([sub]) => sub !== undefined && ['run', 'enable', 'disable', 'del'].includes(sub),
    run: runCron,
  },
  reset: {
    usage: '/reset',
    help: 'forget this session (engine session and history)',
    changesConfig: () => false,
    run: async (_a, ctx) => {
      await ctx.reset(ctx.sessionKey);
      return result('Session reset: the next message starts a new conversation.');
    },
  },
  stop: {
    usage: '/stop',
    help: 'stop the running turn of this session',
    changesConfig: () => false,
    run: async (_a, ctx) => {
      const aborted = ctx.abort(ctx.sessionKey);
      return result(aborted ? 'Stopped the running turn.' : 'Nothing is running in this session.', { aborted });
    },
  },
};

export function isSlashCommand(message: string): boolean {
  return /^\/[A-Za-z]/.test(message.trim());
}

export async function runSlashCommand(line: string, ctx: CommandContext): Promise<CommandResult> {
  const [word = '', ...args] = line.trim().slice(1).split(/\s+/);
  const name = word.toLowerCase();
  const spec = COMMANDS[name];
  if (!spec) {
    return result(`Unknown command "/${word}". Try /help for the list of commands; to send text starting with "/" to the assistant, start it with a space.`, {
      error: 'unknown_command',
    });
  }
  if (!ctx.allowConfigChanges && spec.changesConfig(args)) {
    return result(
      `${spec.usage.split(' ')[0]} ${args.join(' ')} changes the assistant's configuration and can only be run from the terminal or the HTTP API.`.replace(
        /\s+/g,
        ' ',
      ),
      {
        error: 'not_allowed_here',
      },
    );
  }
  try {
    return await spec.run(args, ctx);
  } catch (err) {
    return result(`/${name} failed: ${errorMessage(err)}`, { error: 'command_failed' });
  }
}

// --- internal ---

async function runCron([sub, id]: string[], ctx: CommandContext): Promise<CommandResult> {
  const tasks = ctx.config.current().config.tasks;
  if (!sub || sub === 'list') {
    if (tasks.length === 0) return result('No scheduled tasks (add them under `tasks:` in service.yaml).', { tasks: [] });
    const rows = tasks.map((t) => {
      const next = t.enabled ? ctx.tasks?.nextRun(t.id) : undefined;
      return `  ${t.id}  ${t.enabled ? 'enabled ' : 'disabled'}  ${t.schedule}  ${t.name}${next ? `  (next ${next.toISOString()})` : ''}`;
    });
    return result(`Tasks:\n${rows.join('\n')}`, { tasks: tasks.map((t) => ({ id: t.id, name: t.name, schedule: t.schedule, enabled: t.enabled })) });
  }
  if (!['run', 'enable', 'disable', 'del', 'history'].includes(sub))
    return result(`Unknown /cron subcommand "${sub}". Use list, run, enable, disable, del or history.`, { error: 'unknown_command' });
  if (!id) return result(`Usage: /cron ${sub} <id>`, { error: 'usage' });
  if (!tasks.some((t) => t.id === id))
    return result(`No task with id "${id}". Known: ${tasks.map((t) => t.id).join(', ') || '(none)'}`, { error: 'task_not_found' });
  if (sub === 'enable' || sub === 'disable') {
    ctx.config.edit(editTask(id, { enabled: sub === 'enable' }));
    return result(`Task ${id} ${sub}d.`, { id, enabled: sub === 'enable' });
  }
  if (sub === 'del') {
    ctx.config.edit(editTask(id, 'delete'));
    return result(`Task ${id} deleted from service.yaml.`, { id });
  }
  if (!ctx.tasks) return result('The scheduler is not available in this process.', { error: 'unavailable' });
  if (sub === 'run') {
    const r = await ctx.tasks.run(id);
    return result(`Task ${id} ${r.status}: ${r.text}`, { id, status: r.status });
  }
  const runs = ctx.tasks.history(id, 20);
  const lines = runs.map(
    (r) => `  ${String(r.startedAt)}  ${String(r.status).padEnd(9)} ${String(r.durationMs ?? '')}ms  ${String(r.preview ?? r.error ?? '')}`,
  );
  return result(runs.length ? `Last runs of ${id}:\n${lines.join('\n')}` : `Task ${id} has not run yet.`, { id, runs });
}
