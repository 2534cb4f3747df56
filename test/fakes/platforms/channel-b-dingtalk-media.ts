/**
 * Files of the fake DingTalk (channel_b), as the robot APIs work.
 *
 * In: a robot message with a picture or file carries a `downloadCode` (pictures also `pictureDownloadCode`), never
 * the bytes. `POST /v1.0/robot/messageFiles/download {downloadCode, robotCode}` (access token header) answers
 * `{downloadUrl}`, a temporary URL the fake serves at GET /download/<id> (no token needed). Files reach robots only
 * in one-to-one chats (groups deliver pictures and rich text only).
 *
 * Out: `POST <oapi>/media/upload?access_token=…&type=image|file` (multipart/form-data, the file in field `media`)
 * → `{errcode:0, errmsg:'ok', type, media_id, created_at}`; refused for an unknown token (40014), an unknown type,
 * an empty file, or over 20 MB (errcode 40006 "文件大小超过限制", code unverified); pictures must be JPG, PNG, GIF or
 * BMP. The media id then goes into a robot message template: `sampleImageMsg {photoURL: media_id}` or
 * `sampleFile {mediaId, fileName, fileType}` (oToMessages/batchSend, groupMessages/send).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FakeSentFile } from './types.js';

const MB = 1024 * 1024;
const MAX_UPLOAD = 20 * MB;
const IMAGE_TYPES = /\.(jpe?g|png|gif|bmp)$/i;

type Json = Record<string, unknown>;

export function createDingtalkMedia(base: string) {
  const served = new Map<string, { data: Buffer; contentType: string }>(); // by downloadCode
  const urls = new Map<string, string>(); // download id → downloadCode
  const uploaded = new Map<string, { name: string; mimeType: string; data: Buffer; type: string }>(); // by media_id

  return {
    /** Stores a user's file or picture; returns its downloadCode. */
    serve(data: Buffer, contentType: string): string {
      const code = `dl_${randomBytes(12).toString('hex')}`;
      served.set(code, { data, contentType });
      return code;
    },

    /** messageFiles/download: the temporary URL of a downloadCode, or undefined for an unknown code. */
    downloadUrl(body: Json): string | undefined {
      const code = String(body.downloadCode ?? '');
      if (!served.has(code) || typeof body.robotCode !== 'string' || body.robotCode === '') return undefined;
      const id = randomBytes(12).toString('hex');
      urls.set(id, code);
      return `${base}/download/${id}`;
    },

    /** GET /download/<id>. */
    file(id: string): { data: Buffer; contentType: string } | undefined {
      const code = urls.get(id);
      return code === undefined ? undefined : served.get(code);
    },

    /** POST /media/upload: the media_id, or an error answer. */
    async upload(req: IncomingMessage, url: URL): Promise<{ ok: true; body: Json } | { ok: false; body: Json; reason: string }> {
      const type = url.searchParams.get('type') ?? '';
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const fail = (errcode: number, errmsg: string) => ({ ok: false as const, body: { errcode, errmsg }, reason: errmsg });
      if (!['image', 'file', 'voice', 'video'].includes(type)) return fail(40004, `invalid media type ${type}`);
      let form: FormData;
      try {
        form = await new Request(url, {
          method: 'POST',
          headers: { 'content-type': req.headers['content-type'] ?? '' },
          body: Buffer.concat(chunks),
        }).formData();
      } catch {
        return fail(40005, 'body is not multipart/form-data');
      }
      const media = form.get('media');
      if (!(media instanceof File) || !media.name) return fail(40005, 'no file in field "media"');
      const data = Buffer.from(await media.arrayBuffer());
      if (data.length === 0) return fail(40005, 'empty file');
      if (data.length > MAX_UPLOAD) return fail(40006, '文件大小超过限制');
      if (type === 'image' && !IMAGE_TYPES.test(media.name)) return fail(40005, 'image must be jpg, png, gif or bmp');
      const mediaId = `@lA${randomBytes(12).toString('hex')}`;
      uploaded.set(mediaId, { name: media.name, mimeType: media.type || 'application/octet-stream', data, type });
      return { ok: true, body: { errcode: 0, errmsg: 'ok', type, media_id: mediaId, created_at: Date.now() } };
    },

    /** The file a sampleImageMsg / sampleFile names, as the chat shows it; a string says why not. */
    sentFile(msgKey: string, p: Json): FakeSentFile | string {
      const id = String(msgKey === 'sampleImageMsg' ? p.photoURL : p.mediaId);
      const m = uploaded.get(id);
      if (!m) return `unknown media id ${id}`;
      if (msgKey === 'sampleImageMsg') return m.type === 'image' ? { name: m.name, mimeType: m.mimeType, data: m.data, as: 'image' } : `${id} is not a picture`;
      if (typeof p.fileName !== 'string' || typeof p.fileType !== 'string') return 'sampleFile needs mediaId, fileName and fileType';
      return { name: p.fileName, mimeType: m.mimeType, data: m.data, as: 'file' };
    },
  };
}
