import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYamlText } from 'yaml';
import { z } from 'zod';
import { formatIssues } from '../config/issues.js';

/** A skill folder with a valid SKILL.md. Skills are discovered from `skills/`, never declared in config. */
export interface Skill {
  name: string;
  description: string;
  /** Absolute path of the skill folder. */
  dir: string;
}

export interface SkillProblem {
  folder: string;
  problem: string;
}

export interface SkillScan {
  skills: Skill[];
  problems: SkillProblem[];
}

const frontMatterSchema = z.looseObject({
  name: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z0-9][a-z0-9-]*$/, 'use lowercase letters, digits and dashes'),
  description: z.string().min(1).max(1024),
});

export const SKILL_FILE = 'SKILL.md';

/** Every folder under skills/: valid ones as skills, the rest as problems (never skipped silently). */
export function scanSkills(skillsDir: string): SkillScan {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(skillsDir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { skills: [], problems: [] };
    throw err;
  }
  const scan: SkillScan = { skills: [], problems: [] };
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name.startsWith('.')) continue;
    const dir = path.join(skillsDir, entry.name);
    if (!isDirectory(dir)) {
      scan.problems.push({ folder: entry.name, problem: 'not a folder (a skill is a folder holding SKILL.md)' });
      continue;
    }
    const result = readSkill(dir);
    if ('problem' in result) scan.problems.push({ folder: entry.name, problem: result.problem });
    else scan.skills.push(result);
  }
  return scan;
}

/** Read and validate one skill folder; the front matter `name` must equal the folder name. */
export function readSkill(dir: string): Skill | { problem: string } {
  const file = path.join(dir, SKILL_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return { problem: `missing ${SKILL_FILE}` };
  }
  const match = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/.exec(text.replace(/^\uFEFF/, ''));
  if (!match) return { problem: `${SKILL_FILE} must start with YAML front matter between --- lines` };
  let data: unknown;
  try {
    data = parseYamlText(match[1] ?? '');
  } catch (err) {
    return { problem: `${SKILL_FILE} front matter is not valid YAML: ${(err as Error).message.split('\n')[0]}` };
  }
  const parsed = frontMatterSchema.safeParse(data ?? {}, { reportInput: true });
  if (!parsed.success) return { problem: `${SKILL_FILE}: ${formatIssues(parsed.error.issues).join('; ')}` };
  const folder = path.basename(dir);
  if (parsed.data.name !== folder) {
    return { problem: `${SKILL_FILE}: name "${parsed.data.name}" does not match the folder name "${folder}"` };
  }
  return { name: parsed.data.name, description: parsed.data.description.trim(), dir };
}

// --- internal ---

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
