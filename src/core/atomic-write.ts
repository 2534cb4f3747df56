import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createStampMemo, readStamp } from './util/file-stamp.js';

/**
 * Replace a file so that readers see either the old or the new content, never a torn one:
 * write a temp file in the same directory, fsync it, rename over the target, fsync the directory.
 * With `mode` the file gets exactly that mode, also when it existed with another one (files
 * holding secrets pass 0o600); without, an existing file keeps its mode and a new one is 0644.
 * The temp file is created 0600 and given its mode before any content is written, so a secret is
 * never readable by others, not even for a moment.
 */
export function writeFileAtomic(file: string, content: string | Buffer, opts: { mode?: number } = {}): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true });
  let mode = opts.mode;
  if (mode === undefined) {
    try {
      mode = fs.statSync(file).mode & 0o777;
    } catch {
      mode = 0o644;
    }
  }
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    fs.fchmodSync(fd, mode); // exact: the umask does not apply
    fs.writeFileSync(fd, content);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  try {
    const dfd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(dfd);
    } finally {
      fs.closeSync(dfd);
    }
  } catch {
    // some filesystems refuse fsync on directories; the rename itself is still atomic
  }
}

/** A temp file written and synced beside its target, waiting to replace it. */
export interface StagedWrite {
  /** Rename it over the target now (synchronously: a caller can check the target just before); resolves once the directory is synced. */
  commit(): Promise<void>;
  discard(): void;
}

/**
 * writeFileAtomic in two halves, the slow one off the event loop: writing and syncing the temp
 * file waits on the disk in the thread pool, not on the main thread; the rename is left to the
 * caller, which may first check that nothing replaced the target meanwhile.
 */
export async function stageFileAtomic(file: string, content: string, opts: { mode?: number } = {}): Promise<StagedWrite> {
  const dir = path.dirname(file);
  const existing = await fs.promises.stat(file).catch(() => undefined);
  const mode = opts.mode ?? (existing ? existing.mode & 0o777 : 0o644);
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const handle = await fs.promises.open(tmp, 'wx', 0o600);
  try {
    await handle.chmod(mode); // exact: the umask does not apply
    await handle.writeFile(content);
    await handle.sync();
  } catch (err) {
    await handle.close();
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  await handle.close();
  return {
    commit() {
      try {
        fs.renameSync(tmp, file);
      } catch (err) {
        fs.rmSync(tmp, { force: true });
        throw err;
      }
      return syncDirectory(dir);
    },
    discard: () => fs.rmSync(tmp, { force: true }),
  };
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, 'r').catch(() => undefined);
  // Some filesystems refuse fsync on directories; the rename itself is still atomic.
  await handle?.sync().catch(() => undefined);
  await handle?.close();
}

/**
 * Write only when the content differs (context files are regenerated before every turn). With
 * `mode`, an unchanged file that has another mode (written by an older version) gets it too.
 */
export function writeFileIfChanged(file: string, content: string, opts: { mode?: number } = {}): boolean {
  // Before every turn the file is usually as we left it: its stamp (which includes the mode)
  // tells so without reading it.
  const stamp = readStamp(file);
  const known = onDisk.get(file, stamp);
  if (known?.content === content && (opts.mode === undefined || known.mode === opts.mode)) return false;
  try {
    if (fs.readFileSync(file, 'utf8') === content) {
      if (opts.mode !== undefined && (fs.statSync(file).mode & 0o777) !== opts.mode) fs.chmodSync(file, opts.mode);
      else onDisk.set(file, stamp, { content, mode: opts.mode });
      return false;
    }
  } catch {
    // missing: write it
  }
  writeFileAtomic(file, content, opts);
  return true;
}

/** What writeFileIfChanged found in a file (and the mode it had, when one was asked for), by the file's stamp then. */
const onDisk = createStampMemo<{ content: string; mode: number | undefined }>();
