import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Each turn's outbox: a fresh folder under `.service/outbox/` that the engine is told about
 * (`SERVICE_OUTBOX` in its environment, described by the file-transfer skill). What the agent
 * leaves there is collected when the turn ends, and the folder is removed whatever happened.
 * Only regular files directly inside it count: folders, links (never followed) and anything
 * else are reported as skipped.
 */
export interface Outbox {
  readonly dir: string;
  /** The files left in it, by name. */
  collect(): OutboxContents;
  /** Remove the folder and whatever is still in it. */
  remove(): void;
}

export interface OutboxFile {
  /** The name as the agent wrote it. */
  name: string;
  path: string;
  size: number;
}

export interface OutboxContents {
  files: OutboxFile[];
  skipped: Array<{ name: string; why: string }>;
}

export function openOutbox(root: string): Outbox {
  // The name starts with the creation time (see removeStaleOutboxes); the rest comes from
  // randomUUID, which draws on a cached pool of random bytes instead of a system call per turn.
  const id = randomUUID();
  const dir = path.join(root, `${Date.now().toString(36)}-${id.slice(0, 8)}${id.slice(9, 13)}`);
  // One mkdir when the root exists (every turn but the first); the recursive one only when it failed.
  try {
    fs.mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    fs.mkdirSync(root, { recursive: true, mode: 0o700 });
    fs.mkdirSync(dir, { mode: 0o700 });
  }
  return {
    dir,
    collect() {
      const out: OutboxContents = { files: [], skipped: [] };
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        return out; // the agent removed the folder itself
      }
      for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
        const file = path.join(dir, e.name);
        const st = fs.lstatSync(file, { throwIfNoEntry: false });
        if (!st) continue;
        if (st.isFile()) out.files.push({ name: e.name, path: file, size: st.size });
        else
          out.skipped.push({
            name: e.name,
            why: st.isSymbolicLink() ? 'a link (links are not followed)' : st.isDirectory() ? 'a folder' : 'not a regular file',
          });
      }
      return out;
    },
    remove() {
      // Most turns leave the folder empty: one rmdir, without the recursive walk (which is JavaScript).
      try {
        fs.rmdirSync(dir);
        return;
      } catch {
        // not empty, or already gone
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Outboxes of turns that never ended (the process was killed), removed at start. Only old ones
 * (the folder name starts with its creation time): another process on the same directory
 * (`service chat` beside the gateway) may be running a turn right now.
 */
export function removeStaleOutboxes(root: string, cutoff: number): void {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) {
    const created = Number.parseInt(name.split('-')[0] ?? '', 36);
    if (!(created >= cutoff)) fs.rmSync(path.join(root, name), { recursive: true, force: true });
  }
}
