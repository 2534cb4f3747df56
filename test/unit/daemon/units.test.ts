import { describe, expect, it } from 'vitest';
import { resolveDaemonPlan } from '../../../src/core/daemon/plan.js';
import { formatEnvFile, formatLaunchdPlist, formatServiceName, formatSystemdUnit, readEnvFileNames, type ServiceSpec } from '../../../src/core/daemon/units.js';

const spec: ServiceSpec = {
  name: 'service-ops',
  description: 'service gateway: ops',
  node: '/opt/node 22/bin/node',
  bin: '/usr/lib/node_modules/agent-service/bin/service.js',
  dir: '/srv/bots/100% $HOME & <ops>',
  envFile: '/home/me/.config/agent-service/service-ops.env',
  path: '/usr/local/bin:/usr/bin',
};

describe('unit files', () => {
  it('systemd: words with spaces quoted, % doubled everywhere, $ doubled where ExecStart would expand it', () => {
    const unit = formatSystemdUnit(spec, '1.2.3');
    expect(unit).toContain('ExecStart="/opt/node 22/bin/node" /usr/lib/node_modules/agent-service/bin/service.js gateway -d "/srv/bots/100%% $$HOME & <ops>"');
    expect(unit).toContain('WorkingDirectory=/srv/bots/100%% $HOME & <ops>\n');
    expect(unit).toContain('Environment=PATH=/usr/local/bin:/usr/bin\n');
    expect(() => formatSystemdUnit({ ...spec, dir: '/srv/a\nExecStartPre=/bin/evil' }, '1')).toThrow(/line break/);
  });

  it('launchd: node runs with --env-file (launchd has no environment file), values escaped as XML, restarted only after a failure', () => {
    const plist = formatLaunchdPlist({ ...spec, logFile: '/Users/me/Library/Logs/agent-service/service-ops.log' }, '1.2.3');
    expect(plist).toContain(
      '<key>ProgramArguments</key><array><string>/opt/node 22/bin/node</string><string>--env-file=/home/me/.config/agent-service/service-ops.env</string><string>/usr/lib/node_modules/agent-service/bin/service.js</string><string>gateway</string><string>-d</string><string>/srv/bots/100% $HOME &amp; &lt;ops&gt;</string></array>',
    );
    expect(plist).toContain('<key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>');
    expect(plist).toContain('<key>RunAtLoad</key><true/>');
    expect(plist).toContain('<key>StandardErrorPath</key><string>/Users/me/Library/Logs/agent-service/service-ops.log</string>');
    expect(plist.split('<dict>').length).toBe(plist.split('</dict>').length);
  });

  it('environment file: single-quoted values both systemd and node read as written; what they would read differently is refused', () => {
    const text = formatEnvFile({ SERVICE_TOKEN: 'a$b c"d\\e', EMPTY: '' }, ['header']);
    expect(text).toBe(`# header\nSERVICE_TOKEN='a$b c"d\\e'\nEMPTY=''\n`);
    expect(readEnvFileNames(`${text}export OTHER=1\n  # X=2\n`)).toEqual(['SERVICE_TOKEN', 'EMPTY', 'OTHER']);
    expect(() => formatEnvFile({ K: "it's" }, [])).toThrow(/quote or a line break/);
    expect(() => formatEnvFile({ K: 'a\nb' }, [])).toThrow(/quote or a line break/);
    expect(() => formatEnvFile({ 'bad-name': 'x' }, [])).toThrow(/not a variable name/);
  });

  it('names: service-<assistant name> in lower case and dashes', () => {
    expect(formatServiceName('Ops Bot (prod)')).toBe('service-ops-bot-prod');
    expect(formatServiceName('机器人')).toBe('service-assistant');
  });
});

describe('daemon plans', () => {
  const facts = (platform: NodeJS.Platform) => ({ platform, home: '/home/me', uid: 501, env: {} });

  it('macOS: a launch agent in the GUI domain, its log under ~/Library/Logs', () => {
    const plan = resolveDaemonPlan({ name: 'service-ops', system: false, facts: facts('darwin') });
    expect(plan.unitFile).toBe('/home/me/Library/LaunchAgents/service-ops.plist');
    expect(plan.install(true)).toEqual([
      { cmd: 'launchctl', args: ['bootout', 'gui/501/service-ops'], mayFail: true },
      { cmd: 'launchctl', args: ['bootstrap', 'gui/501', '/home/me/Library/LaunchAgents/service-ops.plist'] },
    ]);
    expect(plan.status).toEqual({ cmd: 'launchctl', args: ['print', 'gui/501/service-ops'] });
    expect(plan.logs({ follow: true, lines: 20 })).toEqual({ cmd: 'tail', args: ['-n', '20', '-f', '/home/me/Library/Logs/agent-service/service-ops.log'] });
    expect(() => resolveDaemonPlan({ name: 'x', system: true, facts: facts('darwin') })).toThrow(/--system is for systemd/);
  });

  it('Linux: user units in XDG_CONFIG_HOME, system units in /etc; elsewhere a clear refusal', () => {
    const user = resolveDaemonPlan({ name: 'service-ops', system: false, facts: { ...facts('linux'), env: { XDG_CONFIG_HOME: '/cfg' } } });
    expect([user.unitFile, user.envFile]).toEqual(['/cfg/systemd/user/service-ops.service', '/cfg/agent-service/service-ops.env']);
    const system = resolveDaemonPlan({ name: 'service-ops', system: true, facts: facts('linux') });
    expect([system.unitFile, system.envFile]).toEqual(['/etc/systemd/system/service-ops.service', '/etc/agent-service/service-ops.env']);
    expect(system.status.args).toEqual(['status', 'service-ops.service', '--no-pager']);
    expect(() => resolveDaemonPlan({ name: 'x', system: false, facts: facts('win32') })).toThrow(/knows systemd \(Linux\) and launchd \(macOS\), not win32/);
  });
});
