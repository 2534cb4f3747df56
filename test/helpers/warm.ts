import fs from 'node:fs';

/** What the warm-engine tests read of processes: direct children, and whether a pid runs (not a zombie). */
export function childPids(parent: number): number[] {
  const out: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const stat = readStat(Number(e));
    if (stat && stat.ppid === parent && !stat.zombie) out.push(Number(e));
  }
  return out;
}

export function isAlive(pid: number): boolean {
  const stat = readStat(pid);
  return stat !== undefined && !stat.zombie;
}

function readStat(pid: number): { ppid: number; zombie: boolean } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), zombie: f[0] === 'Z' || f[0] === 'X' };
  } catch {
    return undefined;
  }
}
