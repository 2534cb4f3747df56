import fs from 'node:fs';
import path from 'node:path';
import { decodeBase64, splitDataUrl } from '../util/base64.js';
import { formatLocalDay } from '../util/local-day.js';
import { formatBytes, formatSizeAndLimit, freeFileName, mimeTypeOf, toSafeFileName } from './file-names.js';

/**
 * Documents sent with a message (a chat attachment, `files` on POST /chat, `/attach` in the
 * terminal): saved into the workspace as `inbox/<local day>/<safe name>`, where the agent can read
 * them, and named in the prompt. Unlike images (scratch copies deleted after the turn), they stay:
 * a document is something to work on across turns.
 */
export interface FileInput {
  name: string;
  /** Base64 text (a `data:` URL prefix is accepted), or bytes from a channel download. */
  data: string | Buffer;
  mimeType?: string;
}

/** Documented limits (docs/api.md, docs/channels.md): 10 files per message, 20 MB each (what a Telegram bot may download). */
export const INCOMING_FILE_LIMITS = { maxCount: 10, maxBytes: 20 * 1024 * 1024 } as const;
export const INBOX_DIR = 'inbox';

export interface DecodedFile {
  name: string;
  mimeType: string;
  bytes: Buffer;
}

/** A file as saved: its path relative to the assistant directory. */
export interface SavedFile {
  path: string;
  size: number;
  mimeType: string;
}

export type FileCheck = { ok: true; files: DecodedFile[] } | { ok: false; message: string };

export function decodeFiles(inputs: readonly FileInput[] | undefined): FileCheck {
  const list = inputs ?? [];
  if (list.length > INCOMING_FILE_LIMITS.maxCount) {
    return { ok: false, message: `Too many files: ${list.length} (limit: ${INCOMING_FILE_LIMITS.maxCount} per message)` };
  }
  const files: DecodedFile[] = [];
  for (const [i, input] of list.entries()) {
    const split = splitDataUrl(input.data, input.mimeType);
    const mimeType = split.mimeType;
    const data = typeof split.data === 'string' ? decodeBase64(split.data) : split.data;
    if (!data) return { ok: false, message: `files[${i}]: data is not valid base64` };
    if (data.length === 0) return { ok: false, message: `files[${i}]: empty file` };
    if (data.length > INCOMING_FILE_LIMITS.maxBytes) {
      return {
        ok: false,
        message: `files[${i}] ${input.name}: ${formatOverLimit(data.length, INCOMING_FILE_LIMITS.maxBytes)} per file`,
      };
    }
    const name = toSafeFileName(input.name);
    files.push({ name, mimeType: (mimeType ?? mimeTypeOf(name)).toLowerCase(), bytes: data });
  }
  return { ok: true, files };
}

/** Write the files under `<dir>/inbox/<local day>/`, never over an existing file. */
export function saveIncomingFiles(dir: string, files: readonly DecodedFile[], now: number): SavedFile[] {
  if (files.length === 0) return [];
  const day = path.join(dir, INBOX_DIR, formatLocalDay(now));
  fs.mkdirSync(day, { recursive: true, mode: 0o700 });
  return files.map((f) => {
    const name = freeFileName(day, f.name);
    fs.writeFileSync(path.join(day, name), f.bytes, { mode: 0o600, flag: 'wx' });
    return { path: path.relative(dir, path.join(day, name)).split(path.sep).join('/'), size: f.bytes.length, mimeType: f.mimeType };
  });
}

/** The prompt with the saved files named after it (paths relative to the workspace, the agent's working directory). */
export function promptWithFiles(prompt: string, saved: readonly SavedFile[]): string {
  if (saved.length === 0) return prompt;
  const lines = saved.map((f) => `- ${f.path} (${formatBytes(f.size)}, ${f.mimeType})`);
  const note = [`Files sent with this message, saved in your workspace:`, ...lines].join('\n');
  return prompt.trim() === '' ? note : `${prompt}\n\n${note}`;
}

function formatOverLimit(size: number, limit: number): string {
  const shown = formatSizeAndLimit(size, limit);
  return `${shown.size} is over the limit of ${shown.limit}`;
}
