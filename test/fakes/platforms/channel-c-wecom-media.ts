/**
 * Media of the fake WeCom AI bot (channel_c), as @wecom/aibot-node-sdk 1.0.7 and WeCom's docs describe it.
 *
 * In (files and pictures a user sends): the callback carries `{url, aeskey}` and no name. The URL serves the file
 * AES-256-CBC encrypted with the per-message key (32 bytes, base64; IV = its first 16 bytes; PKCS#7 padding to a
 * multiple of 32 bytes, which is what the SDK's decryptFile expects), named in Content-Disposition
 * `filename*=UTF-8''…` (the SDK's downloadFileRaw reads that). URLs are valid five minutes (not enforced here).
 *
 * Out (uploads over the socket, three commands, each answered with a receipt whose body carries the result):
 * - aibot_upload_media_init {type file|image|voice|video, filename, total_size, total_chunks, md5} → {upload_id};
 *   refused (40000 family, codes unverified) for an unknown type, a size of 5 bytes or less, more than 100 chunks,
 *   or over WeCom's temporary-media caps (image 10 MB and JPG/PNG only, voice 2 MB, video 10 MB, file 20 MB).
 * - aibot_upload_media_chunk {upload_id, chunk_index, base64_data}: the SDK counts chunk_index from 0 (its type
 *   comment says "from 1"; the fake follows what the SDK sends), each at most 512 KB before base64.
 * - aibot_upload_media_finish {upload_id} → {type, media_id, created_at} once every chunk arrived and the MD5 matches.
 */
import { createCipheriv, createHash, randomBytes } from 'node:crypto';

export const MB = 1024 * 1024;
const CAPS: Record<string, number> = { image: 10 * MB, voice: 2 * MB, video: 10 * MB, file: 20 * MB };
const CHUNK = 512 * 1024;

export interface ServedMedia {
  name: string;
  contentType: string;
  encrypted: Buffer;
}
export interface UploadedMedia {
  type: string;
  filename: string;
  data: Buffer;
}
type Json = Record<string, unknown>;
export type UploadResult = { ok: true; body: Json } | { ok: false; errcode: number; reason: string };

/** Encrypts `data` the way WeCom serves callback media; returns the ciphertext and the base64 key. */
export function encryptMedia(data: Buffer): { encrypted: Buffer; aeskey: string } {
  const key = randomBytes(32);
  const pad = 32 - (data.length % 32);
  const cipher = createCipheriv('aes-256-cbc', key, key.subarray(0, 16));
  cipher.setAutoPadding(false);
  const encrypted = Buffer.concat([cipher.update(Buffer.concat([data, Buffer.alloc(pad, pad)])), cipher.final()]);
  return { encrypted, aeskey: key.toString('base64') };
}

export function contentDisposition(name: string): string {
  return `attachment; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** Upload sessions and the media they produced (media_id → file). */
export function createUploads() {
  const sessions = new Map<string, { type: string; filename: string; size: number; total: number; md5?: string; chunks: Map<number, Buffer> }>();
  const media = new Map<string, UploadedMedia>();
  const fail = (errcode: number, reason: string): UploadResult => ({ ok: false, errcode, reason });

  function init(b: Json): UploadResult {
    const type = String(b.type ?? '');
    const size = Number(b.total_size);
    const total = Number(b.total_chunks);
    const filename = String(b.filename ?? '');
    if (!(type in CAPS)) return fail(40004, `invalid media type ${type}`);
    if (!filename) return fail(40000, 'filename is required');
    if (!Number.isInteger(size) || size <= 5) return fail(40005, 'media size must be more than 5 bytes');
    if (size > (CAPS[type] as number)) return fail(40006, `${type} over ${(CAPS[type] as number) / MB} MB`);
    if (type === 'image' && !/\.(png|jpe?g)$/i.test(filename)) return fail(40005, 'image must be JPG or PNG');
    if (!Number.isInteger(total) || total < 1 || total > 100 || total !== Math.ceil(size / CHUNK)) return fail(40000, `bad total_chunks ${total}`);
    const id = `upload_${randomBytes(8).toString('hex')}`;
    sessions.set(id, { type, filename, size, total, ...(typeof b.md5 === 'string' ? { md5: b.md5 } : {}), chunks: new Map() });
    return { ok: true, body: { upload_id: id } };
  }

  function chunk(b: Json): UploadResult {
    const s = sessions.get(String(b.upload_id ?? ''));
    const index = Number(b.chunk_index);
    if (!s) return fail(40000, 'invalid upload_id');
    if (!Number.isInteger(index) || index < 0 || index >= s.total) return fail(40000, `chunk_index ${String(b.chunk_index)} out of range`);
    const data = Buffer.from(String(b.base64_data ?? ''), 'base64');
    if (data.length === 0 || data.length > CHUNK) return fail(40000, `chunk of ${data.length} bytes`);
    s.chunks.set(index, data);
    return { ok: true, body: {} };
  }

  function finish(b: Json): UploadResult {
    const id = String(b.upload_id ?? '');
    const s = sessions.get(id);
    if (!s) return fail(40000, 'invalid upload_id');
    if (s.chunks.size !== s.total) return fail(40000, `${s.chunks.size} of ${s.total} chunks uploaded`);
    const data = Buffer.concat([...s.chunks.entries()].sort(([a], [c]) => a - c).map(([, d]) => d));
    if (data.length !== s.size) return fail(40000, `uploaded ${data.length} bytes, announced ${s.size}`);
    if (s.md5 && createHash('md5').update(data).digest('hex') !== s.md5) return fail(40000, 'md5 mismatch');
    sessions.delete(id);
    const mediaId = `media_${randomBytes(12).toString('hex')}`;
    media.set(mediaId, { type: s.type, filename: s.filename, data });
    return { ok: true, body: { type: s.type, media_id: mediaId, created_at: String(Math.floor(Date.now() / 1000)) } };
  }

  return { init, chunk, finish, media };
}

export function typeOfName(name: string): string {
  const ext = name.split('.').at(-1)?.toLowerCase() ?? '';
  const types: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    gif: 'image/gif',
    pdf: 'application/pdf',
    txt: 'text/plain',
  };
  return types[ext] ?? 'application/octet-stream';
}
