import type { ProcessIdentity } from '../store/types.js';
import { environHas, type ProcStat, readProcStat } from '../util/proc.js';
import { type Mark, oldest, readSnapshot, type Snapshot } from './proc-snapshot.js';

/**
 * Everything an engine run started. The engine runs in its own process group, but the CLIs run
 * their tool shells in sessions of their own (setsid: measured for Claude Code, OpenCode and
 * Codex), and a shell whose parent died is re-parented away. So the tree is snapshotted while
 * the run goes on (descendants, members of the group, and of every session or group a tracked
 * process leads), and killing means signalling every tracked process that still exists.
 *
 * A snapshot reads only processes created since the tree's last one. A process that existed then
 * and was not related cannot become related later (it cannot join a session created after it, a
 * group of another session, or get a new parent but a reaper), and pids are handed out in
 * increasing order (wrapping at pid_max), so the new processes are the pids after the last one
 * seen then, up to the last one handed out now. On a busy machine that is a few pids per run
 * instead of every process there is; a run whose engine started nothing reads none.
 */
export interface ProcessTree {
  /** Add the current descendants to the tracked set; true when it grew. */
  refresh(): boolean;
  /** Every process tracked so far, by identity (pid and start time). */
  tracked(): ProcessIdentity[];
  /** Tracked processes that still exist (pid reuse is ruled out by start time), zombies excluded. */
  alive(): number[];
  /** SIGTERM everything, SIGKILL after `graceMs`, and wait until nothing is left. */
  terminate(graceMs: number): Promise<boolean>;
  /**
   * End the tracked processes outside the root's own process group (tool shells run in sessions
   * of their own, and what they started), leaving the root and its group running: what a turn of
   * a resident engine left behind, as a per-turn run would have ended it.
   */
  terminateStrays(graceMs: number): Promise<void>;
}

export interface ProcessTreeOptions {
  /**
   * Processes known to belong to the tree already (a record made while an earlier run of ours
   * was alive); only those still alive with the same start time are taken. Such a tree is older
   * than this process knows, so its snapshots read every process.
   */
  known?: readonly ProcessIdentity[];
  /**
   * An environment entry (`NAME=value`) only this run's processes carry: a new process that holds
   * it belongs to the tree even when nothing else relates it (a background job whose shell exited
   * between two snapshots, re-parented away, in a session nobody tracked). A process that clears
   * its environment (`env -i`) is not found this way.
   */
  marker?: string;
}

interface TreeInternals extends ProcessTree {
  readonly mark: Mark | undefined;
  refreshFrom(snapshot: Snapshot): boolean;
}

export function createProcessTree(rootPid: number, opts: ProcessTreeOptions = {}): ProcessTree {
  return createTree(rootPid, opts);
}

function createTree(rootPid: number, opts: ProcessTreeOptions): TreeInternals {
  const tracked = new Map<number, string>(); // pid → start time
  const first = readProcStat(rootPid);
  const knownRoot = opts.known?.find((k) => k.pid === rootPid);
  if (first && (!knownRoot || knownRoot.start === first.start)) tracked.set(rootPid, first.start);
  for (const k of opts.known ?? []) {
    if (readProcStat(k.pid)?.start === k.start) tracked.set(k.pid, k.start);
  }
  // A fresh run's processes all came after its root; a recorded one's may be anywhere.
  let mark: Mark | undefined = opts.known || process.platform !== 'linux' ? undefined : { after: rootPid, retry: [] };
  // The group id is the root's pid: signal the group only while the root is the process we know
  // (or is gone, leaving its group id unused), never a later process that reused the pid.
  const rootStart = knownRoot?.start ?? first?.start;
  const groupIsOurs = () => {
    const now = readProcStat(rootPid);
    return rootStart !== undefined && (now === undefined || now.start === rootStart);
  };

  const refreshFrom = ({ table, through, missing }: Snapshot): boolean => {
    const before = tracked.size;
    adoptRelated(table, tracked, { rootPid, ownGroup: groupIsOurs(), marker: opts.marker });
    if (mark) mark = through === undefined ? undefined : { after: through, retry: missing };
    return tracked.size > before;
  };

  const refresh = (): boolean => {
    if (process.platform !== 'linux') return false;
    return refreshFrom(readSnapshot(mark));
  };

  const alive = (): number[] => {
    if (process.platform !== 'linux') {
      try {
        process.kill(-rootPid, 0);
        return [rootPid];
      } catch {
        return [];
      }
    }
    const out: number[] = [];
    for (const [pid, start] of tracked) {
      const p = readProcStat(pid);
      if (p && !p.zombie && p.start === start) out.push(pid);
    }
    return out;
  };

  const signalAll = (signal: NodeJS.Signals) => {
    if (groupIsOurs()) {
      try {
        process.kill(-rootPid, signal);
      } catch {
        // the group is gone
      }
    }
    for (const pid of alive()) {
      try {
        process.kill(pid, signal);
      } catch {
        // exited meanwhile
      }
    }
  };

  const waitGone = async (ms: number) => {
    const end = Date.now() + ms;
    for (;;) {
      refresh();
      if (alive().length === 0) return true;
      if (Date.now() >= end) return false;
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  return {
    get mark() {
      return mark;
    },
    refreshFrom,
    refresh,
    tracked: () => [...tracked].map(([pid, start]) => ({ pid, start })),
    alive,
    terminateStrays(graceMs) {
      refresh();
      return endStrays(() => alive().filter((pid) => pid !== rootPid && readProcStat(pid)?.pgrp !== rootPid), graceMs);
    },
    async terminate(graceMs) {
      refresh();
      if (alive().length === 0) return true;
      signalAll('SIGTERM');
      if (await waitGone(graceMs)) return true;
      refresh();
      signalAll('SIGKILL');
      return waitGone(5_000);
    },
  };
}

/**
 * Snapshots while runs go on, one per second for all of them: one read of the processes created
 * since the oldest tree's last snapshot serves every tree. `onGrow` hears of each tree that found
 * more processes. Returns the function that stops watching this tree.
 */
export function watchTree(tree: ProcessTree, onGrow: () => void): () => void {
  watched.set(tree as TreeInternals, onGrow);
  if (!ticker) {
    ticker = setInterval(snapshotWatched, SNAPSHOT_MS);
    ticker.unref();
  }
  return () => {
    watched.delete(tree as TreeInternals);
    if (watched.size === 0 && ticker) {
      clearInterval(ticker);
      ticker = undefined;
    }
  };
}

/**
 * Trees still running when this process exits (a crash, an uncaught error) are killed on the way
 * out. This set is process-wide on purpose: process exit is process-wide.
 */
const liveTrees = new Set<ProcessTree>();
let exitHookInstalled = false;

export function trackTree(tree: ProcessTree): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const t of liveTrees) {
        for (const pid of t.alive()) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }
    });
  }
  liveTrees.add(tree);
  return () => liveTrees.delete(tree);
}

/** A live process by identity (pid and start time), or undefined when there is none (or not on Linux). */
export function identifyProcess(pid: number): ProcessIdentity | undefined {
  const p = readProcStat(pid);
  return p && !p.zombie ? { pid, start: p.start } : undefined;
}

/** Whether the process with this identity still runs (a reused pid has another start time). */
export function isProcessAlive(id: ProcessIdentity): boolean {
  return identifyProcess(id.pid)?.start === id.start;
}

// --- internal ---

const SNAPSHOT_MS = 1_000;
const watched = new Map<TreeInternals, () => void>();
let ticker: NodeJS.Timeout | undefined;

function snapshotWatched(): void {
  if (process.platform !== 'linux' || watched.size === 0) return;
  let mark: Mark | undefined;
  for (const tree of watched.keys()) {
    if (!tree.mark) {
      mark = undefined;
      break;
    }
    mark = mark ? { after: oldest(mark.after, tree.mark.after), retry: [...mark.retry, ...tree.mark.retry] } : tree.mark;
  }
  const snapshot = readSnapshot(mark);
  for (const [tree, onGrow] of [...watched]) {
    if (tree.refreshFrom(snapshot)) onGrow();
  }
}

/**
 * Adds to `tracked` every process of `table` related to it: in the root's group (while the group is
 * ours), a child of a tracked process, in a tracked session or group, or carrying the run's marker;
 * again until nothing more is added (a grandchild listed before its parent).
 */
function adoptRelated(table: Map<number, ProcStat>, tracked: Map<number, string>, o: { rootPid: number; ownGroup: boolean; marker: string | undefined }): void {
  // A tracked parent's identity, from the snapshot or (created before it) read once now.
  const parents = new Map<number, string | undefined>();
  const parentIsTracked = (ppid: number) => {
    const start = tracked.get(ppid);
    if (start === undefined) return false;
    if (!parents.has(ppid)) parents.set(ppid, (table.get(ppid) ?? readProcStat(ppid))?.start);
    return parents.get(ppid) === start;
  };
  // Read once per refresh, only for processes nothing else relates.
  const marked = new Map<number, boolean>();
  const carriesMarker = (pid: number) => {
    if (!o.marker) return false;
    if (!marked.has(pid)) marked.set(pid, environHas(pid, o.marker));
    return marked.get(pid) === true;
  };
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of table.values()) {
      if (tracked.has(p.pid) || p.zombie || p.thread) continue;
      const related = (o.ownGroup && p.pgrp === o.rootPid) || parentIsTracked(p.ppid) || tracked.has(p.session) || tracked.has(p.pgrp) || carriesMarker(p.pid);
      if (related) {
        tracked.set(p.pid, p.start);
        grew = true;
      }
    }
  }
}

/** SIGTERM the processes `strays` lists, then SIGKILL what is left of them after `graceMs`. */
async function endStrays(strays: () => number[], graceMs: number): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of strays()) {
      try {
        process.kill(pid, sig);
      } catch {
        // exited meanwhile
      }
    }
  };
  if (strays().length === 0) return;
  signal('SIGTERM');
  const end = Date.now() + graceMs;
  while (strays().length > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
  signal('SIGKILL');
}
