import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { AppError } from '../errors.js';
import { MIGRATIONS } from './migrations.js';

/**
 * Backups of the SQLite store (`.service/state.db`) through SQLite's online backup API
 * (better-sqlite3's `db.backup()`): a consistent copy of the database as of one moment, taken
 * while a gateway keeps writing (WAL: readers never block the writer, and the copy includes
 * what is still in the write-ahead log). A backup is one self-contained file (rollback journal
 * mode, no -wal beside it), mode 0600, checked (`quick_check`) before it is put in place.
 */
export interface StoreFileSummary {
  file: string;
  bytes: number;
  /** The store's schema version (its migrations applied). */
  schemaVersion: number;
  /** Rows per table of what a restore brings back. */
  rows: Record<string, number>;
}

/** The tables a summary counts: what the "sessions, inbox, access grants and task history" are kept in. */
export const SUMMARY_TABLES = ['sessions', 'chat_sessions', 'history', 'inbox', 'access_grants', 'pairing_requests', 'task_runs', 'activity'] as const;

export async function backupSqliteStore(database: string, dest: string, opts: { force?: boolean } = {}): Promise<StoreFileSummary> {
  if (!fs.existsSync(database)) throw new AppError('no_state', `${database} does not exist: this assistant has no state to back up yet`);
  if (fs.existsSync(dest) && !opts.force) throw new AppError('usage', `${dest} exists`, { hint: 'name a new file, or add --force to replace it' });
  const partial = path.join(path.dirname(path.resolve(dest)), `.${path.basename(dest)}.partial-${process.pid}`);
  removeDatabaseFiles(partial);
  const source = new Database(database, { fileMustExist: true });
  try {
    source.pragma('busy_timeout = 10000');
    await source.backup(partial);
  } catch (err) {
    removeDatabaseFiles(partial);
    throw new AppError('backup_failed', `cannot back up ${database}: ${(err as Error).message}`, { cause: err });
  } finally {
    source.close();
  }
  try {
    const copy = new Database(partial, { fileMustExist: true });
    try {
      copy.pragma('journal_mode = DELETE'); // one file, nothing beside it
    } finally {
      copy.close();
    }
    fs.chmodSync(partial, 0o600);
    const summary = readStoreFile(partial);
    fs.renameSync(partial, dest);
    return { ...summary, file: path.resolve(dest) };
  } catch (err) {
    removeDatabaseFiles(partial);
    throw err;
  }
}

/**
 * Put a backup in place of `database` (the caller holds the directory's gateway lock). The backup
 * is checked first; the state there now, if any, is kept beside it as
 * `state.db.before-restore-<time>` (a backup of its own). The copy goes through the backup API
 * into the database file, so SQLite's locks cover it like any write.
 */
export async function restoreSqliteStore(backup: string, database: string, now = new Date()): Promise<{ summary: StoreFileSummary; previous?: string }> {
  const summary = readStoreFile(backup);
  fs.mkdirSync(path.dirname(database), { recursive: true, mode: 0o700 });
  let previous: string | undefined;
  if (fs.existsSync(database)) {
    previous = `${database}.before-restore-${now.toISOString().replace(/[:.]/g, '-')}`;
    await backupSqliteStore(database, previous);
  }
  const source = new Database(backup, { readonly: true, fileMustExist: true });
  try {
    await source.backup(database);
  } finally {
    source.close();
  }
  fs.chmodSync(database, 0o600);
  return { summary, ...(previous ? { previous } : {}) };
}

/** What a store file holds (and that it is one, of a version this program can open), after SQLite's quick check. */
export function readStoreFile(file: string): StoreFileSummary {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new AppError('bad_backup', `cannot open ${file}: ${(err as Error).message}`);
  }
  try {
    const check = notAStore(file, () => db.pragma('quick_check', { simple: true }));
    if (check !== 'ok') throw new AppError('bad_backup', `${file} is damaged (SQLite quick_check: ${String(check)})`);
    const schemaVersion = Number(db.pragma('user_version', { simple: true }));
    const tables = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name));
    if (schemaVersion < 1 || !tables.has('sessions') || !tables.has('history')) throw new AppError('bad_backup', `${file} is not a backup of a service store`);
    if (schemaVersion > MIGRATIONS.length) {
      throw new AppError('bad_backup', `${file} was made by a newer version of service (store schema ${schemaVersion}; this one knows ${MIGRATIONS.length})`, {
        hint: 'upgrade service first, then restore',
      });
    }
    const rows = Object.fromEntries(
      SUMMARY_TABLES.filter((t) => tables.has(t)).map((t) => [t, Number((db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get() as { n: number }).n)]),
    );
    return { file: path.resolve(file), bytes: fs.statSync(file).size, schemaVersion, rows };
  } finally {
    db.close();
  }
}

// --- internal ---

/** Reading a file that is not SQLite fails at the first statement, not at open. */
function notAStore<T>(file: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw new AppError('bad_backup', `${file} is not a backup of a service store (${(err as Error).message})`);
  }
}

function removeDatabaseFiles(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) fs.rmSync(f, { force: true });
}
