import fs from 'node:fs';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { AppError } from './core/errors.js';
import { packageRoot, templatesDir } from './core/paths.js';
import { processIO } from './commands/io.js';

/**
 * The command-line entry: declares commands and options, lazy-imports each command (so `--help`
 * loads neither the HTTP server nor any SDK), and is the one place that turns errors into text and exit codes.
 */
const version = (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;

loadDotEnv();

/** 128 + SIGINT: how a shell reports a command ended by Ctrl-C. */
const EXIT_INTERRUPTED = 130;

/** Exit code of the command that ran; commands return it instead of exiting. */
let exitCode = 0;
const act =
  <A extends unknown[]>(fn: (...args: A) => Promise<number>) =>
  async (...args: A): Promise<void> => {
    exitCode = await fn(...args);
  };

const program = new Command('service')
  .description('Put a coding-agent CLI behind a chat API, a dashboard, IM channels and scheduled tasks.')
  .version(version, '-v, --version')
  .option('-d, --dir <path>', 'assistant directory (default: the current directory)')
  .showHelpAfterError()
  .exitOverride();

/** Every subcommand takes -d/--dir too, so it can go before or after the subcommand name. */
function command(name: string, description: string): Command {
  return program.command(name).description(description).option('-d, --dir <path>', 'assistant directory (default: the current directory)');
}

function dirOf(cmd: Command): string {
  const own = cmd.opts<{ dir?: string }>().dir;
  const parentDir = (cmd.parent?.parent ? cmd.parent.opts<{ dir?: string }>().dir : undefined) ?? program.opts<{ dir?: string }>().dir;
  return path.resolve(own ?? parentDir ?? process.cwd());
}

command('init', 'create an assistant directory from a scenario template')
  .argument('[dir]', 'directory to create the assistant in')
  // Validated by init against the template and engine registries (which list what is available).
  .option('-t, --template <name>', 'scenario template (the templates are listed below)')
  .option('-e, --engine <engine>', "engine id, or the program's name (claude, codex, …); default: the first installed one; an unknown one lists them all")
  .option('-n, --name <name>', 'assistant name (default: the directory name)')
  .option('-y, --yes', 'never prompt; use defaults for what is not given')
  .option('-f, --force', 'overwrite an existing service.yaml')
  .addHelpText('after', () => `\nTemplates: ${fs.readdirSync(path.join(templatesDir(), 'assistant')).sort().join(', ')}`)
  .action(
    act(async (dir: string | undefined, opts: { template?: string; engine?: string; name?: string; yes?: boolean; force?: boolean }, cmd: Command) => {
      const { runInit } = await import('./commands/init.js');
      return runInit({ ...opts, dir: dir ? path.resolve(dir) : dirOf(cmd) }, processIO);
    }),
  );

command('chat', 'talk to the assistant in the terminal')
  .option('-s, --session <key>', 'session key', 'default')
  .option('-m, --message <text>', 'send one message, print the reply and exit')
  .option('-f, --file <path...>', 'with -m: files to send with the message (in the REPL: /attach <path>)')
  .option('--json', 'print the stream events as NDJSON')
  .action(
    act(async (opts: { session: string; message?: string; file?: string[]; json?: boolean }, cmd: Command) => {
      const { runChat } = await import('./commands/chat.js');
      const { file, ...rest } = opts;
      return runChat({ ...rest, ...(file ? { files: file } : {}), dir: dirOf(cmd) }, processIO);
    }),
  );

command('gateway', 'serve the HTTP/SSE API and dashboard, connect the IM channels, run scheduled tasks')
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
    act(async (opts: import('./commands/gateway.js').GatewayCommandOptions, cmd: Command) => {
      const { runGateway } = await import('./commands/gateway.js');
      return runGateway({ ...opts, dir: dirOf(cmd) }, processIO);
    }),
  );

const cron = command('cron', 'list, run and manage scheduled tasks');
const cronSub = (name: string, description: string) => cron.command(name).description(description).option('-d, --dir <path>', 'assistant directory');
cronSub('list', 'list tasks with their schedule and next run')
  .option('--json', 'print JSON')
  .action(
    act(async (opts: { json?: boolean }, cmd: Command) => {
      const { runCron } = await import('./commands/cron.js');
      return runCron({ action: 'list', dir: dirOf(cmd), json: opts.json }, processIO);
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
    act(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      const { runCron } = await import('./commands/cron.js');
      return runCron({ action: name, id, dir: dirOf(cmd), json: opts.json }, processIO);
    }),
  );
}

const access = command('access', 'who may use the assistant from the channels: pairing codes, approvals');
const accessSub = (name: string, description: string) => access.command(name).description(description).option('-d, --dir <path>', 'assistant directory');
accessSub('list', 'allowed senders and chats (service.yaml and approved), admins, pending pairing codes')
  .option('--json', 'print JSON')
  .action(
    act(async (opts: { json?: boolean }, cmd: Command) => {
      const { runAccess } = await import('./commands/access.js');
      return runAccess({ action: 'list', dir: dirOf(cmd), json: opts.json }, processIO);
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
      act(async (arg: string, _opts: unknown, cmd: Command) => {
        const { runAccess } = await import('./commands/access.js');
        return runAccess({ action: name, arg, dir: dirOf(cmd) }, processIO);
      }),
    );
}

const store = command('store', 'where the assistant keeps its state (SQLite by default, PostgreSQL with store.url)');
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
    act(async (opts: { to: string; schema?: string; role?: string | boolean; printSql?: boolean; json?: boolean }, cmd: Command) => {
      const { runStoreMigrate } = await import('./commands/store.js');
      return runStoreMigrate({ ...opts, dir: dirOf(cmd) }, processIO);
    }),
  );
for (const [name, description] of [
  ['backup', 'copy the SQLite store to FILE, consistent while a gateway runs (PostgreSQL: it says how to use pg_dump)'],
  ['restore', 'put a backup FILE in place of the store of a directory no gateway runs on'],
] as const) {
  store
    .command(name)
    .description(description)
    .argument('<file>', name === 'backup' ? 'the backup file to write' : 'a file written by `store backup`')
    .option('-d, --dir <path>', 'assistant directory')
    .option('-f, --force', name === 'backup' ? 'replace FILE if it exists' : 'replace the state there (it is kept as state.db.before-restore-<time>)')
    .option('--json', 'print JSON')
    .action(
      act(async (file: string, opts: { force?: boolean; json?: boolean }, cmd: Command) => {
        const { runStoreBackup, runStoreRestore } = await import('./commands/store-backup.js');
        return (name === 'backup' ? runStoreBackup : runStoreRestore)({ ...opts, file, dir: dirOf(cmd) }, processIO);
      }),
    );
}

const daemon = command('daemon', 'run the gateway as a service of this machine (systemd user unit, or launchd on macOS)');
for (const [name, description] of [
  ['install', 'write the unit and its environment file (0600, for the token and secrets), enable and start it'],
  ['uninstall', 'stop and disable the service, remove the unit and its environment file'],
  ['status', "the service manager's status of the service (systemctl status)"],
  ['logs', "the service's log (journalctl -u)"],
] as const) {
  const sub = daemon
    .command(name)
    .description(description)
    .option('-d, --dir <path>', 'assistant directory')
    .option('--system', "a system unit, run from boot as the directory's owner (Linux, as root)")
    .option('--name <unit>', "the unit's name (default: service-<assistant name>)");
  if (name === 'install') {
    sub
      .option('--print', 'write the unit to stdout and change nothing')
      .option('--no-start', 'enable it without starting it now')
      .option('--env <name...>', 'more variables of this shell for the environment file (engine credentials)');
  }
  if (name === 'logs') sub.option('-f, --follow', 'keep printing new lines').option('-n, --lines <n>', 'how many lines', '100');
  sub.action(
    act(async (opts: Omit<import('./commands/daemon.js').DaemonOptions, 'action' | 'dir'>, cmd: Command) => {
      const { runDaemon } = await import('./commands/daemon.js');
      return runDaemon({ ...opts, action: name, dir: dirOf(cmd) }, processIO);
    }),
  );
}

const skill = command('skill', 'list, add and remove skills');
skill
  .command('list')
  .description('list installed skills')
  .option('-d, --dir <path>', 'assistant directory')
  .option('--json', 'print JSON')
  .action(
    act(async (opts: { json?: boolean }, cmd: Command) => {
      const { runSkillList } = await import('./commands/skill.js');
      return runSkillList({ dir: dirOf(cmd), json: opts.json }, processIO);
    }),
  );
skill
  .command('add')
  .description('copy a local skill folder (holding SKILL.md) into skills/')
  .argument('<path>', 'skill folder')
  .option('-d, --dir <path>', 'assistant directory')
  .option('-f, --force', 'replace an installed skill of the same name')
  .action(
    act(async (source: string, opts: { force?: boolean }, cmd: Command) => {
      const { runSkillAdd } = await import('./commands/skill.js');
      return runSkillAdd({ dir: dirOf(cmd), source, force: opts.force }, processIO);
    }),
  );
skill
  .command('remove')
  .description('remove an installed skill')
  .argument('<name>', 'skill name')
  .option('-d, --dir <path>', 'assistant directory')
  .action(
    act(async (name: string, _opts: unknown, cmd: Command) => {
      const { runSkillRemove } = await import('./commands/skill.js');
      return runSkillRemove({ dir: dirOf(cmd), name }, processIO);
    }),
  );

command('status', 'show the assistant: name, engine, model, skills, config problems')
  .option('--json', 'print JSON')
  .action(
    act(async (opts: { json?: boolean }, cmd: Command) => {
      const { runStatus } = await import('./commands/status.js');
      return runStatus({ dir: dirOf(cmd), json: opts.json }, processIO);
    }),
  );

command('doctor', 'check config, engine, credentials, channel SDKs and the gateway port')
  .option('--json', 'print JSON')
  .action(
    act(async (opts: { json?: boolean }, cmd: Command) => {
      const { runDoctor } = await import('./commands/doctor.js');
      return runDoctor({ dir: dirOf(cmd), json: opts.json }, processIO);
    }),
  );

const fleet = command('fleet', 'running assistants: on this machine, and on every host of a PostgreSQL store');
fleet
  .command('ls')
  .description('list running gateways, the host of each and whether each answers /health')
  .option('-d, --dir <path>', 'assistant directory: its store.url names the database whose fleet is listed too')
  .option('--store <url>', 'list the fleet of this PostgreSQL database too (default: SERVICE_STORE_URL, else store.url)')
  .option('--json', 'print JSON')
  .action(
    act(async (opts: { json?: boolean; store?: string }, cmd: Command) => {
      const { runFleetList } = await import('./commands/fleet.js');
      return runFleetList({ json: opts.json, dir: dirOf(cmd), ...(opts.store !== undefined ? { store: opts.store } : {}) }, processIO);
    }),
  );

await main();

// --- internal ---

async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (err) {
    exitCode = reportError(err);
  }
  process.exitCode = exitCode;
}

function reportError(err: unknown): number {
  if (err instanceof CommanderError) {
    // commander already printed usage or the version; keep its exit code (0 for --help/--version).
    return err.exitCode;
  }
  // Ctrl-C at a prompt (@inquirer/prompts rejects with ExitPromptError): the user's choice, not a
  // failure. Nothing was written yet (init asks everything first); 130 is what a shell reports for SIGINT.
  if (err instanceof Error && err.name === 'ExitPromptError') return EXIT_INTERRUPTED;
  if (err instanceof AppError) {
    processIO.err(`error: ${err.message}`);
    if (err.hint) processIO.err(`hint: ${err.hint}`);
    return err.exitCode;
  }
  processIO.err(err instanceof Error ? (err.stack ?? err.message) : String(err));
  processIO.err('This is a bug in service; please report it with the output above.');
  return 70;
}

/** A .env file in the working directory supplies ${VAR} placeholders (existing variables win). */
function loadDotEnv(): void {
  const file = path.resolve('.env');
  if (!fs.existsSync(file)) return;
  try {
    process.loadEnvFile(file);
  } catch (err) {
    processIO.err(`warning: could not read ${file}: ${(err as Error).message}`);
  }
}
