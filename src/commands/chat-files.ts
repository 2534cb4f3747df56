import fs from 'node:fs';
import path from 'node:path';
import type { FileEvent } from '../core/events.js';
import { formatBytes, freeFileName, readRegularFile } from '../core/files/file-names.js';
import { type FileInput, INCOMING_FILE_LIMITS } from '../core/files/incoming.js';
import { SENT_FILE_LIMITS } from '../core/files/sent-files.js';

/**
 * Files in the terminal: `--file` and `/attach` read a local file to go with the next message
 * (saved into the workspace's `inbox/` like a chat attachment); files the agent sends are copied
 * into `downloads/` of the assistant directory, where they stay (the kept copy expires in 24 h).
 */
export const DOWNLOADS_DIR = 'downloads';

/** A local file as an attachment; throws a message fit for the user when it cannot be one. */
export function readLocalAttachment(file: string): FileInput {
  const resolved = path.resolve(file);
  let data: Buffer;
  try {
    data = readRegularFile(resolved, INCOMING_FILE_LIMITS.maxBytes);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'ELOOP' ? 'a symbolic link (give the file itself)' : (err as Error).message;
    throw new Error(`cannot attach ${file}: ${why}`);
  }
  if (data.length === 0) throw new Error(`cannot attach ${file}: the file is empty`);
  return { name: path.basename(resolved), data };
}

/** Copy a sent file into `<dir>/downloads/`; the path relative to `dir`, or the reason it was not sent. */
export function saveDownload(dir: string, e: FileEvent): { saved: string } | { error: string } {
  if (!e.path) return { error: e.error ?? 'not sent' };
  try {
    const target = path.join(dir, DOWNLOADS_DIR);
    fs.mkdirSync(target, { recursive: true });
    const name = freeFileName(target, e.name);
    fs.writeFileSync(path.join(target, name), readRegularFile(e.path, SENT_FILE_LIMITS.maxBytes), { flag: 'wx' });
    return { saved: path.join(DOWNLOADS_DIR, name) };
  } catch (err) {
    return { error: `could not save it: ${(err as Error).message}` };
  }
}

export function formatFileLine(e: FileEvent, outcome: { saved: string } | { error: string }): string {
  return 'saved' in outcome ? `📎 ${e.name} (${formatBytes(e.size)}) → ${outcome.saved}` : `📎 ${e.name}: ${outcome.error}`;
}
