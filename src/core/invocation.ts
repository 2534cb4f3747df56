import fs from 'node:fs';
import path from 'node:path';
import { findOnPath } from './util/find-on-path.js';
import { packageRoot } from './paths.js';

/**
 * How to type this CLI again, for the hints it prints ("Next: service doctor"). On Debian and
 * Ubuntu `/usr/sbin/service` (the init-script tool) has our name, and when npm's bin directory
 * comes after /usr/sbin on PATH a bare `service` runs that tool instead. So the package installs
 * the CLI under a second name no system tool has, `agent-service`, and the hints repeat a form
 * that reaches this CLI rather than assuming the bare name.
 */
export const CLI_NAME = 'service';
/** The same CLI under a name that cannot clash with a system tool (package.json `bin`). */
export const SPARE_CLI_NAME = 'agent-service';

export interface InvocationFacts {
  /** process.argv[1]: the script as it was started (a PATH symlink, bin/service.js, …). */
  script: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Real path of this package's bin/service.js. */
  ownBin: string;
  realpath: (file: string) => string;
  /** What a bare `name` runs with the given PATH, if anything: the file found and its real path. */
  resolveCommand: (name: string, envPath: string) => { file: string; real: string } | undefined;
}

/**
 * The command prefix to print:
 * - not started as this CLI (a program embedding the library) → `service`, the documented name;
 * - started by `npx <name>` / `npm exec` → `npx <name>` (works whatever PATH says);
 * - a bare name on the user's PATH is this CLI → that name: the one typed, else `service`, else
 *   `agent-service` (so with Debian's `service` first on PATH the hints say `agent-service`);
 * - otherwise the script's absolute path (`/usr/bin/service`, `/home/me/service/bin/service.js`):
 *   it runs this CLI from any directory (bin/service.js is executable).
 */
export function resolveCliPrefix(facts: InvocationFacts): string {
  const script = facts.script === undefined ? undefined : path.resolve(facts.script);
  if (script === undefined || facts.realpath(script) !== facts.ownBin) return CLI_NAME;
  const typed = [CLI_NAME, SPARE_CLI_NAME].find((name) => path.basename(script) === name);
  if (facts.env.npm_command === 'exec') return `npx ${typed ?? CLI_NAME}`;
  const userPath = removeNpmBinDirs(facts.env);
  const names = [...new Set([typed ?? CLI_NAME, CLI_NAME, SPARE_CLI_NAME])];
  return names.find((name) => facts.resolveCommand(name, userPath)?.real === facts.ownBin) ?? formatShellWord(script);
}

/** `formatCliCommand('doctor')` → the line a user can type to run `service doctor` from here. */
export function formatCliCommand(args: string): string {
  return `${formatCliPrefix()} ${args}`;
}

/** The command alone, as `--help` names it in its "Usage:" lines. */
export function formatCliPrefix(): string {
  return resolveCliPrefix(currentFacts());
}

/** What `service` means in the user's shell: this CLI, another program, or nothing; with the fix when it is not this CLI. */
export interface CommandNameReport {
  ok: boolean;
  detail: string;
  fix?: string;
}

/**
 * Whether a bare `service` in the user's shell (PATH without the node_modules/.bin entries npm
 * scripts add) runs this CLI. `service doctor` and `npm start` print it: a new user on Debian
 * otherwise meets `status: unrecognized service` from the system's tool in their first minute.
 */
export function checkCommandName(facts: Omit<InvocationFacts, 'script'> & { packageRoot: string }): CommandNameReport {
  const userPath = removeNpmBinDirs(facts.env);
  const bare = facts.resolveCommand(CLI_NAME, userPath);
  const spare = facts.resolveCommand(SPARE_CLI_NAME, userPath);
  const ours = (found: { real: string } | undefined) => found?.real === facts.ownBin;
  if (ours(bare)) return { ok: true, detail: `\`${CLI_NAME}\` on PATH is this CLI (${bare?.file})` };
  const link = `run \`npm link\` in ${formatShellWord(facts.packageRoot)} (it puts \`${CLI_NAME}\` and \`${SPARE_CLI_NAME}\` in $(npm prefix -g)/bin)`;
  if (!bare) {
    if (ours(spare)) return { ok: true, detail: `\`${SPARE_CLI_NAME}\` on PATH is this CLI (${spare?.file}); nothing else is called \`${CLI_NAME}\`` };
    return { ok: false, detail: `this CLI is not on PATH as \`${CLI_NAME}\` or \`${SPARE_CLI_NAME}\``, fix: link };
  }
  const clash = `\`${CLI_NAME}\` on PATH is ${bare.file}, another program (on Debian and Ubuntu, the init-script tool)`;
  if (ours(spare) && spare) {
    const dir = path.dirname(spare.file);
    const ownLinkThere = facts.resolveCommand(CLI_NAME, dir);
    const reorder = ours(ownLinkThere) ? `, or put ${dir} first in PATH: export PATH="${dir}:$PATH"` : '';
    return {
      ok: false,
      detail: `${clash}; \`${SPARE_CLI_NAME}\` (${spare.file}) is this CLI`,
      fix: `type \`${SPARE_CLI_NAME}\` wherever the docs say \`${CLI_NAME}\`${reorder}`,
    };
  }
  return { ok: false, detail: `${clash}, and this CLI is not on PATH`, fix: `${link}, then type \`${SPARE_CLI_NAME}\`` };
}

/** checkCommandName for this process. */
export function checkOwnCommandName(): CommandNameReport {
  const { env, ownBin, realpath, resolveCommand } = currentFacts();
  return checkCommandName({ env, ownBin, realpath, resolveCommand, packageRoot: packageRoot() });
}

/** A word the shell reads back unchanged (quoted only when it has to be). */
export function formatShellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * PATH as the user's shell has it: npm run-script and npx put node_modules/.bin directories (and
 * node-gyp's) in front, which the shell the hint is pasted into will not have.
 */
export function removeNpmBinDirs(env: NodeJS.ProcessEnv): string {
  const entries = (env.PATH ?? '').split(path.delimiter);
  if (env.npm_lifecycle_event === undefined) return entries.join(path.delimiter);
  return entries.filter((dir) => !/[\\/]node_modules[\\/]\.bin$|node-gyp-bin$/.test(dir)).join(path.delimiter);
}

// --- internal ---

function currentFacts(): InvocationFacts {
  return {
    script: process.argv[1],
    env: process.env,
    ownBin: realpathOr(path.join(packageRoot(), 'bin', 'service.js')),
    realpath: realpathOr,
    resolveCommand: (name, envPath) => {
      const file = findOnPath([name], envPath);
      return file === undefined ? undefined : { file, real: realpathOr(file) };
    },
  };
}

function realpathOr(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return file;
  }
}
