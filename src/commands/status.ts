import { ConfigError } from '../core/errors.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { scanSkills } from '../core/skills/skills.js';
import { loadServiceConfig } from '../definitions.js';
import type { CommandIO } from './io.js';

export interface StatusReport {
  dir: string;
  name: string | null;
  engine: string | null;
  model: string;
  skills: Array<{ name: string; description: string }>;
  channels: string[];
  tasks: number;
  problems: string[];
  warnings: string[];
}

/** `service status [--json]`: what this assistant is, and whether its files are usable. */
export async function runStatus(opts: { dir: string; json?: boolean }, io: CommandIO): Promise<number> {
  const report = buildStatusReport(opts.dir);
  if (opts.json) {
    io.out(JSON.stringify(report, null, 2));
  } else {
    io.out(
      [
        `Assistant  ${report.name ?? '(unknown)'}  (${report.dir})`,
        `Engine     ${report.engine ?? '(unknown)'}`,
        `Model      ${report.model || '(engine default)'}`,
        `Skills     ${report.skills.map((s) => s.name).join(', ') || '(none)'}`,
        `Channels   ${report.channels.join(', ') || '(none)'}`,
        `Tasks      ${report.tasks}`,
      ].join('\n'),
    );
    for (const w of report.warnings) io.out(`warning: ${w}`);
    if (report.problems.length > 0) io.out(['Problems:', ...report.problems.map((p) => `  - ${p}`)].join('\n'));
  }
  return report.problems.length > 0 ? 1 : 0;
}

export function buildStatusReport(dir: string): StatusReport {
  const paths = resolveAssistantPaths(dir);
  const scan = scanSkills(paths.skillsDir);
  const report: StatusReport = {
    dir: paths.dir,
    name: null,
    engine: null,
    model: '',
    skills: scan.skills.map(({ name, description }) => ({ name, description })),
    channels: [],
    tasks: 0,
    problems: scan.problems.map((p) => `skills/${p.folder}: ${p.problem}`),
    warnings: [],
  };
  try {
    const loaded = loadServiceConfig(dir);
    const c = loaded.config;
    Object.assign(report, { name: c.name, engine: c.engine, model: c.model ?? '', channels: Object.keys(c.channels), tasks: c.tasks.length });
    report.warnings.push(...loaded.warnings);
  } catch (err) {
    if (err instanceof ConfigError) report.problems.unshift(...err.problems.map((p) => `${paths.configFile}: ${p}`));
    else report.problems.unshift((err as Error).message);
  }
  return report;
}
