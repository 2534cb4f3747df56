import { errorMessage } from '../errors.js';

/**
 * Slash commands (a message starting with `/`) as one table that modules contribute to: the
 * assistant adds its built-ins, the scheduler adds `/cron`. Each command is answered as one JSON
 * object `{type: 'command', text, ...}`; `/model list` is exactly `{type, engine, models, text}`.
 */
export type CommandResult = { type: 'command'; text: string } & Record<string, unknown>;

/** What one invocation knows about its caller. */
export interface CommandCall {
  /** The session the command acts on (a chat's current named session). */
  sessionKey: string;
  /** The chat it came from (channels, the terminal): named sessions (/new, /switch…) belong to it. Absent over HTTP. */
  chatKey?: string;
  /** Who runs it, where known: `<channel>:<userId>` from a chat (kept with what it changes, e.g. an approval). */
  caller?: string;
}

export interface SlashCommand {
  /** The word after `/`, lower case. */
  readonly name: string;
  readonly usage: string;
  readonly help: string;
  /** Whether this invocation would change service.yaml or run a task (refused where that is not allowed). */
  changesConfig(args: string[]): boolean;
  run(args: string[], call: CommandCall): Promise<CommandResult>;
}

export interface CommandTable {
  /** Add a command; a second command of the same name is a programming error. */
  add(command: SlashCommand): void;
  /** The commands in the order they were added. */
  list(): SlashCommand[];
  /** Run one command line; unknown commands, refusals and failures are answered, never thrown. */
  run(line: string, opts: { sessionKey: string; chatKey?: string; allowConfigChanges: boolean; caller?: string }): Promise<CommandResult>;
}

export const commandResult = (text: string, extra: Record<string, unknown> = {}): CommandResult => ({ type: 'command', text, ...extra });

/**
 * The one rule, on every path (HTTP, terminal, channels): a message whose first character is `/`
 * is a slash command (the spec: "when `message` starts with `/`"); an unknown one is answered as
 * such, never sent to the engine. Anything else, including text that starts with a space before
 * the `/`, goes to the assistant as typed.
 */
export function isSlashCommand(message: string): boolean {
  return message.startsWith('/');
}

export function createCommandTable(): CommandTable {
  const commands = new Map<string, SlashCommand>();
  return {
    add(command) {
      if (commands.has(command.name)) throw new Error(`slash command /${command.name} is added twice`);
      commands.set(command.name, command);
    },
    list: () => [...commands.values()],
    async run(line, opts) {
      const [word = '', ...args] = line.trim().slice(1).split(/\s+/);
      const name = word.toLowerCase();
      const command = commands.get(name);
      if (!command) {
        return commandResult(
          `Unknown command "/${word}". Try /help for the list of commands; to send text starting with "/" to the assistant, start it with a space.`,
          { error: 'unknown_command' },
        );
      }
      if (!opts.allowConfigChanges && command.changesConfig(args)) {
        return commandResult(
          `${command.usage.split(' ')[0]} ${args.join(' ')} changes the assistant's configuration and can only be run from the terminal or the HTTP API, or in a chat by an admin (access.admins in service.yaml).`.replace(
            /\s+/g,
            ' ',
          ),
          { error: 'not_allowed_here' },
        );
      }
      try {
        return await command.run(args, {
          sessionKey: opts.sessionKey,
          ...(opts.chatKey !== undefined ? { chatKey: opts.chatKey } : {}),
          ...(opts.caller ? { caller: opts.caller } : {}),
        });
      } catch (err) {
        return commandResult(`/${name} failed: ${errorMessage(err)}`, { error: 'command_failed' });
      }
    },
  };
}
