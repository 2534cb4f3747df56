import { listPids, type ProcStat, readLastPid, readPidMax, readProcStat } from '../util/proc.js';

/*
 * A process tree's snapshots read only the pids handed out since its last one (pids come in
 * increasing order, wrapping at pid_max), so a turn whose engine started nothing reads one or two.
 */

/** Processes read by one snapshot: the pids created since a tree's last one (or every process). */
export interface Snapshot {
  table: Map<number, ProcStat>;
  /** The last pid handed out when the snapshot began; the next one starts after it. */
  through: number | undefined;
  /**
   * The newest pids of the range that had no process yet: a pid is handed out an instant before
   * its process shows in /proc, so the next snapshot tries these again.
   */
  missing: number[];
}

/** Where a tree's next snapshot starts: after `after` (plus `retry`), or everywhere when undefined. */
export interface Mark {
  after: number;
  retry: readonly number[];
}

/** Past this many new pids, listing /proc is cheaper than trying each one. */
const MAX_PIDS_TRIED = 1_024;
/** How many of the newest pids of a range are tried again when they had no process yet. */
const RETRY_NEWEST = 64;

/** The earlier of two pids in the order they were handed out (a pid far below the other came after a wrap). */
export function oldest(a: number, b: number): number {
  return Math.abs(a - b) > readPidMax() / 2 ? Math.max(a, b) : Math.min(a, b);
}

/** The processes created after `mark` (every process without one). */
export function readSnapshot(mark: Mark | undefined): Snapshot {
  const through = readLastPid();
  const table = new Map<number, ProcStat>();
  const missing: number[] = [];
  const add = (pid: number) => {
    const info = readProcStat(pid);
    if (info) table.set(pid, info);
    return info !== undefined;
  };
  if (!mark || through === undefined) {
    for (const pid of listPids()) add(pid);
    return { table, through, missing };
  }
  for (const pid of mark.retry) add(pid);
  const max = readPidMax();
  const range = pidsAfter(mark.after, through, max, MAX_PIDS_TRIED);
  if (!range) {
    for (const pid of listPids()) if (inRange(pid, mark.after, through)) add(pid);
    // The newest pids of the range that were not listed are tried again next time.
    const newest = pidsAfter(through - RETRY_NEWEST < 1 ? max - 1 - (RETRY_NEWEST - through) : through - RETRY_NEWEST, through, max, RETRY_NEWEST) ?? [];
    for (const pid of newest) if (!table.has(pid)) missing.push(pid);
    return { table, through, missing };
  }
  range.forEach((pid, i) => {
    if (!add(pid) && range.length - i <= RETRY_NEWEST) missing.push(pid);
  });
  return { table, through, missing };
}

/**
 * The pids the kernel hands out after `after` up to `through`, in that order: the cyclic range
 * (after, through], where after pid_max - 1 numbering starts again low (at 300 on Linux; from 1
 * here, which only adds pids that do not exist). Undefined when there are more than `limit`.
 */
export function pidsAfter(after: number, through: number, pidMax: number, limit: number): number[] | undefined {
  const count = through >= after ? through - after : pidMax - 1 - after + through;
  if (count > limit) return undefined;
  const pids: number[] = [];
  for (let i = 0, pid = after; i < count; i++) {
    pid = pid + 1 >= pidMax ? 1 : pid + 1;
    pids.push(pid);
  }
  return pids;
}

function inRange(pid: number, after: number, through: number): boolean {
  return through >= after ? pid > after && pid <= through : pid > after || pid <= through;
}
