import fs from 'node:fs';

/**
 * Process-group bookkeeping for the runner. Engines run in their own group (detached), so one
 * signal reaches the CLI, its shells, MCP servers and any grandchild.
 */

/** Signal every process of the group; false when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Live (non-zombie) members of a process group. On Linux this reads /proc, because an orphaned
 * zombie that nobody reaps (containers without an init) would make `kill(-pgid, 0)` report the
 * group as alive forever.
 */
export function groupMembers(pgid: number): number[] {
  if (process.platform !== 'linux') {
    try {
      process.kill(-pgid, 0);
      return [pgid];
    } catch {
      return [];
    }
  }
  const members: number[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] !== 'Z' && Number(fields[2]) === pgid) members.push(Number(entry));
  }
  return members;
}

/** Wait until the group has no live member or the deadline passes; true when it is gone. */
export async function waitGroupGone(pgid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (groupMembers(pgid).length === 0) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** SIGTERM the group, SIGKILL after `graceMs`, and wait until nothing of it is left. */
export async function terminateGroup(pgid: number, graceMs: number): Promise<boolean> {
  if (groupMembers(pgid).length === 0) return true;
  signalGroup(pgid, 'SIGTERM');
  if (await waitGroupGone(pgid, graceMs)) return true;
  signalGroup(pgid, 'SIGKILL');
  return waitGroupGone(pgid, 5_000);
}

/**
 * Groups still running when this process exits (a crash, an uncaught error) are killed on the
 * way out. This set is process-wide on purpose: process exit is process-wide.
 */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

export function trackGroup(pgid: number): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const g of liveGroups) signalGroup(g, 'SIGKILL');
    });
  }
  liveGroups.add(pgid);
  return () => liveGroups.delete(pgid);
}
