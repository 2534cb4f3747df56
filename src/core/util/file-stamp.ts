import fs from 'node:fs';

/**
 * What one stat says about a file or folder: inode, size, modification and change times. An
 * edit, a replacement (a new inode), an entry added to or removed from a folder all change it,
 * so a result computed from the content can be reused while the stamp stays the same.
 *
 * Timestamps come from a coarse clock: two changes within one tick can leave the same times. A
 * stamp younger than RACY_MS is therefore `settled: false`, and callers do not reuse anything
 * computed from it.
 */
export interface FileStamp {
  /** `missing` when there is nothing at the path. */
  stamp: string;
  settled: boolean;
}

const RACY_MS = 1_000;

export function readStamp(file: string, now: number = Date.now()): FileStamp {
  let st: fs.BigIntStats | undefined;
  try {
    st = fs.statSync(file, { bigint: true, throwIfNoEntry: false });
  } catch {
    return { stamp: 'unreadable', settled: false }; // never reused
  }
  if (!st) return { stamp: 'missing', settled: true };
  const changedMs = Number(st.ctimeNs / 1_000_000n);
  return {
    stamp: `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.mode}`,
    settled: now - changedMs > RACY_MS,
  };
}

/** The stamps of several paths as one string, settled only when every one is. */
export function readStamps(files: readonly string[], now: number = Date.now()): FileStamp {
  let settled = true;
  const parts: string[] = [];
  for (const f of files) {
    const s = readStamp(f, now);
    parts.push(s.stamp);
    settled &&= s.settled;
  }
  return { stamp: parts.join('|'), settled };
}
