import fs from 'node:fs';

/**
 * Whether a process with this pid still runs. `kill(pid, 0)` alone calls a zombie alive (a
 * gateway killed with SIGKILL stays one until its parent reaps it), so on Linux the state in
 * /proc decides; elsewhere the signal probe does. EPERM means it exists but belongs to someone else.
 */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true; // no /proc (macOS): the signal probe said it exists
  }
}
