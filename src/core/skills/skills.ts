import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYamlText } from 'yaml';
import { z } from 'zod';
import { formatIssues } from '../config/issues.js';
import { readStamp } from '../util/file-stamp.js';

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
export function scanSkills(skillsDir: string, read: (dir: string) => Skill | { problem: string } = readSkill): SkillScan {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(skillsDir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { skills: [], problems: [] };
    throw err;
  }
  const scan: SkillScan = { skills: [], problems: [] };
  for (const entry of entries.sort((a, b) => compareNames(a.name, b.name))) {
    if (entry.name.startsWith('.')) continue;
    const dir = path.join(skillsDir, entry.name);
    if (!isDirectory(dir)) {
      scan.problems.push({ folder: entry.name, problem: 'not a folder (a skill is a folder holding SKILL.md)' });
      continue;
    }
    const result = read(dir);
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

/**
 * `scanSkills` for a process that scans before every turn: a SKILL.md is parsed again only when
 * its stamp (inode, size, times) changed. The folder listing is read every time, so a skill added
 * or removed counts at once.
 */
export function createSkillScanner(now: () => number = Date.now): (skillsDir: string) => SkillScan {
  const parsed = new Map<string, { stamp: string; result: Skill | { problem: string } }>();
  const read = (dir: string) => {
    const { stamp, settled } = readStamp(path.join(dir, SKILL_FILE), now());
    const cached = parsed.get(dir);
    if (cached?.stamp === stamp) return cached.result;
    const result = readSkill(dir);
    if (settled) parsed.set(dir, { stamp, result });
    else parsed.delete(dir);
    return result;
  };
  return (skillsDir) => {
    const seen = new Set<string>();
    const scan = scanSkills(skillsDir, (dir) => {
      seen.add(dir);
      return read(dir);
    });
    // Folders no longer there are forgotten: the cache holds only what the last scan saw.
    for (const dir of parsed.keys()) if (!seen.has(dir)) parsed.delete(dir);
    return scan;
  };
}

// --- internal ---

/** Folder names in the user's collation order; plain code-point order (the same, measured) for skill-style names, without loading ICU's collator. */
function compareNames(a: string, b: string): number {
  if (PLAIN_NAME.test(a) && PLAIN_NAME.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return a.localeCompare(b);
}
const PLAIN_NAME = /^[a-z0-9-]*$/;

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
