import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeFileAtomic } from '../atomic-write.js';
import { fleetEntryFileName, parseFleetEntry, type FleetEntry } from './entry.js';
import { isPidAlive } from './process-alive.js';
import { readStamp } from '../util/file-stamp.js';

/**
 * The local fleet registry: a per-user directory holding one JSON file per running gateway.
 * No daemon and no lock: each gateway writes only its own file (atomically), and readers skip
 * and delete the files of processes that are gone, so a gateway killed with SIGKILL disappears
 * from every list the next time anyone reads it.
 */
export interface FleetDirectory {
  readonly dir: string;
  /** Write (or rewrite) this gateway's entry. */
  register(entry: FleetEntry): FleetRegistration;
  /** Entries of live processes, oldest first; files of dead processes are removed on the way. */
  list(): FleetEntry[];
}

export interface FleetRegistration {
  readonly file: string;
  /** Rewrite the entry (the name or role changed in service.yaml). */
  update(entry: FleetEntry): void;
  /** Remove the entry; safe to call more than once. */
  remove(): void;
}

export interface FleetDirectoryOptions {
  dir: string;
  /** Injected so tests can declare a pid dead without killing anything. */
  isAlive?: (pid: number) => boolean;
  /** The clock the folder's change time is judged by (tests move it on). */
  now?: () => number;
}

/** Documented default `~/.service/fleet/`; `SERVICE_FLEET_DIR` overrides it (tests use a temp one). */
export function resolveFleetDir(env: NodeJS.ProcessEnv, home: string = os.homedir()): string {
  const custom = env.SERVICE_FLEET_DIR?.trim();
  return path.resolve(custom ? custom : path.join(home, '.service', 'fleet'));
}

export function createFleetDirectory(opts: FleetDirectoryOptions): FleetDirectory {
  const dir = path.resolve(opts.dir);
  const alive = opts.isAlive ?? isPidAlive;
  const now = opts.now ?? Date.now;

  let read: { stamp: string; found: Array<{ file: string; entry: FleetEntry }> } | undefined;

  const write = (file: string, entry: FleetEntry) => {
    // Other users on the machine have no business reading which assistants run and where.
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileAtomic(file, `${JSON.stringify(entry, null, 2)}\n`, { mode: 0o600 });
  };

  return {
    dir,
    register(entry) {
      const file = path.join(dir, fleetEntryFileName(entry.pid, entry.port));
      write(file, entry);
      let removed = false;
      return {
        file,
        update(next) {
          if (!removed) write(file, next);
        },
        remove() {
          removed = true;
          fs.rmSync(file, { force: true });
        },
      };
    },
    list() {
      // The folder changes whenever an entry is written (atomically: a rename), replaced or
      // removed, so its files are read and parsed again only then; liveness is checked every time.
      const { stamp, settled } = readStamp(dir, now());
      const found = read?.stamp === stamp ? read.found : readEntries(dir);
      read = settled ? { stamp, found } : undefined;
      const entries: FleetEntry[] = [];
      for (const { file, entry } of found) {
        if (!alive(entry.pid)) {
          fs.rmSync(file, { force: true });
          continue;
        }
        entries.push(entry);
      }
      return entries.sort((a, b) => compareIsoTimes(a.startedAt, b.startedAt) || a.port - b.port);
    },
  };
}

// --- internal ---

/** The parsed entry files of the folder (none when it does not exist yet). */
function readEntries(dir: string): Array<{ file: string; entry: FleetEntry }> {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return []; // no gateway has registered yet
  }
  const found: Array<{ file: string; entry: FleetEntry }> = [];
  for (const name of names) {
    // Dot files are writeFileAtomic's temp files (a writer may be mid-write or have crashed).
    if (name.startsWith('.') || !name.endsWith('.json')) continue;
    const file = path.join(dir, name);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue; // removed between readdir and read
    }
    const entry = parseFleetEntry(text);
    if (entry) found.push({ file, entry }); // else not ours to delete: maybe a newer format or another tool's file
  }
  return found;
}

/** ISO 8601 times (as written by every gateway) compare by code point; anything else by collation. */
function compareIsoTimes(a: string, b: string): number {
  if (ISO_TIME.test(a) && ISO_TIME.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return a.localeCompare(b);
}
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
