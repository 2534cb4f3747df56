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

/**
 * One value per path, remembered with the stamp the path had when it was computed, for work
 * repeated before every turn (a context file, skill links) that only has to be done again when
 * something changed. A value is only remembered from a settled stamp: a change within the same
 * clock tick could otherwise leave the stamp as it was.
 */
export interface StampMemo<T> {
  /** The value remembered for `path` when its stamp is still `stamp`. */
  get(path: string, stamp: FileStamp): T | undefined;
  /** Remember `value` for `path` at `stamp` (ignored when the stamp is not settled or `missing`; then forgotten). */
  set(path: string, stamp: FileStamp, value: T): void;
}

/** Past this many paths the oldest is forgotten: a process serving many directories stays bounded. */
const MEMO_PATHS = 256;

export function createStampMemo<T>(): StampMemo<T> {
  const memo = new Map<string, { stamp: string; value: T }>();
  return {
    get(path, stamp) {
      const hit = memo.get(path);
      return hit && stamp.settled && hit.stamp === stamp.stamp ? hit.value : undefined;
    },
    set(path, stamp, value) {
      memo.delete(path);
      // Nor from `missing`: what was computed may come from a file created after the stat, and
      // the stamp would be `missing` again once it is removed.
      if (!stamp.settled || stamp.stamp === 'missing') return;
      memo.set(path, { stamp: stamp.stamp, value });
      if (memo.size > MEMO_PATHS) memo.delete(memo.keys().next().value as string);
    },
  };
}
