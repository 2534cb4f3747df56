import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { formatSizeAndLimit, mimeTypeOf, toSafeFileName } from './file-names.js';
import type { OutboxContents } from './outbox.js';

/**
 * Files the agent sent, kept for delivery: moved out of the turn's outbox into
 * `.service/files/<id>/<safe name>`, where channels read them to upload and HTTP clients download
 * them (GET /api/files/:id/:name), for `keepMs` (24 h); older ones are removed at start and
 * whenever new ones are kept. Reading never follows a link.
 */
export const SENT_FILE_LIMITS = { maxCount: 10, maxBytes: 100 * 1024 * 1024, keepMs: 24 * 3_600_000 } as const;

/** One file of a reply: kept (`id`, `path`), or refused with `error` (too big, too many, empty). */
export interface SentFile {
  name: string;
  size: number;
  mimeType: string;
  id?: string;
  path?: string;
  error?: string;
}

export interface OpenedFile {
  name: string;
  size: number;
  mimeType: string;
  /** An open descriptor on the regular file; the caller closes it (a read stream does). */
  fd: number;
}

export interface SentFiles {
  readonly dir: string;
  /** Move what an outbox holds into the kept files; one entry per file, in name order. */
  keep(contents: OutboxContents): SentFile[];
  /** A kept file that has not expired, or undefined. */
  open(id: string, name: string): OpenedFile | undefined;
  /** Remove kept files older than the keep time; returns how many. */
  prune(): number;
}

const ID = /^[A-Za-z0-9_-]{16,64}$/;

export function createSentFiles(opts: { dir: string; now?: () => number; keepMs?: number }): SentFiles {
  const now = opts.now ?? Date.now;
  const keepMs = opts.keepMs ?? SENT_FILE_LIMITS.keepMs;
  const expired = (mtimeMs: number) => now() - mtimeMs > keepMs;

  const prune = (): number => {
    let names: string[];
    try {
      names = fs.readdirSync(opts.dir);
    } catch {
      return 0;
    }
    let n = 0;
    for (const name of names) {
      const st = fs.lstatSync(path.join(opts.dir, name), { throwIfNoEntry: false });
      if (st && !expired(st.mtimeMs)) continue;
      fs.rmSync(path.join(opts.dir, name), { recursive: true, force: true });
      n++;
    }
    return n;
  };

  return {
    dir: opts.dir,
    keep(contents) {
      if (contents.files.length === 0) return [];
      prune();
      return contents.files.map((f, i): SentFile => {
        const name = toSafeFileName(f.name);
        const base = { name, size: f.size, mimeType: mimeTypeOf(name) };
        if (i >= SENT_FILE_LIMITS.maxCount) return { ...base, error: `not sent: at most ${SENT_FILE_LIMITS.maxCount} files go with one reply` };
        if (f.size === 0) return { ...base, error: 'not sent: the file is empty' };
        if (f.size > SENT_FILE_LIMITS.maxBytes) {
          const shown = formatSizeAndLimit(f.size, SENT_FILE_LIMITS.maxBytes);
          return { ...base, error: `not sent: ${shown.size} is over the limit of ${shown.limit}` };
        }
        const id = randomBytes(16).toString('base64url');
        const home = path.join(opts.dir, id);
        try {
          fs.mkdirSync(home, { recursive: true, mode: 0o700 });
          const dest = path.join(home, name);
          fs.renameSync(f.path, dest); // a rename moves a link as a link; the check below removes anything else
          const st = fs.lstatSync(dest);
          if (!st.isFile()) {
            fs.rmSync(home, { recursive: true, force: true });
            return { ...base, error: 'not sent: not a regular file' };
          }
          const t = new Date(now());
          fs.utimesSync(home, t, t); // the keep time starts now, whatever the file's own dates
          return { ...base, size: st.size, id, path: dest };
        } catch (err) {
          fs.rmSync(home, { recursive: true, force: true });
          return { ...base, error: `not sent: could not keep it (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
        }
      });
    },
    open(id, name) {
      if (!ID.test(id) || name !== toSafeFileName(name)) return undefined;
      const home = path.join(opts.dir, id);
      const st = fs.lstatSync(home, { throwIfNoEntry: false });
      if (!st?.isDirectory() || expired(st.mtimeMs)) return undefined;
      let fd: number;
      try {
        fd = fs.openSync(path.join(home, name), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      } catch {
        return undefined;
      }
      const file = fs.fstatSync(fd);
      if (!file.isFile()) {
        fs.closeSync(fd);
        return undefined;
      }
      return { name, size: file.size, mimeType: mimeTypeOf(name), fd };
    },
    prune,
  };
}
