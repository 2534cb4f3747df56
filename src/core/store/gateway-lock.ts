import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { writeFileAtomic } from '../atomic-write.js';
import { AppError } from '../errors.js';
import { formatCliCommand } from '../invocation.js';

/**
 * One gateway per assistant directory. The lock is an exclusive SQLite transaction held open on
 * `.service/gateway.lock` for the gateway's whole life: a POSIX file lock, which the OS drops when
 * the process ends in any way (SIGKILL included), so a stale lock cannot exist and there is no pid
 * file to go stale. `.service/gateway.json` names the holder (pid, URL) for the refusal message.
 */
export interface GatewayLock {
  /** Record where the holder serves, once it listens. */
  describe(info: { url: string }): void;
  release(): void;
}

export interface HolderInfo {
  pid: number;
  /** Where it serves, once it listens. */
  url?: string;
  startedAt: string;
}

export function acquireGatewayLock(stateDir: string): GatewayLock {
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const lockFile = path.join(stateDir, 'gateway.lock');
  const infoFile = path.join(stateDir, 'gateway.json');
  const db = new Database(lockFile);
  try {
    db.pragma('busy_timeout = 0');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    throw new AppError('gateway_running', `another gateway is already running on ${path.dirname(stateDir)}${describeHolder(infoFile)}`, {
      hint: `stop it first (SIGTERM lets its running turns finish), or use its URL; \`${formatCliCommand('chat')}\` and \`${formatCliCommand('cron run')}\` work beside it`,
    });
  }
  const write = (info: HolderInfo) => writeFileAtomic(infoFile, `${JSON.stringify(info)}\n`, { mode: 0o600 });
  const holder: HolderInfo = { pid: process.pid, startedAt: new Date().toISOString() };
  write(holder);
  let released = false;
  return {
    describe(info) {
      if (!released) write({ ...holder, url: info.url });
    },
    release() {
      if (released) return;
      released = true;
      fs.rmSync(infoFile, { force: true });
      db.close(); // ends the transaction: the lock is free
    },
  };
}

/**
 * What `.service/gateway.json` says of the directory's gateway: written when the lock is taken,
 * removed when it is released. A gateway killed with SIGKILL leaves it behind, so a reader checks
 * that the pid still runs (and that the URL answers) before trusting it. Never touches the lock.
 */
export function readGatewayHolder(stateDir: string): HolderInfo | undefined {
  try {
    const info = JSON.parse(fs.readFileSync(path.join(stateDir, 'gateway.json'), 'utf8')) as Partial<HolderInfo>;
    if (typeof info.pid !== 'number' || !Number.isInteger(info.pid)) return undefined;
    return { pid: info.pid, startedAt: String(info.startedAt ?? ''), ...(typeof info.url === 'string' ? { url: info.url } : {}) };
  } catch {
    return undefined;
  }
}

// --- internal ---

function describeHolder(infoFile: string): string {
  try {
    const info = JSON.parse(fs.readFileSync(infoFile, 'utf8')) as Partial<HolderInfo>;
    const parts = [...(Number.isInteger(info.pid) ? [`pid ${info.pid}`] : []), info.url ? `serving on ${info.url}` : 'starting'];
    return ` (${parts.join(', ')})`;
  } catch {
    return '';
  }
}
