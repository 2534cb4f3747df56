import fs from 'node:fs';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import type { CommandIO } from './io.js';
import { addOperateCommands, addStoreBackupCommands } from './program-operate.js';
import { AppError } from '../core/errors.js';
import { formatCliPrefix } from '../core/invocation.js';
import { packageRoot, templatesDir } from '../core/paths.js';

/**
 * The command line as a commander program: declares commands and options, lazy-imports each
 * command (so `--help` loads neither the HTTP server nor any SDK), and is the one place that turns
 * errors into text and exit codes. `service` (src/cli.ts) runs it on its arguments with the
 * process's output; tests run it in-process with an `io` that records what it prints.
 */
export interface CliProgram {
  /** Parse `args` (what follows `service`), run the command, and resolve with its exit code. */
  run(args: readonly string[]): Promise<number>;
}

/** 128 + SIGINT: how a shell reports a command ended by Ctrl-C. */
const EXIT_INTERRUPTED = 130;

export function createProgram(io: CommandIO): CliProgram {
  const version = (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  /** Exit code of the command that ran; commands return it instead of exiting. */
  let exitCode = 0;
  // Named as the hints name it, so the "Usage:" lines of --help show what runs this CLI from the user's shell.
  const program = new Command(formatCliPrefix())
    .description('Put a coding-agent CLI behind a chat API, a dashboard, IM channels and scheduled tasks.')
    .version(version, '-v, --version')
    .option('-d, --dir <path>', 'assistant directory (default: the current directory)')
    .showHelpAfterError()
    // Help, usage errors and the version go to `io` too; set before the subcommands, which inherit it.
    .configureOutput({ writeOut: (text) => io.write(text), writeErr: (text) => io.err(text) })
    .exitOverride();
  const registration: Registration = {
    io,
    act:
      (fn) =>
      async (...args) => {
        exitCode = await fn(...args);
      },
    // Every subcommand takes -d/--dir too, so it can go before or after the subcommand name.
    command: (name, description) =>
      program.command(name).description(description).option('-d, --dir <path>', 'assistant directory (default: the current directory)'),
    dirOf(cmd) {
      const own = cmd.opts<{ dir?: string }>().dir;
      const parentDir = (cmd.parent?.parent ? cmd.parent.opts<{ dir?: string }>().dir : undefined) ?? program.opts<{ dir?: string }>().dir;
      return path.resolve(own ?? parentDir ?? process.cwd());
    },
  };
  for (const add of [addSetupCommands, addCronCommands, addAccessCommands, addSkillCommands, addInfoCommands, addOperateCommands]) add(registration);
  return {
    async run(args) {
      exitCode = 0;
      try {
        await program.parseAsync([...args], { from: 'user' });
      } catch (err) {
        exitCode = reportError(err, io);
      }
      return exitCode;
    },
  };
}

// --- internal ---

/** What the command declarations share (here and in program-operate.ts). */
export interface Registration {
  io: CommandIO;
  /** The action of a command: runs `fn` and keeps the exit code it returns. */
  act<A extends unknown[]>(fn: (...args: A) => Promise<number>): (...args: A) => Promise<void>;
  command(name: string, description: string): Command;
  /** The assistant directory of the command: its -d, its parent's, the program's, else the working directory. */
  dirOf(cmd: Command): string;
}

/** Init, chat and gateway. */
function addSetupCommands(c: Registration): void {
  c.command('init', 'create an assistant directory from a scenario template')
    .argument('[dir]', 'directory to create the assistant in')
    // Validated by init against the template and engine registries (which list what is available).
    .option('-t, --template <name>', 'scenario template (the templates are listed below)')
    .option('-e, --engine <engine>', "engine id, or the program's name (claude, codex, …); default: the first installed one; an unknown one lists them all")
    .option('-n, --name <name>', 'assistant name (default: the directory name)')
    .option('-y, --yes', 'never prompt; use defaults for what is not given')
    .option('-f, --force', 'overwrite an existing service.yaml')
    .addHelpText('after', () => `\nTemplates: ${fs.readdirSync(path.join(templatesDir(), 'assistant')).sort().join(', ')}`)
    .action(
      c.act(async (dir: string | undefined, opts: { template?: string; engine?: string; name?: string; yes?: boolean; force?: boolean }, cmd: Command) => {
        const { runInit } = await import('./init.js');
        return runInit({ ...opts, dir: dir ? path.resolve(dir) : c.dirOf(cmd) }, c.io);
      }),
    );

  c.command('chat', 'talk to the assistant in the terminal')
    .option('-s, --session <key>', 'session key', 'default')
    .option('-m, --message <text>', 'send one message, print the reply and exit')
    .option('-f, --file <path...>', 'with -m: files to send with the message (in the REPL: /attach <path>)')
    .option('--json', 'print the stream events as NDJSON')
    .action(
      c.act(async (opts: { session: string; message?: string; file?: string[]; json?: boolean }, cmd: Command) => {
        const { runChat } = await import('./chat.js');
        const { file, ...rest } = opts;
        return runChat({ ...rest, ...(file ? { files: file } : {}), dir: c.dirOf(cmd) }, c.io);
      }),
    );

  c.command('gateway', 'serve the HTTP/SSE API and dashboard, connect the IM channels, run scheduled tasks')
    .option('--host <host>', 'bind address (default: gateway.host or 127.0.0.1)')
    .option('-p, --port <port>', 'port (default: SERVICE_PORT, gateway.port or 3000)')
    .option('--token <token>', 'bearer token (visible to other users in ps: prefer SERVICE_TOKEN or --token-file)')
    .option('--token-file <path>', "read the bearer token from this file's first line (default: SERVICE_TOKEN, gateway.token, or a generated one)")
    .option('--https', 'serve HTTPS with a self-signed certificate made on first use and kept in .service/tls/')
    .option('--cert <file>', 'serve HTTPS with this certificate (PEM; with --key)')
    .option('--key <file>', 'the private key of --cert (PEM)')
    .option('--public', 'listen on every network interface (0.0.0.0) and print the network addresses')
    .option('--qr', 'print a QR code of the dashboard URL (the network or tunnel URL when there is one)')
    .option('--qr-token', "put the token in the QR code's link (anyone who sees the code can use the API)")
    .option('--tunnel', 'open a public URL through a Cloudflare quick tunnel (downloads cloudflared on first use)')
    .option('--log-format <format>', 'text, or json: one JSON object per line (default: SERVICE_LOG_FORMAT, gateway.logFormat, text)')
    .action(
      c.act(async (opts: import('./gateway.js').GatewayCommandOptions, cmd: Command) => {
        const { runGateway } = await import('./gateway.js');
        return runGateway({ ...opts, dir: c.dirOf(cmd) }, c.io);
      }),
    );
}

/** Cron and its subcommands. */
function addCronCommands(c: Registration): void {
  const cron = c.command('cron', 'list, run and manage scheduled tasks');
  const cronSub = (name: string, description: string) => cron.command(name).description(description).option('-d, --dir <path>', 'assistant directory');
  cronSub('list', 'list tasks with their schedule and next run')
    .option('--json', 'print JSON')
    .action(
      c.act(async (opts: { json?: boolean }, cmd: Command) => {
        const { runCron } = await import('./cron.js');
        return runCron({ action: 'list', dir: c.dirOf(cmd), json: opts.json }, c.io);
      }),
    );
  // --json where the action has something to print: `run` its run record and reply, `history` the runs.
  for (const [name, description, json] of [
    [
      'run',
      'run a task now in this process, print the reply and deliver it to its target',
      'print the run as JSON: status, times, cost, delivered, error and the reply',
    ],
    ['enable', 'enable a task in service.yaml', undefined],
    ['disable', 'disable a task in service.yaml', undefined],
    ['del', 'delete a task from service.yaml', undefined],
    ['history', 'show the last runs of a task', 'print the last 100 runs as JSON (ISO times in UTC, every field)'],
  ] as const) {
    const sub = cronSub(name, description).argument('<id>', 'task id');
    if (json) sub.option('--json', json);
    sub.action(
      c.act(async (id: string, opts: { json?: boolean }, cmd: Command) => {
        const { runCron } = await import('./cron.js');
        return runCron({ action: name, id, dir: c.dirOf(cmd), json: opts.json }, c.io);
      }),
    );
  }
}

/** Access and store. */
function addAccessCommands(c: Registration): void {
  const access = c.command('access', 'who may use the assistant from the channels: pairing codes, approvals');
  const accessSub = (name: string, description: string) => access.command(name).description(description).option('-d, --dir <path>', 'assistant directory');
  accessSub('list', 'allowed senders and chats (service.yaml and approved), admins, pending pairing codes')
    .option('--json', 'print JSON')
    .action(
      c.act(async (opts: { json?: boolean }, cmd: Command) => {
        const { runAccess } = await import('./access.js');
        return runAccess({ action: 'list', dir: c.dirOf(cmd), json: opts.json }, c.io);
      }),
    );
  for (const [name, argument, description] of [
    ['approve', '<code>', 'approve a pairing code: that sender (or group chat) may use the assistant from its next message'],
    ['deny', '<code>', 'drop a pending pairing code'],
    ['revoke', '<channel:id>', 'take an approval back (a sender or a group chat)'],
  ] as const) {
    accessSub(name, description)
      .argument(argument, name === 'revoke' ? 'the approved sender or chat as <channel>:<id>' : 'the pairing code the bot sent')
      .action(
        c.act(async (arg: string, _opts: unknown, cmd: Command) => {
          const { runAccess } = await import('./access.js');
          return runAccess({ action: name, arg, dir: c.dirOf(cmd) }, c.io);
        }),
      );
  }

  const store = c.command('store', 'where the assistant keeps its state (SQLite by default, PostgreSQL with store.url)');
  store
    .command('migrate')
    .description("copy this assistant's SQLite state (.service/state.db) into an empty PostgreSQL schema")
    .option('-d, --dir <path>', 'assistant directory')
    .requiredOption('--to <url>', 'postgres://user:password@host:5432/database')
    .option('--schema <name>', 'schema on the server (default: store.schema, else assistant_<name>)')
    .option('--role [name]', 'then give the assistant a database role of its own, owning only its schema (default name: the schema)')
    .option('--print-sql', 'print the SQL that makes that role, for a database administrator; change nothing')
    .option('--json', 'print JSON')
    .action(
      c.act(async (opts: { to: string; schema?: string; role?: string | boolean; printSql?: boolean; json?: boolean }, cmd: Command) => {
        const { runStoreMigrate } = await import('./store.js');
        return runStoreMigrate({ ...opts, dir: c.dirOf(cmd) }, c.io);
      }),
    );
  addStoreBackupCommands(c, store);
}

/** Skill list, add and remove. */
function addSkillCommands(c: Registration): void {
  const skill = c.command('skill', 'list, add and remove skills');
  skill
    .command('list')
    .description('list installed skills')
    .option('-d, --dir <path>', 'assistant directory')
    .option('--json', 'print JSON')
    .action(
      c.act(async (opts: { json?: boolean }, cmd: Command) => {
        const { runSkillList } = await import('./skill.js');
        return runSkillList({ dir: c.dirOf(cmd), json: opts.json }, c.io);
      }),
    );
  skill
    .command('add')
    .description('copy a local skill folder (holding SKILL.md) into skills/')
    .argument('<path>', 'skill folder')
    .option('-d, --dir <path>', 'assistant directory')
    .option('-f, --force', 'replace an installed skill of the same name')
    .action(
      c.act(async (source: string, opts: { force?: boolean }, cmd: Command) => {
        const { runSkillAdd } = await import('./skill.js');
        return runSkillAdd({ dir: c.dirOf(cmd), source, force: opts.force }, c.io);
      }),
    );
  skill
    .command('remove')
    .description('remove an installed skill')
    .argument('<name>', 'skill name')
    .option('-d, --dir <path>', 'assistant directory')
    .action(
      c.act(async (name: string, _opts: unknown, cmd: Command) => {
        const { runSkillRemove } = await import('./skill.js');
        return runSkillRemove({ dir: c.dirOf(cmd), name }, c.io);
      }),
    );
}

/** Status, doctor and fleet. */
function addInfoCommands(c: Registration): void {
  c.command('status', 'show the assistant: name, engine, model, skills, config problems')
    .option('--json', 'print JSON')
    .action(
      c.act(async (opts: { json?: boolean }, cmd: Command) => {
        const { runStatus } = await import('./status.js');
        return runStatus({ dir: c.dirOf(cmd), json: opts.json }, c.io);
      }),
    );

  c.command('doctor', 'check config, engine, credentials, channel SDKs and the gateway port')
    .option('--json', 'print JSON')
    .action(
      c.act(async (opts: { json?: boolean }, cmd: Command) => {
        const { runDoctor } = await import('./doctor.js');
        return runDoctor({ dir: c.dirOf(cmd), json: opts.json }, c.io);
      }),
    );

  const fleet = c.command('fleet', 'running assistants: on this machine, and on every host of a PostgreSQL store');
  fleet
    .command('ls')
    .description('list running gateways, the host of each and whether each answers /health')
    .option('-d, --dir <path>', 'assistant directory: its store.url names the database whose fleet is listed too')
    .option('--store <url>', 'list the fleet of this PostgreSQL database too (default: SERVICE_STORE_URL, else store.url)')
    .option('--json', 'print JSON')
    .action(
      c.act(async (opts: { json?: boolean; store?: string }, cmd: Command) => {
        const { runFleetList } = await import('./fleet.js');
        return runFleetList({ json: opts.json, dir: c.dirOf(cmd), ...(opts.store !== undefined ? { store: opts.store } : {}) }, c.io);
      }),
    );
}

function reportError(err: unknown, io: CommandIO): number {
  if (err instanceof CommanderError) {
    // commander already printed usage or the version; keep its exit code (0 for --help/--version).
    return err.exitCode;
  }
  // Ctrl-C at a prompt (@inquirer/prompts rejects with ExitPromptError): the user's choice, not a
  // failure. Nothing was written yet (init asks everything first); 130 is what a shell reports for SIGINT.
  if (err instanceof Error && err.name === 'ExitPromptError') return EXIT_INTERRUPTED;
  if (err instanceof AppError) {
    io.err(`error: ${err.message}`);
    if (err.hint) io.err(`hint: ${err.hint}`);
    return err.exitCode;
  }
  io.err(err instanceof Error ? (err.stack ?? err.message) : String(err));
  io.err('This is a bug in service; please report it with the output above.');
  return 70;
}
