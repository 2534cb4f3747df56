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
  /** The owner (terminal, HTTP API) or an admin in a chat: the callers who may change the configuration. */
  privileged: boolean;
  /** Where a chat's command came from, for what it leaves behind there (/remind delivers to it). Absent off the channels. */
  chat?: ChatPlace;
  /** The command line as written (its words are `args`; this keeps quotes and line breaks). */
  line?: string;
}

/** A chat on a channel, as a task's `target` names it. */
export interface ChatPlace {
  channel: string;
  chatId: string;
}

export interface SlashCommand {
  /** The word after `/`, lower case. */
  readonly name: string;
  readonly usage: string;
  readonly help: string;
  /** Whether this invocation would change service.yaml or run a task (refused where that is not allowed). */
  changesConfig(args: string[]): boolean;
  run(args: string[], call: CommandCall): Promise<CommandResult>;
  /** Answered at once, also while a turn of the session runs (/stop, /allow, /deny): a chat does not queue it behind that turn. */
  readonly atOnce?: boolean;
}

export interface CommandTable {
  /** Add a command; a second command of the same name is a programming error. */
  add(command: SlashCommand): void;
  /** The commands in the order they were added. */
  list(): SlashCommand[];
  /** Run one command line; unknown commands, refusals and failures are answered, never thrown. */
  run(line: string, opts: { sessionKey: string; chatKey?: string; allowConfigChanges: boolean; caller?: string; chat?: ChatPlace }): Promise<CommandResult>;
  /** Whether a line is a command answered at once (`atOnce`), not queued behind its session's turn. */
  runsAtOnce(line: string): boolean;
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
  const commandOf = (line: string) => {
    const [word = '', ...args] = line.trim().slice(1).split(/\s+/);
    return { word, args, command: commands.get(word.toLowerCase()) };
  };
  return {
    add(command) {
      if (commands.has(command.name)) throw new Error(`slash command /${command.name} is added twice`);
      commands.set(command.name, command);
    },
    list: () => [...commands.values()],
    runsAtOnce: (line) => isSlashCommand(line) && commandOf(line).command?.atOnce === true,
    async run(line, opts) {
      const { word, args, command } = commandOf(line);
      const name = word.toLowerCase();
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
          privileged: opts.allowConfigChanges,
          ...(opts.chatKey !== undefined ? { chatKey: opts.chatKey } : {}),
          ...(opts.caller ? { caller: opts.caller } : {}),
          ...(opts.chat ? { chat: opts.chat } : {}),
          line,
        });
      } catch (err) {
        return commandResult(`/${name} failed: ${errorMessage(err)}`, { error: 'command_failed' });
      }
    },
  };
}
