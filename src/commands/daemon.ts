import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isLingering, type MachineFacts, type ManagerCommand, readUserName, resolveDaemonPlan, type DaemonPlan } from '../core/daemon/plan.js';
import { formatEnvFile, formatLaunchdPlist, formatServiceName, formatSystemdUnit, readEnvFileNames, type ServiceSpec } from '../core/daemon/units.js';
import { AppError, UsageError } from '../core/errors.js';
import { placeholderNames } from '../core/config/env.js';
import { formatCliCommand, formatShellWord, removeNpmBinDirs } from '../core/invocation.js';
import { packageRoot, packageVersion, resolveAssistantPaths } from '../core/paths.js';
import { loadServiceConfig } from '../definitions.js';
import type { CommandIO } from './io.js';

export interface DaemonOptions {
  action: 'install' | 'uninstall' | 'status' | 'logs';
  dir: string;
  /** A system unit (Linux, as root) instead of a user unit. */
  system?: boolean;
  /** install: write the unit to stdout, change nothing. */
  print?: boolean;
  /** install: false with --no-start (enable only). */
  start?: boolean;
  /** The unit's name instead of service-<assistant name>. */
  name?: string;
  /** install: more variables for the environment file, taken from this shell. */
  env?: string[];
  follow?: boolean;
  lines?: string;
}

/** What the command needs from the machine; tests give their own. */
export interface DaemonSystem {
  facts: MachineFacts;
  user: string;
  isRoot: boolean;
  /** Run a service-manager command; its exit code, 127 when the program is not found. */
  run(command: ManagerCommand, opts: { inherit: boolean }): Promise<number>;
}

/**
 * `service daemon install | uninstall | status | logs`: the gateway of an assistant directory as
 * a service of the machine (systemd on Linux, launchd on macOS), started at login or boot and
 * restarted after a crash. Where the files go and which manager commands run: core/daemon/plan.ts;
 * what the files say: core/daemon/units.ts.
 */
export async function runDaemon(opts: DaemonOptions, io: CommandIO, sys: DaemonSystem = processSystem()): Promise<number> {
  const paths = resolveAssistantPaths(opts.dir);
  const loaded = loadServiceConfig(paths.dir, sys.facts.env);
  const rawName = typeof loaded.raw.name === 'string' ? loaded.raw.name : loaded.config.name;
  const name = opts.name ?? formatServiceName(rawName);
  if (!/^[A-Za-z0-9@._-]{1,100}$/.test(name)) throw new UsageError('--name: use letters, digits, dot, dash, underscore and @');
  const plan = resolveDaemonPlan({ name, system: opts.system ?? false, facts: sys.facts });
  if (opts.action === 'status') {
    if (fs.existsSync(plan.unitFile)) return sys.run(plan.status, { inherit: true });
    // 4, as systemctl status answers for a unit it does not know.
    io.err(
      `${plan.name} is not installed (no ${plan.unitFile}); install it with: ${formatCliCommand(`daemon install -d ${formatShellWord(paths.dir)}${opts.system ? ' --system' : ''}`)}`,
    );
    return 4;
  }
  if (opts.action === 'logs') {
    const lines = Number(opts.lines ?? 100);
    if (!Number.isInteger(lines) || lines < 0) throw new UsageError(`--lines: expected a number, got "${opts.lines}"`);
    return sys.run(plan.logs({ follow: opts.follow ?? false, lines }), { inherit: true });
  }
  if (opts.action === 'uninstall') return uninstall(plan, io, sys);

  const spec = describeService({ plan, dir: paths.dir, description: `service gateway: ${rawName} (${paths.dir})`, sys, system: opts.system ?? false });
  const unitText = plan.manager === 'launchd' ? formatLaunchdPlist(spec, packageVersion()) : formatSystemdUnit(spec, packageVersion());
  const vars = collectVariables(fs.readFileSync(paths.configFile, 'utf8'), opts.env ?? [], sys.facts.env);
  if (opts.print) {
    io.out(unitText.trimEnd());
    io.err(`(${plan.envFile}, mode 0600, would set: ${Object.keys(vars.values).join(', ') || 'nothing yet'}; values not shown)`);
    return 0;
  }
  if (opts.system && !sys.isRoot) throw new UsageError('a system unit is written by root: run it with sudo (or leave out --system for a user unit)');
  refuseOtherDirectory(plan, paths.dir);
  const envNote = writeEnvFile(plan.envFile, vars.values);
  writeFile(plan.unitFile, unitText, 0o644);
  if (plan.logFile) fs.mkdirSync(path.dirname(plan.logFile), { recursive: true });
  io.out(`Wrote ${plan.unitFile}`);
  io.out(envNote);
  for (const missing of vars.missing) io.err(`warning: service.yaml uses \${${missing}}, which is not set here: add it to ${plan.envFile}`);
  if (spec.user === 'root' || spec.user === '0')
    io.err('warning: the gateway runs as root, and the engine runs commands with its rights: give the directory to a user (chown) and install again');

  const start = opts.start !== false;
  const failed = await runAll(plan.install(start), sys);
  if (failed) {
    io.err(
      `error: \`${[failed.command.cmd, ...failed.command.args].join(' ')}\` ${failed.code === 127 ? 'is not available here' : `exited with ${failed.code}`}`,
    );
    io.err(
      `The files are written; once the service manager runs, finish with: ${plan
        .install(start)
        .map((c) => [c.cmd, ...c.args].join(' '))
        .join(' && ')}`,
    );
    return 1;
  }
  const cli = (action: string) => `\`${formatCliCommand(`daemon ${action} -d ${formatShellWord(paths.dir)}${opts.system ? ' --system' : ''}`)}\``;
  io.out(start ? `${name} is enabled and (re)started.` : `${name} is enabled; it starts at the next login or boot.`);
  io.out(`Status: ${cli('status')}   logs: ${cli('logs')}   remove: ${cli('uninstall')}`);
  if (plan.manager === 'systemd-user' && !isLingering(sys.user)) {
    io.out(`A user unit stops when you log out and starts at your next login. To keep it running, and start it at boot: loginctl enable-linger ${sys.user}`);
  }
  return 0;
}

// --- internal ---

function describeService(opts: { plan: DaemonPlan; dir: string; description: string; sys: DaemonSystem; system: boolean }): ServiceSpec {
  const bin = fs.realpathSync(path.join(packageRoot(), 'bin', 'service.js'));
  // npx runs the package from its cache, which npm cleans: the unit would point at nothing one day.
  if (bin.split(path.sep).includes('_npx')) {
    throw new UsageError(
      `this CLI runs from npx's cache (${bin}), which npm may clean`,
      'install it for good (npm install -g agent-service), then run `agent-service daemon install` again',
    );
  }
  return {
    name: opts.plan.name,
    description: opts.description,
    node: process.execPath,
    bin,
    dir: opts.dir,
    envFile: opts.plan.envFile,
    path: removeNpmBinDirs(opts.sys.facts.env),
    ...(opts.system ? { user: readUserName(fs.statSync(opts.dir).uid) } : {}),
    ...(opts.plan.logFile ? { logFile: opts.plan.logFile } : {}),
  };
}

/** SERVICE_TOKEN and SERVICE_STORE_URL when set here, every `${VAR}` service.yaml uses, and the --env names. */
function collectVariables(configText: string, extra: string[], env: NodeJS.ProcessEnv): { values: Record<string, string>; missing: string[] } {
  const fromFile = placeholderNames(configText);
  for (const name of extra) if (!env[name]) throw new UsageError(`--env ${name}: it is not set in this shell`);
  const names = [...new Set(['SERVICE_TOKEN', 'SERVICE_STORE_URL', ...fromFile, ...extra])];
  const values = Object.fromEntries(names.flatMap((n) => (env[n] ? [[n, env[n]]] : [])));
  return { values, missing: fromFile.filter((n) => !env[n]) };
}

/** An existing file is kept (it may hold a rotated token or variables added by hand); names it lacks are added. */
function writeEnvFile(file: string, values: Record<string, string>): string {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const existing = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
  const have = new Set(readEnvFileNames(existing ?? ''));
  const added = Object.fromEntries(Object.entries(values).filter(([n]) => !have.has(n)));
  const header = existing === undefined ? ['The gateway environment of `service daemon` (mode 0600). Edit it, then restart the service.'] : [];
  const text = `${existing ?? ''}${Object.keys(added).length > 0 || existing === undefined ? formatEnvFile(added, header) : ''}`;
  writeFile(file, text, 0o600);
  const names = Object.keys(added).join(', ') || 'nothing new';
  return existing === undefined ? `Wrote ${file} (mode 0600): ${names}` : `Kept ${file} (mode 0600), added: ${names}`;
}

function refuseOtherDirectory(plan: DaemonPlan, dir: string): void {
  if (!fs.existsSync(plan.unitFile)) return;
  const text = fs.readFileSync(plan.unitFile, 'utf8');
  const other = /^WorkingDirectory=(.*)$/m.exec(text)?.[1]?.replace(/%%/g, '%') ?? /<key>WorkingDirectory<\/key><string>([^<]*)</.exec(text)?.[1];
  if (other !== undefined && path.resolve(other.replace(/&amp;/g, '&')) !== dir) {
    throw new AppError('unit_taken', `${plan.unitFile} runs another assistant directory (${other})`, {
      hint: 'give this one another name: --name <unit-name>',
    });
  }
}

async function uninstall(plan: DaemonPlan, io: CommandIO, sys: DaemonSystem): Promise<number> {
  if (!fs.existsSync(plan.unitFile)) {
    io.out(`${plan.name} is not installed (no ${plan.unitFile}).`);
    return 0;
  }
  const failed = (await runAll(plan.uninstall, sys)) ?? (await removeAnd(plan, sys));
  for (const file of [plan.unitFile, plan.envFile]) if (!fs.existsSync(file)) io.out(`Removed ${file}`);
  if (failed) {
    io.err(`error: \`${[failed.command.cmd, ...failed.command.args].join(' ')}\` exited with ${failed.code}`);
    return 1;
  }
  return 0;
}

async function removeAnd(plan: DaemonPlan, sys: DaemonSystem) {
  fs.rmSync(plan.unitFile, { force: true });
  fs.rmSync(plan.envFile, { force: true });
  return runAll(plan.afterRemove, sys);
}

async function runAll(commands: ManagerCommand[], sys: DaemonSystem): Promise<{ command: ManagerCommand; code: number } | undefined> {
  for (const command of commands) {
    const code = await sys.run(command, { inherit: true });
    if (code !== 0 && !command.mayFail) return { command, code };
  }
  return undefined;
}

function writeFile(file: string, text: string, mode: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text, { mode });
  fs.chmodSync(file, mode);
}

function processSystem(): DaemonSystem {
  const uid = process.getuid?.() ?? -1;
  return {
    facts: { platform: process.platform, home: os.homedir(), uid, env: process.env },
    user: os.userInfo().username,
    isRoot: uid === 0,
    run: (command, opts) =>
      new Promise((resolve) => {
        const child = spawn(command.cmd, command.args, { stdio: opts.inherit ? 'inherit' : 'ignore' });
        child.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ENOENT' ? 127 : 1));
        child.once('exit', (code) => resolve(code ?? 1));
      }),
  };
}
