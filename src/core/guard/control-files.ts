import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../atomic-write.js';
import { CONFIG_FILE_NAME, STATE_DIR_NAME } from '../paths.js';

/**
 * The assistant's own control files: what decides who is an admin and what the gateway does
 * (service.yaml), the secrets its placeholders read (.env), and the owner's token
 * (.service/gateway-token). A turn a non-admin started may not change them (control-guard.ts);
 * the store, the rest of `.service/`, is checked through its access grants.
 */
export const CONTROL_FILES: readonly string[] = [CONFIG_FILE_NAME, '.env', path.join(STATE_DIR_NAME, 'gateway-token')];

/** What an engine with deny rules keeps a non-admin's turn from reading or changing (folders end in `/`). */
export const PROTECTED_PATHS: readonly string[] = [CONFIG_FILE_NAME, '.env', `${STATE_DIR_NAME}/`];

/** Where a change that was undone is kept, for the owner to read (and apply by hand if it was theirs). */
export const REJECTED_DIR = path.join(STATE_DIR_NAME, 'rejected');

/**
 * Whether a tool call's text names one of the assistant's own files or its state folder: such a
 * call, in a turn a non-admin started, is one only an admin may allow (approvals.ts). A name is
 * matched as a word of its own, so `process.env` or `nginx.service` are not.
 */
export function mentionsControlFile(text: string): boolean {
  return /service\.ya?ml|(?:^|[^\w.-])\.env\b|(?:^|[^\w.-])\.service\b|state\.db|gateway-token/i.test(text);
}

/** A file's content and mode at one moment; `null` content: it did not exist. */
export interface FileState {
  content: Buffer | null;
  mode: number;
}

export function readFileState(file: string): FileState {
  try {
    return { content: fs.readFileSync(file), mode: fs.statSync(file).mode & 0o777 };
  } catch {
    return { content: null, mode: 0o600 };
  }
}

/**
 * Put a file back as it was, keeping what it became in REJECTED_DIR (mode 0600). Returns false
 * when it had not changed. A file that did not exist is removed again.
 */
export function restoreFile(dir: string, relative: string, before: FileState, now: number): boolean {
  const file = path.join(dir, relative);
  const after = readFileState(file);
  if (sameContent(before.content, after.content)) return false;
  if (after.content !== null) {
    const stamp = new Date(now).toISOString().replace(/[:.]/g, '-');
    writeFileAtomic(path.join(dir, REJECTED_DIR, `${relative.replace(/[/\\]/g, '_')}.${stamp}`), after.content, { mode: 0o600 });
  }
  if (before.content === null) fs.rmSync(file, { force: true });
  else writeFileAtomic(file, before.content, { mode: before.mode });
  return true;
}

function sameContent(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}
