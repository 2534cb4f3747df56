import fs from 'node:fs';
import type { ProcessIdentity } from '../store/types.js';

/**
 * Everything an engine run started. The engine runs in its own process group, but the CLIs run
 * their tool shells in sessions of their own (setsid: measured for Claude Code, OpenCode and
 * Codex), and a shell whose parent died is re-parented away. So the tree is snapshotted while
 * the run goes on (descendants, members of the group, and of every session or group a tracked
 * process leads), and killing means signalling every tracked process that still exists.
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
}

interface ProcInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
  start: string;
  zombie: boolean;
}

export interface ProcessTreeOptions {
  /**
   * Processes known to belong to the tree already (a record made while an earlier run of ours
   * was alive); only those still alive with the same start time are taken.
   */
  known?: readonly ProcessIdentity[];
}

export function createProcessTree(rootPid: number, opts: ProcessTreeOptions = {}): ProcessTree {
  const tracked = new Map<number, string>(); // pid → start time
  const first = readProc(rootPid);
  const knownRoot = opts.known?.find((k) => k.pid === rootPid);
  if (first && (!knownRoot || knownRoot.start === first.start)) tracked.set(rootPid, first.start);
  for (const k of opts.known ?? []) {
    if (readProc(k.pid)?.start === k.start) tracked.set(k.pid, k.start);
  }
  // The group id is the root's pid: signal the group only while the root is the process we know
  // (or is gone, leaving its group id unused), never a later process that reused the pid.
  const rootStart = knownRoot?.start ?? first?.start;
  const groupIsOurs = () => {
    const now = readProc(rootPid);
    return rootStart !== undefined && (now === undefined || now.start === rootStart);
  };

  const refresh = (): boolean => {
    if (process.platform !== 'linux') return false;
    const table = readProcTable();
    const before = tracked.size;
    const ownGroup = groupIsOurs();
    let grew = true;
    while (grew) {
      grew = false;
      for (const p of table.values()) {
        if (tracked.has(p.pid) || p.zombie) continue;
        const related =
          (ownGroup && p.pgrp === rootPid) ||
          (tracked.has(p.ppid) && tracked.get(p.ppid) === table.get(p.ppid)?.start) ||
          tracked.has(p.session) ||
          tracked.has(p.pgrp);
        if (related) {
          tracked.set(p.pid, p.start);
          grew = true;
        }
      }
    }
    return tracked.size > before;
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
      const p = readProc(pid);
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
    refresh,
    tracked: () => [...tracked].map(([pid, start]) => ({ pid, start })),
    alive,
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
  const p = readProc(pid);
  return p && !p.zombie ? { pid, start: p.start } : undefined;
}

/** Whether the process with this identity still runs (a reused pid has another start time). */
export function isProcessAlive(id: ProcessIdentity): boolean {
  return identifyProcess(id.pid)?.start === id.start;
}

// --- internal ---

function parseStat(pid: number, stat: string): ProcInfo | undefined {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime ..."
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (rest.length < 20) return undefined;
  return { pid, zombie: rest[0] === 'Z' || rest[0] === 'X', ppid: Number(rest[1]), pgrp: Number(rest[2]), session: Number(rest[3]), start: rest[19] ?? '' };
}

function readProc(pid: number): ProcInfo | undefined {
  try {
    return parseStat(pid, fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

function readProcTable(): Map<number, ProcInfo> {
  const table = new Map<number, ProcInfo>();
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return table;
  }
  for (const e of entries) {
    const c = e.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const info = readProc(Number(e));
    if (info) table.set(info.pid, info);
  }
  return table;
}
