import fs from 'node:fs';
import path from 'node:path';
import { findOnPath } from './engines/detect.js';
import { packageRoot } from './paths.js';

/**
 * How to type this CLI again, for the hints it prints ("Next: service doctor"). On Debian and
 * Ubuntu `/usr/sbin/service` (the init-script tool) has our name, and when npm's bin directory
 * comes after /usr/sbin on PATH a bare `service` runs that tool instead; so the hint repeats the
 * form that reached us rather than assuming the bare name.
 */
export interface InvocationFacts {
  /** process.argv[1]: the script as it was started (a PATH symlink, bin/service.js, …). */
  script: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Real path of this package's bin/service.js. */
  ownBin: string;
  realpath: (file: string) => string;
  /** Real path of what a bare `service` runs with the given PATH, if anything. */
  resolveService: (envPath: string) => string | undefined;
}

/**
 * The command prefix to print:
 * - not started as this CLI (a program embedding the library) → `service`, the documented name;
 * - started by `npx service` / `npm exec service` → `npx service` (works whatever PATH says);
 * - a bare `service` on the user's PATH is this CLI → `service`;
 * - otherwise the script's absolute path (`/usr/bin/service`, `/home/me/service/bin/service.js`):
 *   it runs this CLI from any directory (bin/service.js is executable).
 */
export function resolveCliPrefix(facts: InvocationFacts): string {
  const script = facts.script === undefined ? undefined : path.resolve(facts.script);
  if (script === undefined || facts.realpath(script) !== facts.ownBin) return 'service';
  if (facts.env.npm_command === 'exec') return 'npx service';
  if (facts.resolveService(removeNpmBinDirs(facts.env)) === facts.ownBin) return 'service';
  return formatShellWord(script);
}

/** `formatCliCommand('doctor')` → the line a user can type to run `service doctor` from here. */
export function formatCliCommand(args: string): string {
  const prefix = resolveCliPrefix({
    script: process.argv[1],
    env: process.env,
    ownBin: realpathOr(path.join(packageRoot(), 'bin', 'service.js')),
    realpath: realpathOr,
    resolveService: (envPath) => {
      const found = findOnPath(['service'], envPath);
      return found === undefined ? undefined : realpathOr(found);
    },
  });
  return `${prefix} ${args}`;
}

/** A word the shell reads back unchanged (quoted only when it has to be). */
export function formatShellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

// --- internal ---

/**
 * PATH as the user's shell has it: npm run-script and npx put node_modules/.bin directories (and
 * node-gyp's) in front, which the shell the hint is pasted into will not have.
 */
function removeNpmBinDirs(env: NodeJS.ProcessEnv): string {
  const entries = (env.PATH ?? '').split(path.delimiter);
  if (env.npm_lifecycle_event === undefined) return entries.join(path.delimiter);
  return entries.filter((dir) => !/[\\/]node_modules[\\/]\.bin$|node-gyp-bin$/.test(dir)).join(path.delimiter);
}

function realpathOr(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return file;
  }
}
