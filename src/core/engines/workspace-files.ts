import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { writeFileIfChanged } from '../atomic-write.js';
import { createStampMemo, readStamp } from '../util/file-stamp.js';

/**
 * Files the engines read from the assistant directory. What we generate goes into a clearly
 * marked section of a shared file (CLAUDE.md, AGENTS.md) or into a file of our own; anything the
 * user wrote around it is kept.
 *
 * The section's markers carry a random nonce of the file (`<!-- service:begin 3f9c… (…) -->` …
 * `<!-- service:end 3f9c… -->`): text inside the section (a peer assistant's role, a system
 * prompt) cannot end the section early by writing an end marker, since it cannot know the nonce,
 * and a nonce that occurs in the content is replaced by a new one. A file written before markers
 * had a nonce has its section end at the last plain end marker, so text a forged marker left
 * behind is replaced with the rest of the section.
 */
const SECTION_BEGIN_TEXT = '(generated from service.yaml and skills/ before every turn; edits inside are replaced)';
const BEGIN_ALL = /<!-- service:begin(?: ([0-9a-f]{16}))? \(generated[^\n]*?-->/g;
const LEGACY_END = '<!-- service:end -->';

export const sectionMarkers = (nonce: string) => ({
  begin: `<!-- service:begin ${nonce} ${SECTION_BEGIN_TEXT} -->`,
  end: `<!-- service:end ${nonce} -->`,
});

/** Put `content` between our markers in `file`, keeping everything else. Writes only when it changed. */
export function writeManagedSection(file: string, content: string): boolean {
  const stamp = readStamp(file);
  if (sectionsInPlace.get(file, stamp) === content) return false;
  let current = '';
  try {
    current = fs.readFileSync(file, 'utf8');
  } catch {
    // a new file
  }
  const found = findSection(current);
  const kept = found?.nonce;
  const nonce = kept && !content.includes(kept) ? kept : newNonce(content);
  const { begin, end } = sectionMarkers(nonce);
  const block = `${begin}\n${content.trimEnd()}\n${end}`;
  let next: string;
  if (found) {
    next = current.slice(0, found.start) + block + current.slice(found.end);
  } else if (current.trim() === '') {
    next = `${block}\n`;
  } else {
    next = `${current.trimEnd()}\n\n${block}\n`;
  }
  const wrote = writeFileIfChanged(file, next);
  if (!wrote) sectionsInPlace.set(file, stamp, content);
  return wrote;
}

/**
 * Where our section is in a file's text (`end` just past its end marker), and its nonce: the
 * first begin marker whose end marker follows; undefined when there is none.
 */
function findSection(text: string): { start: number; end: number; nonce?: string } | undefined {
  for (const begin of text.matchAll(BEGIN_ALL)) {
    const after = begin.index + begin[0].length;
    const nonce = begin[1];
    const marker = nonce ? sectionMarkers(nonce).end : LEGACY_END;
    const at = nonce ? text.indexOf(marker, after) : text.lastIndexOf(marker);
    if (at >= after) return { start: begin.index, end: at + marker.length, ...(nonce ? { nonce } : {}) };
  }
  return undefined;
}

function newNonce(content: string): string {
  for (;;) {
    const nonce = randomBytes(8).toString('hex');
    if (!content.includes(nonce)) return nonce;
  }
}

/** The section content a file held, by the file's stamp then: before every turn the file is usually unchanged. */
const sectionsInPlace = createStampMemo<string>();

/**
 * Make `<linkDir>/<name>` point at each skill folder (relative links), and remove links of ours
 * that point at skills no longer installed. Real folders the user put there are left alone.
 */
export function syncSkillLinks(linkDir: string, skillsRoot: string, skills: ReadonlyArray<{ name: string; dir: string }>): void {
  // Adding, removing or replacing an entry of the link folder changes its stamp: while it stays
  // the same, the links are as the last sync left them, and syncing the same skills changes nothing.
  const key = JSON.stringify([skillsRoot, ...skills.map((s) => [s.name, s.dir])]);
  const before = readStamp(linkDir);
  if (linksInPlace.get(linkDir, before) === key) return;
  applySkillLinks(linkDir, skillsRoot, new Map(skills.map((s) => [s.name, path.relative(linkDir, s.dir)])));
  const after = readStamp(linkDir);
  // Remembered only when the sync found everything in place (nothing changed the folder meanwhile).
  if (after.stamp === before.stamp) linksInPlace.set(linkDir, after, key);
}

/** The skills (as syncSkillLinks' key) a link folder was in sync with, by the folder's stamp then. */
const linksInPlace = createStampMemo<string>();

function applySkillLinks(linkDir: string, skillsRoot: string, wanted: ReadonlyMap<string, string>): void {
  fs.mkdirSync(linkDir, { recursive: true });
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

/**
 * Keep our keys in a JSON settings file the user may edit too (Gemini CLI's `.gemini/settings.json`):
 * `ours` maps key paths (`['mcpServers', 'docs']`) to values; paths recorded in `ledger` last time
 * and no longer wanted are removed; every other key stays as the user wrote it. A file that is not
 * a JSON object is an error naming it, never overwritten.
 */
export function writeOwnedSettings(file: string, ledger: string, ours: ReadonlyArray<{ path: readonly string[]; value: unknown }>): boolean {
  const before = readJsonObject(ledger, { paths: [] }, '').paths;
  // Nothing of ours, now or before: the user's file is not even read (it may hold comments we could not keep).
  if (ours.length === 0 && (!Array.isArray(before) || before.length === 0)) return false;
  const current = readJsonObject(file, {}, `${file} is not plain JSON (comments cannot be kept when service adds its settings); fix or remove it`);
  const next = structuredClone(current) as Record<string, unknown>;
  const wanted = new Set(ours.map((o) => JSON.stringify(o.path)));
  for (const old of Array.isArray(before) ? before : []) {
    if (Array.isArray(old) && !wanted.has(JSON.stringify(old))) deleteAt(next, old.map(String));
  }
  for (const o of ours) setAt(next, o.path, o.value);
  // 0600: the settings may carry MCP servers' env and headers, resolved.
  const changed = JSON.stringify(next) !== JSON.stringify(current) && writeJsonIfChanged(file, next, { mode: SECRET_FILE_MODE });
  writeJsonIfChanged(ledger, { paths: ours.map((o) => o.path) });
  return changed;
}

function readJsonObject(file: string, fallback: Record<string, unknown>, corrupt: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  if (!corrupt) return fallback;
  throw new Error(corrupt);
}

function setAt(target: Record<string, unknown>, keys: readonly string[], value: unknown): void {
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const child = node[key];
    if (child === null || typeof child !== 'object' || Array.isArray(child)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  const last = keys.at(-1);
  if (last !== undefined) node[last] = value;
}

/** Remove a key, and the objects it leaves empty. */
function deleteAt(target: Record<string, unknown>, keys: readonly string[]): void {
  const [key, ...rest] = keys;
  if (key === undefined || !(key in target)) return;
  if (rest.length === 0) {
    delete target[key];
    return;
  }
  const child = target[key];
  if (child === null || typeof child !== 'object' || Array.isArray(child)) return;
  deleteAt(child as Record<string, unknown>, rest);
  if (Object.keys(child).length === 0) delete target[key];
}
