import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../atomic-write.js';
import type { ProcessIdentity } from '../../store/types.js';
import { readProcText } from '../../util/proc.js';
import { createProcessTree, identifyProcess, isProcessAlive } from '../process-tree.js';

/**
 * A warm process outlives the turn that started it, so the running-turn records (which let the
 * next start reap what a killed gateway left running) do not cover it between turns. Each one is
 * on record in `.service/warm/` instead, with its owner (this process, by pid and start time) and
 * every process of its tree: the next start of the assistant ends the ones whose owner is gone,
 * and `service status` lists the live ones with their memory.
 */
export interface WarmRecord {
  owner: ProcessIdentity;
  engine: string;
  sessionKey: string;
  startedAt: number;
  processes: ProcessIdentity[];
}

export interface WarmRecordFile {
  /** The tree grew (a snapshot found more of it). */
  update(processes: ProcessIdentity[]): void;
  remove(): void;
}

export function warmRecordsDir(stateDir: string): string {
  return path.join(stateDir, 'warm');
}

/** Put a warm process on record; without process identities (not Linux) nothing can be recorded. */
export function recordWarmProcess(stateDir: string, record: Omit<WarmRecord, 'owner'>): WarmRecordFile {
  const owner = identifyProcess(process.pid);
  const root = record.processes[0];
  if (!owner || !root) return { update: () => undefined, remove: () => undefined };
  const dir = warmRecordsDir(stateDir);
  const file = path.join(dir, `${owner.pid}-${root.pid}.json`);
  const write = (processes: ProcessIdentity[]) => {
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileAtomic(file, JSON.stringify({ ...record, owner, processes }));
    } catch {
      // best effort: the exit hook still ends the tree when this process exits normally
    }
  };
  write(record.processes);
  return { update: write, remove: () => fs.rmSync(file, { force: true }) };
}

/** The records in the folder, with whether their owner still runs. Unreadable files are skipped. */
export function readWarmRecords(stateDir: string): Array<WarmRecord & { file: string; ownerAlive: boolean }> {
  const dir = warmRecordsDir(stateDir);
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const file = path.join(dir, name);
    try {
      const r = JSON.parse(fs.readFileSync(file, 'utf8')) as WarmRecord;
      if (!r.owner || !Array.isArray(r.processes)) return [];
      return [{ ...r, file, ownerAlive: isProcessAlive(r.owner) }];
    } catch {
      return [];
    }
  });
}

/** End the warm processes an owner that is gone left running (a SIGKILL, a crash); returns how many ran. */
export async function reapWarmLeftovers(stateDir: string, graceMs = 2_000): Promise<number> {
  let stopped = 0;
  for (const record of readWarmRecords(stateDir)) {
    if (record.ownerAlive) continue;
    const [root] = record.processes;
    if (root) {
      const tree = createProcessTree(root.pid, { known: record.processes });
      tree.refresh();
      const running = tree.alive().length;
      if (running > 0) {
        stopped += running;
        await tree.terminate(graceMs);
      }
    }
    fs.rmSync(record.file, { force: true });
  }
  return stopped;
}

/** Resident memory of a process tree's live members, in bytes (0 where /proc cannot tell). */
export function treeRssBytes(processes: readonly ProcessIdentity[]): number {
  let total = 0;
  for (const p of processes) {
    if (!isProcessAlive(p)) continue;
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(readProcText(`/proc/${p.pid}/status`) ?? '')?.[1];
    total += kb ? Number(kb) * 1024 : 0;
  }
  return total;
}
