import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * Replace a file so that readers see either the old or the new content, never a torn one:
 * write a temp file in the same directory, fsync it, rename over the target, fsync the directory.
 * The target's permission bits are kept; `mode` applies to new files.
 */
export function writeFileAtomic(file: string, content: string | Buffer, opts: { mode?: number } = {}): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true });
  let mode = opts.mode ?? 0o644;
  try {
    mode = fs.statSync(file).mode & 0o777;
  } catch {
    // new file: keep the requested mode
  }
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = fs.openSync(tmp, 'w', mode);
  try {
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

/** Write only when the content differs (context files are regenerated before every turn). */
export function writeFileIfChanged(file: string, content: string, opts: { mode?: number } = {}): boolean {
  try {
    if (fs.readFileSync(file, 'utf8') === content) return false;
  } catch {
    // missing: write it
  }
  writeFileAtomic(file, content, opts);
  return true;
}
