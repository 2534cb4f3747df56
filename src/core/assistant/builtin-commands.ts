import { mergePatch } from '../config/write-back.js';
import type { ConfigSource } from '../config/source.js';
import { describeEngineIds, engineDefinitions, resolveEngineId } from '../engines/registry.js';
import { scanSkills } from '../skills/skills.js';
import { type CommandTable, commandResult, type SlashCommand } from '../commands/command-table.js';

/** What the built-in commands act on: the assistant's own operations and its configuration. */
export interface BuiltinCommandDeps {
  table: CommandTable;
  config: ConfigSource;
  skillsDir: string;
  env: NodeJS.ProcessEnv;
  listModels(): Promise<{ models: string[]; source: string }>;
  reset(key: string): Promise<void>;
  abort(key: string): boolean;
  statusText(key: string): Promise<string>;
}

/** /help, /status, /engine, /model, /skill, /reset, /stop. */
export function createBuiltinCommands(deps: BuiltinCommandDeps): SlashCommand[] {
  const never = () => false;
  return [
    {
      name: 'help',
      usage: '/help',
      help: 'this list',
      changesConfig: never,
      run: async () => commandResult(['Commands:', ...deps.table.list().map((c) => `  ${c.usage.padEnd(34)} ${c.help}`)].join('\n')),
    },
    {
      name: 'status',
      usage: '/status',
      help: 'assistant, engine, model and this session',
      changesConfig: never,
      run: async (_args, call) => commandResult(await deps.statusText(call.sessionKey)),
    },
    {
      name: 'engine',
      usage: '/engine [name]',
      help: 'show or switch the engine (saved in service.yaml)',
      changesConfig: (args) => args.length > 0,
      run: async ([name]) => {
        const current = deps.config.current().config.engine;
        const title = (id: string) => engineDefinitions[id]?.title ?? id;
        if (!name) return commandResult(`Engine: ${current} (${title(current)})\nAvailable: ${describeEngineIds()}`, { engine: current });
        // A program's name (`claude`) is accepted; service.yaml gets the id.
        const id = resolveEngineId(name);
        if (!id) return commandResult(`Unknown engine "${name}". Available: ${describeEngineIds()}`, { error: 'unknown_engine' });
        deps.config.edit(mergePatch({ engine: id }, deps.env));
        return commandResult(`Engine switched to ${id} (${title(id)}); the next turn starts a new ${id} session.`, { engine: id });
      },
    },
    {
      name: 'model',
      usage: '/model [list|name]',
      help: 'show, list or switch the model (saved in service.yaml)',
      changesConfig: (args) => args.length > 0 && args[0] !== 'list',
      run: async ([arg]) => {
        const { engine, model } = deps.config.current().config;
        if (!arg) return commandResult(`Model: ${model ?? '(engine default)'} on ${engine}`, { engine, model: model ?? '' });
        if (arg === 'list') {
          const listing = await deps.listModels();
          const text = `Models for ${engine}${listing.source === 'documented' ? ' (documented list)' : ''}:\n${listing.models.map((m) => `  ${m}`).join('\n')}`;
          return { type: 'command', engine, models: listing.models, text };
        }
        deps.config.edit(mergePatch({ model: arg }, deps.env));
        return commandResult(`Model switched to ${arg}.`, { engine, model: arg });
      },
    },
    {
      name: 'skill',
      usage: '/skill',
      help: 'installed skills',
      changesConfig: never,
      run: async () => {
        const scan = scanSkills(deps.skillsDir);
        const lines = scan.skills.map((s) => `  ${s.name}: ${s.description}`);
        const problems = scan.problems.map((p) => `  skills/${p.folder}: ${p.problem}`);
        return commandResult([`Skills (${scan.skills.length}):`, ...lines, ...(problems.length ? ['Invalid skill folders:', ...problems] : [])].join('\n'), {
          skills: scan.skills.map(({ name, description }) => ({ name, description })),
        });
      },
    },
    {
      name: 'reset',
      usage: '/reset',
      help: 'forget this session (engine session and history)',
      changesConfig: never,
      run: async (_args, call) => {
        await deps.reset(call.sessionKey);
        return commandResult('Session reset: the next message starts a new conversation.');
      },
    },
    {
      name: 'stop',
      usage: '/stop',
      help: 'stop the running turn of this session',
      changesConfig: never,
      // A chat must reach the running turn, not wait behind it.
      atOnce: true,
      run: async (_args, call) => {
        const aborted = deps.abort(call.sessionKey);
        return commandResult(aborted ? 'Stopped the running turn.' : 'Nothing is running in this session.', { aborted });
      },
    },
  ];
}
