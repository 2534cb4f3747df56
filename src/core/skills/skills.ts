import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYamlText } from 'yaml';
import { z } from 'zod';
import { formatIssues } from '../config/issues.js';
import { createStampMemo, readStamp } from '../util/file-stamp.js';

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
  return scanEntries(skillsDir, readEntries(skillsDir), read);
}

/** One entry of skills/: `folder` is known for what is not a link (a link is followed at each scan). */
interface SkillEntry {
  name: string;
  folder: boolean | 'link';
}

/** The entries of skills/ in scan order, dot-entries left out ([] when there is no skills/). */
function readEntries(skillsDir: string): SkillEntry[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(skillsDir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return entries
    .filter((e) => !e.name.startsWith('.'))
    .sort((a, b) => compareNames(a.name, b.name))
    .map((e) => ({ name: e.name, folder: e.isSymbolicLink() ? 'link' : e.isDirectory() }));
}

function scanEntries(skillsDir: string, entries: readonly SkillEntry[], read: (dir: string) => Skill | { problem: string }): SkillScan {
  const scan: SkillScan = { skills: [], problems: [] };
  for (const entry of entries) {
    const dir = path.join(skillsDir, entry.name);
    if (!(entry.folder === 'link' ? isDirectory(dir) : entry.folder)) {
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
 * its stamp (inode, size, times) changed, and the listing of skills/ is read again only when the
 * folder's stamp changed (a skill added, removed or renamed changes it), so a change counts at
 * the next scan. SKILL.md files are stamped at every scan: editing one leaves its folder as it was.
 */
export function createSkillScanner(now: () => number = Date.now): (skillsDir: string) => SkillScan {
  // Keyed by skill folder, by its SKILL.md's stamp; bounded, so folders no longer there age out.
  const parsed = createStampMemo<Skill | { problem: string }>();
  const listings = createStampMemo<SkillEntry[]>();
  const read = (dir: string) => {
    const stamp = readStamp(path.join(dir, SKILL_FILE), now());
    const known = parsed.get(dir, stamp);
    if (known) return known;
    const result = readSkill(dir);
    parsed.set(dir, stamp, result);
    return result;
  };
  return (skillsDir) => {
    const stamp = readStamp(skillsDir, now());
    let entries = listings.get(skillsDir, stamp);
    if (!entries) {
      entries = readEntries(skillsDir);
      listings.set(skillsDir, stamp, entries);
    }
    return scanEntries(skillsDir, entries, read);
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
