import fs from 'node:fs';
import type { z } from 'zod';
import { parseYaml } from '../core/config/yaml-document.js';
import { resolvePlaceholders } from '../core/config/env.js';
import { createConfigSchema } from '../core/config/schema.js';
import { ConfigError } from '../core/errors.js';
import { isProcessAlive } from '../core/engines/process-tree.js';
import { readWarmRecords, treeRssBytes } from '../core/engines/warm/warm-records.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { scanSkills } from '../core/skills/skills.js';
import { configParts, loadServiceConfig } from '../definitions.js';
import type { CommandIO } from './io.js';

/**
 * When service.yaml has problems, each field that is valid on its own is still reported; a field
 * that is missing or invalid is null (name, engine, channels, tasks) and shown as "(see problems)".
 */
export interface StatusReport {
  dir: string;
  name: string | null;
  engine: string | null;
  /** '' = the engine's default model. */
  model: string | null;
  skills: Array<{ name: string; description: string }>;
  channels: string[] | null;
  tasks: number | null;
  /** `warm:` as configured, and the warm engine processes running for this directory (their memory is the engines'). */
  warm: { enabled: boolean; maxProcesses: number; idleSeconds: number; processes: WarmProcessReport[] } | null;
  problems: string[];
  warnings: string[];
}

/** `service status [--json]`: what this assistant is, and whether its files are usable. */
export async function runStatus(opts: { dir: string; json?: boolean }, io: CommandIO): Promise<number> {
  const report = buildStatusReport(opts.dir);
  if (opts.json) {
    io.out(JSON.stringify(report, null, 2));
  } else {
    const show = (v: string | number | null, empty = '(none)') => (v === null ? '(see problems)' : v === '' ? empty : String(v));
    io.out(
      [
        `Assistant  ${show(report.name)}  (${report.dir})`,
        `Engine     ${show(report.engine)}`,
        `Model      ${show(report.model, '(engine default)')}`,
        `Skills     ${report.skills.map((s) => s.name).join(', ') || '(none)'}`,
        `Channels   ${show(report.channels?.join(', ') ?? null)}`,
        `Tasks      ${show(report.tasks)}`,
        `Warm       ${formatWarm(report.warm)}`,
        ...(report.warm?.processes ?? []).map(
          (p) => `  pid ${p.pid}  ${p.engine}  ${JSON.stringify(p.sessionKey)}  ${(p.rssBytes / 1_048_576).toFixed(0)} MiB  since ${p.startedAt}`,
        ),
      ].join('\n'),
    );
    for (const w of report.warnings) io.out(`warning: ${w}`);
    if (report.problems.length > 0) io.out(['Problems:', ...report.problems.map((p) => `  - ${p}`)].join('\n'));
  }
  return report.problems.length > 0 ? 1 : 0;
}

export interface WarmProcessReport {
  pid: number;
  engine: string;
  sessionKey: string;
  startedAt: string;
  rssBytes: number;
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
    warm: null,
    problems: scan.problems.map((p) => `skills/${p.folder}: ${p.problem}`),
    warnings: [],
  };
  try {
    const loaded = loadServiceConfig(dir);
    const c = loaded.config;
    Object.assign(report, { name: c.name, engine: c.engine, model: c.model ?? '', channels: Object.keys(c.channels), tasks: c.tasks.length });
    report.warm = { ...c.warm, processes: readWarmProcesses(paths.stateDir) };
    report.warnings.push(...loaded.warnings);
  } catch (err) {
    if (err instanceof ConfigError) {
      report.problems.unshift(...err.problems.map((p) => `${paths.configFile}: ${p}`));
      Object.assign(report, readValidFields(paths.configFile));
    } else {
      report.problems.unshift((err as Error).message);
      Object.assign(report, { model: null, channels: null, tasks: null });
    }
  }
  return report;
}

// --- internal ---

function formatWarm(warm: StatusReport['warm']): string {
  if (!warm) return '(see problems)';
  if (!warm.enabled) return 'off (every turn starts the engine)';
  return `on: up to ${warm.maxProcesses} engine process(es), each ended after ${warm.idleSeconds} s idle; ${warm.processes.length} running`;
}

/** The warm engine processes a live gateway or chat of this directory keeps (their records), with their memory. */
function readWarmProcesses(stateDir: string): WarmProcessReport[] {
  return readWarmRecords(stateDir).flatMap((r) => {
    const root = r.processes[0];
    if (!r.ownerAlive || !root || !isProcessAlive(root)) return [];
    return [
      {
        pid: root.pid,
        engine: r.engine,
        sessionKey: r.sessionKey,
        startedAt: new Date(r.startedAt).toISOString(),
        rssBytes: treeRssBytes(r.processes),
      },
    ];
  });
}

/** The reported fields of an invalid service.yaml that are valid on their own (the rest null). */
function readValidFields(file: string): Pick<StatusReport, 'name' | 'engine' | 'model' | 'channels' | 'tasks'> {
  const unknown = { name: null, engine: null, model: null, channels: null, tasks: null };
  let raw: unknown;
  try {
    raw = parseYaml(fs.readFileSync(file, 'utf8'), file).toJS();
  } catch {
    return unknown; // not YAML at all: nothing to trust
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return unknown;
  const { value, missing } = resolvePlaceholders(raw as Record<string, unknown>, process.env);
  // As the loader does: a channel whose ${VAR} is unset is disabled, not invalid.
  const blocks = value.channels;
  if (blocks && typeof blocks === 'object' && !Array.isArray(blocks)) {
    const kept = { ...(blocks as Record<string, unknown>) };
    for (const m of missing) if (m.path[0] === 'channels' && typeof m.path[1] === 'string') delete kept[m.path[1]];
    value.channels = kept;
  }
  const shape = createConfigSchema(configParts(), { coerceScalars: true }).shape;
  const field = <K extends keyof typeof shape>(key: K) => {
    const r = shape[key].safeParse(value[key]);
    return r.success ? (r.data as z.output<(typeof shape)[K]>) : undefined;
  };
  const model = shape.model.safeParse(value.model);
  const channels = field('channels');
  const tasks = field('tasks');
  return {
    name: field('name') ?? null,
    engine: field('engine') ?? null,
    model: model.success ? (model.data ?? '') : null,
    channels: channels ? Object.keys(channels) : null,
    tasks: tasks ? tasks.length : null,
  };
}
