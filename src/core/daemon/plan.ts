import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from '../errors.js';

/**
 * Where `service daemon` puts the service of an assistant and which commands of the service
 * manager install, remove, show and follow it, for the machine at hand:
 * - Linux, a systemd user unit: `~/.config/systemd/user/<name>.service`, managed with
 *   `systemctl --user`, logs in the user's journal; it runs while the user has a session, or
 *   always once lingering is on (`loginctl enable-linger`);
 * - Linux with `--system` (as root), a system unit in /etc/systemd/system that runs as the
 *   directory's owner from boot;
 * - macOS, a launchd agent: `~/Library/LaunchAgents/<name>.plist` in the user's GUI domain, its
 *   output in ~/Library/Logs/agent-service/.
 * The environment file sits apart from the unit, mode 0600 (in /etc/agent-service for a system
 * unit, readable by root only: systemd reads it before dropping to the user).
 */
export type ServiceManager = 'systemd-user' | 'systemd-system' | 'launchd';

export interface ManagerCommand {
  cmd: string;
  args: string[];
  /** Its failure is expected at times (stopping what is not loaded) and ignored. */
  mayFail?: boolean;
}

export interface DaemonPlan {
  manager: ServiceManager;
  name: string;
  unitFile: string;
  envFile: string;
  logFile?: string;
  install(start: boolean): ManagerCommand[];
  /** Run before the files are removed; `afterRemove` after. */
  uninstall: ManagerCommand[];
  afterRemove: ManagerCommand[];
  status: ManagerCommand;
  logs(opts: { follow: boolean; lines: number }): ManagerCommand;
}

export interface MachineFacts {
  platform: NodeJS.Platform;
  home: string;
  uid: number;
  env: NodeJS.ProcessEnv;
}

export function resolveDaemonPlan(opts: { name: string; system: boolean; facts: MachineFacts }): DaemonPlan {
  const { name, facts } = opts;
  const config = facts.env.XDG_CONFIG_HOME?.trim() || path.join(facts.home, '.config');
  if (facts.platform === 'darwin') {
    if (opts.system) throw new UsageError('--system is for systemd (Linux); on macOS the gateway runs as a launchd agent of your login session');
    const domain = `gui/${facts.uid}`;
    const unitFile = path.join(facts.home, 'Library', 'LaunchAgents', `${name}.plist`);
    const logFile = path.join(facts.home, 'Library', 'Logs', 'agent-service', `${name}.log`);
    const launchctl = (args: string[], mayFail = false): ManagerCommand => ({ cmd: 'launchctl', args, ...(mayFail ? { mayFail } : {}) });
    return {
      manager: 'launchd',
      name,
      unitFile,
      envFile: path.join(config, 'agent-service', `${name}.env`),
      logFile,
      install: (start) => (start ? [launchctl(['bootout', `${domain}/${name}`], true), launchctl(['bootstrap', domain, unitFile])] : []),
      uninstall: [launchctl(['bootout', `${domain}/${name}`], true)],
      afterRemove: [],
      status: launchctl(['print', `${domain}/${name}`]),
      logs: ({ follow, lines }) => ({ cmd: 'tail', args: ['-n', String(lines), ...(follow ? ['-f'] : []), logFile] }),
    };
  }
  if (facts.platform !== 'linux')
    throw new UsageError(
      `service daemon knows systemd (Linux) and launchd (macOS), not ${facts.platform}: run \`service gateway\` under your own service manager, or in the container image (docs/operations.md)`,
    );
  const system = opts.system;
  const scope = system ? [] : ['--user'];
  const unit = `${name}.service`;
  const systemctl = (args: string[], mayFail = false): ManagerCommand => ({ cmd: 'systemctl', args: [...scope, ...args], ...(mayFail ? { mayFail } : {}) });
  return {
    manager: system ? 'systemd-system' : 'systemd-user',
    name,
    unitFile: system ? path.join('/etc/systemd/system', unit) : path.join(config, 'systemd', 'user', unit),
    envFile: system ? path.join('/etc/agent-service', `${name}.env`) : path.join(config, 'agent-service', `${name}.env`),
    install: (start) => [systemctl(['daemon-reload']), systemctl(['enable', unit]), ...(start ? [systemctl(['restart', unit])] : [])],
    uninstall: [systemctl(['disable', '--now', unit], true)],
    afterRemove: [systemctl(['daemon-reload'])],
    status: systemctl(['status', unit, '--no-pager']),
    logs: ({ follow, lines }) => ({ cmd: 'journalctl', args: [...scope, '-u', unit, '-n', String(lines), '--no-pager', ...(follow ? ['-f'] : [])] }),
  };
}

/** Whether a user's systemd manager outlives their sessions (`loginctl enable-linger`). */
export function isLingering(user: string): boolean {
  return fs.existsSync(path.join('/var/lib/systemd/linger', user));
}

/** The login name of a uid, from /etc/passwd (a system unit's User=); the number itself when it has none. */
export function readUserName(uid: number, passwd = '/etc/passwd'): string {
  try {
    for (const line of fs.readFileSync(passwd, 'utf8').split('\n')) {
      const [name, , id] = line.split(':');
      if (name && Number(id) === uid) return name;
    }
  } catch {
    // no passwd file: the number does
  }
  return String(uid);
}
