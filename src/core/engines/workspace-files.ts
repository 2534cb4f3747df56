import fs from 'node:fs';
import path from 'node:path';
import { writeFileIfChanged } from '../atomic-write.js';

/**
 * Files the engines read from the assistant directory. What we generate goes into a clearly
 * marked section of a shared file (CLAUDE.md, AGENTS.md) or into a file of our own; anything the
 * user wrote around it is kept.
 */
export const SECTION_BEGIN = '<!-- service:begin (generated from service.yaml and skills/ before every turn; edits inside are replaced) -->';
export const SECTION_END = '<!-- service:end -->';

/** Put `content` between our markers in `file`, keeping everything else. Writes only when it changed. */
export function writeManagedSection(file: string, content: string): boolean {
  let current = '';
  try {
    current = fs.readFileSync(file, 'utf8');
  } catch {
    // a new file
  }
  const block = `${SECTION_BEGIN}\n${content.trimEnd()}\n${SECTION_END}`;
  const start = current.indexOf(SECTION_BEGIN);
  const end = current.indexOf(SECTION_END, start + 1);
  let next: string;
  if (start !== -1 && end !== -1) {
    next = current.slice(0, start) + block + current.slice(end + SECTION_END.length);
  } else if (current.trim() === '') {
    next = `${block}\n`;
  } else {
    next = `${current.trimEnd()}\n\n${block}\n`;
  }
  return writeFileIfChanged(file, next);
}

/**
 * Make `<linkDir>/<name>` point at each skill folder (relative links), and remove links of ours
 * that point at skills no longer installed. Real folders the user put there are left alone.
 */
export function syncSkillLinks(linkDir: string, skillsRoot: string, skills: ReadonlyArray<{ name: string; dir: string }>): void {
  fs.mkdirSync(linkDir, { recursive: true });
  const wanted = new Map(skills.map((s) => [s.name, path.relative(linkDir, s.dir)]));
  for (const entry of fs.readdirSync(linkDir, { withFileTypes: true })) {
    if (!entry.isSymbolicLink()) continue;
    const p = path.join(linkDir, entry.name);
    const current = fs.readlinkSync(p);
    const ours = path.resolve(linkDir, current).startsWith(path.resolve(skillsRoot) + path.sep);
    if (ours && wanted.get(entry.name) !== current) fs.rmSync(p, { force: true });
  }
  for (const [name, target] of wanted) {
    const p = path.join(linkDir, name);
    if (fs.existsSync(p) || isDanglingLink(p)) continue;
    fs.symlinkSync(target, p, 'dir');
  }
}

function isDanglingLink(p: string): boolean {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/** Write JSON we own (pretty, trailing newline) only when its content changed. */
export function writeJsonIfChanged(file: string, value: unknown, opts: { mode?: number } = {}): boolean {
  return writeFileIfChanged(file, `${JSON.stringify(value, null, 2)}\n`, opts);
}

/** Mode of every file we write that holds a resolved secret (MCP configs with env and headers). */
export const SECRET_FILE_MODE = 0o600;
