import fs from 'node:fs';
import path from 'node:path';

/**
 * File names that cross a trust boundary (a name a chat user or the agent chose) are made safe
 * here before they become paths: never a separator or `..`, never hidden, never a control
 * character, never a bidirectional control or another invisible format character (a right-to-left
 * override makes `invoice\u202Efdp.exe` show as `invoiceexe.pdf`), bounded in length with the
 * extension kept. Files in (saved into the workspace) and out (sent by the agent) both pass here.
 */
const MAX_NAME_CHARS = 120;

/** C0/C1 controls, format characters (bidi controls, zero-width, BOM), line/paragraph separators, and what Windows refuses. */
const UNSAFE_CHARS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}<>:"|?*]/gu;

export function toSafeFileName(name: string): string {
  const base = name.normalize('NFC').split(/[/\\]/).at(-1) ?? '';
  const cleaned = base
    .replace(UNSAFE_CHARS, '_')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[.\s]+/, '')
    .replace(/[.\s]+$/, '');
  if (cleaned === '') return 'file';
  if (cleaned.length <= MAX_NAME_CHARS) return cleaned;
  const ext = path.extname(cleaned).slice(0, 16);
  return `${cleaned.slice(0, MAX_NAME_CHARS - ext.length)}${ext}`;
}

/** `name.ext`, else `name (2).ext`, `name (3).ext`… the first that does not exist in `dir`. */
export function freeFileName(dir: string, name: string): string {
  const ext = path.extname(name);
  const stem = name.slice(0, name.length - ext.length);
  let candidate = name;
  for (let i = 2; fs.existsSync(path.join(dir, candidate)); i++) candidate = `${stem} (${i})${ext}`;
  return candidate;
}

const TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  bmp: 'image/bmp',
  svg: 'image/svg+xml',
  pdf: 'application/pdf',
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
  html: 'text/html',
  xml: 'application/xml',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  mp4: 'video/mp4',
  mov: 'video/quicktime',
};

/** The type a file's extension names; application/octet-stream when it names none we know. */
export function mimeTypeOf(name: string): string {
  return TYPES[path.extname(name).slice(1).toLowerCase()] ?? 'application/octet-stream';
}

/** Images the platforms show inline (what a chat app displays as a picture rather than a file). */
export function isInlineImage(mimeType: string): boolean {
  return ['image/png', 'image/jpeg', 'image/gif', 'image/webp'].includes(mimeType);
}

/** 512 B, 12.3 KB, 4.0 MB (1024-based, one decimal). */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** A size beside its limit, exact in bytes when one decimal would show them equal (one byte over). */
export function formatSizeAndLimit(size: number, limit: number): { size: string; limit: string } {
  const [a, b] = [formatBytes(size), formatBytes(limit)];
  return a !== b ? { size: a, limit: b } : { size: `${size} bytes`, limit: `${limit} bytes` };
}

/**
 * The bytes of a regular file, never through a symbolic link (O_NOFOLLOW on the file, and the
 * opened descriptor must be a regular file), at most `maxBytes`.
 */
export function readRegularFile(file: string, maxBytes: number): Buffer {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new Error(`${path.basename(file)} is not a regular file`);
    if (st.size > maxBytes) throw new Error(`${path.basename(file)} is ${formatBytes(st.size)}, over ${formatBytes(maxBytes)}`);
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
