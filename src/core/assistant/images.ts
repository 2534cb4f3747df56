import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { decodeBase64, splitDataUrl } from '../util/base64.js';

/**
 * Image attachments of a turn: validated, written under .service/images/ with names we generate
 * (a client's fileName never becomes a path), and deleted when the turn ends however it ends.
 */
export interface ImageInput {
  /** Default image/png. */
  mimeType?: string;
  /** Base64 text (a `data:` URL prefix is accepted), or bytes from a channel download. */
  data: string | Buffer;
  fileName?: string;
}

/**
 * Documented limits (docs/api.md): at most 5 images per message, 5 MB each once decoded (what
 * image-capable engines accept; five of them, base64-encoded, fit the 36 MB body limit).
 */
export const IMAGE_LIMITS = { maxCount: 5, maxBytes: 5 * 1024 * 1024 } as const;

export const IMAGE_TYPES: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/jpg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/bmp': 'bmp',
};

export interface DecodedImage {
  mimeType: string;
  bytes: Buffer;
}

export type ImageCheck = { ok: true; images: DecodedImage[] } | { ok: false; message: string };

export function decodeImages(inputs: readonly ImageInput[] | undefined): ImageCheck {
  const list = inputs ?? [];
  if (list.length > IMAGE_LIMITS.maxCount) {
    return { ok: false, message: `Too many images: ${list.length} (limit: ${IMAGE_LIMITS.maxCount} per message)` };
  }
  const images: DecodedImage[] = [];
  for (const [i, input] of list.entries()) {
    const { data, mimeType: given } = splitDataUrl(input.data, input.mimeType);
    const mimeType = (given ?? 'image/png').toLowerCase();
    if (!IMAGE_TYPES[mimeType]) {
      return { ok: false, message: `images[${i}]: unsupported type ${JSON.stringify(mimeType)} (allowed: ${Object.keys(IMAGE_TYPES).join(', ')})` };
    }
    const bytes = typeof data === 'string' ? decodeBase64(data) : data;
    if (!bytes) return { ok: false, message: `images[${i}]: data is not valid base64` };
    if (bytes.length === 0) return { ok: false, message: `images[${i}]: empty image` };
    if (bytes.length > IMAGE_LIMITS.maxBytes) {
      return { ok: false, message: `images[${i}]: ${bytes.length} bytes is over the limit of ${IMAGE_LIMITS.maxBytes} bytes` };
    }
    images.push({ mimeType, bytes });
  }
  return { ok: true, images };
}

/** Write the images of one turn; returns their absolute paths. */
export function writeTurnImages(imagesDir: string, images: readonly DecodedImage[]): string[] {
  if (images.length === 0) return [];
  fs.mkdirSync(imagesDir, { recursive: true, mode: 0o700 });
  return images.map((img) => {
    const file = path.join(imagesDir, `${randomUUID()}.${IMAGE_TYPES[img.mimeType] ?? 'bin'}`);
    fs.writeFileSync(file, img.bytes, { mode: 0o600, flag: 'wx' });
    return file;
  });
}

export function removeFiles(files: readonly string[]): void {
  for (const f of files) fs.rmSync(f, { force: true });
}
