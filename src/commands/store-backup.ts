import fs from 'node:fs';
import path from 'node:path';
import { AppError, UsageError } from '../core/errors.js';
import { formatCliCommand, formatShellWord } from '../core/invocation.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { acquireGatewayLock } from '../core/store/gateway-lock.js';
import { describeStoreTarget, resolveStoreTarget, type StoreTarget } from '../core/store/open-store.js';
import { backupSqliteStore, readStoreFile, restoreSqliteStore, type StoreFileSummary } from '../core/store/sqlite-backup.js';
import { loadServiceConfig } from '../definitions.js';
import type { CommandIO } from './io.js';

export interface StoreFileOptions {
  dir: string;
  file: string;
  force?: boolean;
  json?: boolean;
}

/**
 * `service store backup FILE`: a consistent copy of the SQLite store, taken while a gateway runs
 * (SQLite's online backup). A PostgreSQL store is backed up with pg_dump: the command says how.
 */
export async function runStoreBackup(opts: StoreFileOptions, io: CommandIO): Promise<number> {
  const paths = resolveAssistantPaths(opts.dir);
  refusePostgres(targetOf(opts.dir, paths.database), opts.file, 'backup');
  const summary = await backupSqliteStore(paths.database, path.resolve(opts.file), { force: opts.force ?? false });
  if (opts.json) io.out(JSON.stringify({ ok: true, ...summary }, null, 2));
  else {
    io.out(`Backed up ${paths.database} to ${summary.file}: ${describeSummary(summary)}.`);
    io.out(`Restore it with \`${formatCliCommand(`store restore ${formatShellWord(summary.file)} -d <dir>`)}\` (the gateway there stopped).`);
  }
  return 0;
}

/**
 * `service store restore FILE`: put a backup in place of the directory's SQLite store. Refused
 * while a gateway runs on the directory (it holds the directory's gateway lock, which this takes
 * for the whole restore, so none starts meanwhile) and, without --force, where state exists
 * already; that state is kept beside it as `state.db.before-restore-<time>`.
 */
export async function runStoreRestore(opts: StoreFileOptions, io: CommandIO): Promise<number> {
  const paths = resolveAssistantPaths(opts.dir);
  const file = path.resolve(opts.file);
  if (!fs.existsSync(file)) throw new UsageError(`${file} does not exist`);
  refusePostgres(targetOf(opts.dir, paths.database), file, 'restore');
  readStoreFile(file); // a file that is not a backup is refused before the directory is touched
  const lock = acquireGatewayLock(paths.stateDir);
  try {
    if (fs.existsSync(paths.database) && !opts.force) {
      throw new AppError('state_exists', `${paths.database} exists: restoring replaces this assistant's sessions, history, inbox, access and task history`, {
        hint: 'add --force to replace it (the state there now is kept beside it as state.db.before-restore-<time>)',
      });
    }
    const { summary, previous } = await restoreSqliteStore(file, paths.database);
    if (opts.json) io.out(JSON.stringify({ ok: true, database: paths.database, ...summary, ...(previous ? { previous } : {}) }, null, 2));
    else {
      io.out(`Restored ${summary.file} into ${paths.database}: ${describeSummary(summary)}.`);
      if (previous) io.out(`The state that was there is kept in ${previous}.`);
      io.out(`Start the gateway: \`${formatCliCommand(`gateway -d ${formatShellWord(paths.dir)}`)}\`.`);
    }
    return 0;
  } finally {
    lock.release();
  }
}

// --- internal ---

function targetOf(dir: string, database: string): StoreTarget {
  return resolveStoreTarget(loadServiceConfig(dir).config, process.env, database);
}

/** A server store has its own tools: pg_dump takes a consistent snapshot of the assistant's schema while gateways run. */
function refusePostgres(target: StoreTarget, file: string, action: 'backup' | 'restore'): void {
  if (target.kind !== 'postgres') return;
  const f = formatShellWord(file);
  const how =
    action === 'backup'
      ? `pg_dump --dbname "$SERVICE_STORE_URL" --schema ${target.schema} --format custom --file ${f}`
      : `pg_restore --dbname "$SERVICE_STORE_URL" --clean --if-exists ${f}  (gateways of the assistant stopped)`;
  throw new AppError('store_on_server', `this assistant's store is PostgreSQL (${describeStoreTarget(target)}): ${action} it with PostgreSQL's tools`, {
    hint: `${how}; see docs/operations.md`,
  });
}

function describeSummary(s: StoreFileSummary): string {
  const rows = Object.entries(s.rows)
    .map(([table, n]) => `${n} ${table.replace('_', ' ')}`)
    .join(', ');
  return `${Math.max(1, Math.round(s.bytes / 1024))} KB, store schema ${s.schemaVersion}; ${rows}`;
}
