import { UsageError } from '../errors.js';

/**
 * The files that make the gateway a service of the machine's service manager, as text: a
 * systemd unit (Linux), a launchd property list (macOS) and the environment file both read the
 * secrets from. Pure: where they go and what runs them is daemon-plan.ts.
 *
 * The gateway is started as `<node> <bin/service.js> gateway -d <dir>`: absolute paths, so
 * neither PATH nor the name `service` (Debian's init-script tool has it) decides what runs. The
 * token and the other secrets are never on that command line (visible to every user in `ps`):
 * they are in the environment file, mode 0600.
 */
export interface ServiceSpec {
  /** The unit's name without `.service` (`service-<name>`), or the launchd label. */
  name: string;
  description: string;
  /** Absolute path of the node binary. */
  node: string;
  /** Absolute path of this package's bin/service.js. */
  bin: string;
  /** The assistant directory (absolute). */
  dir: string;
  envFile: string;
  /** PATH for the gateway and the engine CLIs it starts (the installing shell's). */
  path: string;
  /** A system unit: the user it runs as. */
  user?: string;
  /** launchd: where its output goes. */
  logFile?: string;
}

/** How long a stop may take: the gateway gives running turns 30 s (SERVICE_SHUTDOWN_GRACE_MS), then stops what is left. */
export const STOP_TIMEOUT_SECONDS = 45;

export function formatSystemdUnit(spec: ServiceSpec, version: string): string {
  const system = spec.user !== undefined;
  return [
    `# Written by \`service daemon install\` (agent-service ${version}); the next install replaces it.`,
    '[Unit]',
    `Description=${oneLine(spec.description)}`,
    ...(system ? ['After=network-online.target', 'Wants=network-online.target'] : []),
    '',
    '[Service]',
    'Type=simple',
    ...(system ? [`User=${spec.user}`] : []),
    `WorkingDirectory=${escapeSpecifiers(path(spec.dir))}`,
    `EnvironmentFile=${escapeSpecifiers(path(spec.envFile))}`,
    `Environment=${quoteSystemd(`PATH=${spec.path}`, false)}`,
    `ExecStart=${[spec.node, spec.bin, 'gateway', '-d', spec.dir].map((a) => quoteSystemd(a, true)).join(' ')}`,
    // SIGTERM to the gateway alone: it lets running turns finish, then stops its engines itself.
    'KillMode=mixed',
    `TimeoutStopSec=${STOP_TIMEOUT_SECONDS}`,
    'Restart=on-failure',
    'RestartSec=5',
    `SyslogIdentifier=${spec.name}`,
    '',
    '[Install]',
    `WantedBy=${system ? 'multi-user.target' : 'default.target'}`,
    '',
  ].join('\n');
}

export function formatLaunchdPlist(spec: ServiceSpec, version: string): string {
  const args = [spec.node, `--env-file=${spec.envFile}`, spec.bin, 'gateway', '-d', spec.dir];
  const log = spec.logFile ?? '/dev/null';
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    `<!-- Written by \`service daemon install\` (agent-service ${xml(version)}); the next install replaces it. -->`,
    '<plist version="1.0">',
    '<dict>',
    key('Label', `<string>${xml(spec.name)}</string>`),
    key('ProgramArguments', `<array>${args.map((a) => `<string>${xml(a)}</string>`).join('')}</array>`),
    key('WorkingDirectory', `<string>${xml(spec.dir)}</string>`),
    key('EnvironmentVariables', `<dict><key>PATH</key><string>${xml(spec.path)}</string></dict>`),
    key('RunAtLoad', '<true/>'),
    // Restarted when it fails, not after a clean stop (launchctl bootout, SIGTERM).
    key('KeepAlive', '<dict><key>SuccessfulExit</key><false/></dict>'),
    key('ThrottleInterval', '<integer>5</integer>'),
    key('ExitTimeOut', `<integer>${STOP_TIMEOUT_SECONDS}</integer>`),
    key('StandardOutPath', `<string>${xml(log)}</string>`),
    key('StandardErrorPath', `<string>${xml(log)}</string>`),
    '</dict>',
    '</plist>',
    '',
  ].join('\n');
}

/**
 * `NAME='value'` lines, read alike by systemd's EnvironmentFile= and node's --env-file: single
 * quotes keep a value as written. A value with a single quote or a line break is refused (the
 * two readers would disagree on it): set it by editing the file.
 */
export function formatEnvFile(vars: Readonly<Record<string, string>>, header: string[]): string {
  const lines = header.map((h) => `# ${oneLine(h)}`);
  for (const [name, value] of Object.entries(vars)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`${name} is not a variable name`);
    if (/['\n\r\0]/.test(value)) throw new UsageError(`the value of ${name} holds a quote or a line break: write it into the environment file yourself`);
    lines.push(`${name}='${value}'`);
  }
  return `${lines.join('\n')}\n`;
}

/** The names an environment file sets (comments and blank lines skipped). */
export function readEnvFileNames(text: string): string[] {
  return text
    .split('\n')
    .map((l) => /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(l)?.[1])
    .filter((n): n is string => n !== undefined);
}

/** `service-<name>`: the assistant's name in lower-case letters, digits and dashes. */
export function formatServiceName(assistantName: string): string {
  const slug = assistantName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
  return `service-${slug || 'assistant'}`;
}

// --- internal ---

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}

function path(p: string): string {
  if (/[\r\n]/.test(p)) throw new UsageError(`a path with a line break cannot go in a unit file: ${JSON.stringify(p)}`);
  return p;
}

/** `%` starts a specifier in unit files. */
function escapeSpecifiers(text: string): string {
  return text.replace(/%/g, '%%');
}

/** A word of ExecStart= or Environment=: quoted when needed; `%` doubled, and `$` doubled where variables expand (ExecStart). */
function quoteSystemd(word: string, expands: boolean): string {
  path(word);
  let w = escapeSpecifiers(word);
  if (expands) w = w.replace(/\$/g, '$$$$');
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `"${w.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function key(name: string, value: string): string {
  return `  <key>${name}</key>${value}`;
}

function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
