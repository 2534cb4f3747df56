import { readProcStat } from '../util/proc.js';

/**
 * Whether a process with this pid still runs. `kill(pid, 0)` alone calls a zombie alive (a
 * gateway killed with SIGKILL stays one until its parent reaps it), so on Linux the state in
 * /proc decides; elsewhere the signal probe does. EPERM means it exists but belongs to someone else.
 */
export function isPidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform !== 'linux') return true; // no /proc: the signal probe said it exists
  const stat = readProcStat(pid);
  return stat === undefined || !stat.zombie;
}
