import fs from 'node:fs';
import path from 'node:path';
import { AppError, UsageError } from '../core/errors.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { readSkill, scanSkills } from '../core/skills/skills.js';
import type { CommandIO } from './io.js';

/** `service skill list [--json]`: installed skills, and folders that are not valid skills. */
export async function runSkillList(opts: { dir: string; json?: boolean }, io: CommandIO): Promise<number> {
  const scan = scanSkills(resolveAssistantPaths(opts.dir).skillsDir);
  if (opts.json) {
    io.out(JSON.stringify({ skills: scan.skills.map(({ name, description }) => ({ name, description })), problems: scan.problems }, null, 2));
    return scan.problems.length > 0 ? 1 : 0;
  }
  if (scan.skills.length === 0) io.out('No skills installed (skills/<name>/SKILL.md).');
  const width = Math.max(0, ...scan.skills.map((s) => s.name.length));
  for (const s of scan.skills) io.out(`${s.name.padEnd(width)}  ${s.description}`);
  for (const p of scan.problems) io.err(`invalid skill folder skills/${p.folder}: ${p.problem}`);
  return scan.problems.length > 0 ? 1 : 0;
}

/** `service skill add <path>`: validate a local skill folder and copy it into skills/. */
export async function runSkillAdd(opts: { dir: string; source: string; force?: boolean }, io: CommandIO): Promise<number> {
  const source = path.resolve(opts.source);
  if (!fs.existsSync(source) || !fs.statSync(source).isDirectory()) {
    throw new UsageError(`${opts.source} is not a folder`, 'a skill is a folder holding SKILL.md');
  }
  const skill = readSkill(source);
  if ('problem' in skill) throw new AppError('skill_invalid', `${source}: ${skill.problem}`);
  const target = path.join(resolveAssistantPaths(opts.dir).skillsDir, skill.name);
  if (fs.existsSync(target)) {
    if (!opts.force) throw new AppError('skill_exists', `skill "${skill.name}" is already installed`, { hint: 'use --force to replace it' });
    fs.rmSync(target, { recursive: true, force: true });
  }
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.cpSync(source, target, { recursive: true, filter: (src) => path.basename(src) !== '.git' });
  io.out(`Added skill "${skill.name}": ${skill.description}`);
  return 0;
}

/** `service skill remove <name>`. */
export async function runSkillRemove(opts: { dir: string; name: string }, io: CommandIO): Promise<number> {
  const skillsDir = resolveAssistantPaths(opts.dir).skillsDir;
  // The name selects a direct child of skills/ only; anything else could escape the directory.
  if (!/^[A-Za-z0-9._-]+$/.test(opts.name) || opts.name === '.' || opts.name === '..') {
    throw new UsageError(`invalid skill name "${opts.name}"`);
  }
  const target = path.join(skillsDir, opts.name);
  if (!fs.existsSync(target)) {
    const names = scanSkills(skillsDir).skills.map((s) => s.name);
    throw new AppError('skill_not_found', `no skill "${opts.name}" installed`, { hint: names.length ? `installed: ${names.join(', ')}` : undefined });
  }
  fs.rmSync(target, { recursive: true, force: true });
  io.out(`Removed skill "${opts.name}"`);
  return 0;
}
