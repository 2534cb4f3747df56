import type { IncomingMessage } from 'node:http';
import type { H3Event } from 'h3';
import type { z } from 'zod';
import { formatPath } from '../core/config/issues.js';
import { findUnsafeValues } from '../core/config/unsafe-values.js';
import { httpError } from './http.js';

/**
 * Request bodies are read with a size limit (413 past it, checked while reading, not after) and
 * validated with zod (400 with every issue and its path). Documented limit: 36 MB, room for the
 * five 5 MB images a turn may carry, base64-encoded. Before any route sees a body, the one reader
 * rejects (400) what no route can accept: nesting deeper than MAX_BODY_DEPTH (checked on the
 * text, before anything recursive touches it), a NUL in any string or key, and prototype keys.
 * (h3's readBody has no size limit while reading and parses at any depth: this is the part of the
 * HTTP layer that stays ours.)
 */
export const MAX_BODY_BYTES = 36 * 1024 * 1024;
/** Our deepest setting is 4 levels down; 32 leaves room for `x-` extension values. */
export const MAX_BODY_DEPTH = 32;

export interface ReadOptions {
  limit?: number | undefined;
  /** An empty body reads as `{}` (routes whose every field is optional). */
  allowEmpty?: boolean;
}

export async function readJson(event: H3Event, opts: ReadOptions = {}): Promise<unknown> {
  const limit = opts.limit ?? MAX_BODY_BYTES;
  const declared = Number(event.req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  // Served over HTTP/1.1 only (listen.ts): the node request is an IncomingMessage.
  const node = event.runtime?.node?.req as IncomingMessage | undefined;
  const chunks = node ? await readBody(node, limit) : await readWebBody(event.req.body, limit);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    if (opts.allowEmpty) return {};
    throw httpError(400, 'request body is required (JSON)');
  }
  if (nestingDepth(text) > MAX_BODY_DEPTH) throw httpError(400, `request body is nested deeper than ${MAX_BODY_DEPTH} levels`, { limit: MAX_BODY_DEPTH });
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw httpError(400, 'request body is not valid JSON');
  }
  const unsafe = findUnsafeValues(value);
  if (unsafe.length > 0) {
    const issues = unsafe.map((u) => ({ path: formatPath(u.path), message: u.message }));
    throw httpError(400, `invalid request body: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, { issues });
  }
  return value;
}

export async function readValidated<T>(event: H3Event, schema: z.ZodType<T>, opts: ReadOptions = {}): Promise<T> {
  const data = await readJson(event, opts);
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: formatPath(i.path.map((p) => (typeof p === 'number' ? p : String(p)))), message: i.message }));
    throw httpError(400, `invalid request body: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, { issues });
  }
  return parsed.data;
}

/**
 * The body's bytes, refused (413) as soon as they pass `limit`. Past it the rest is left unread:
 * the answer says `Connection: close`, so the connection is not reused for another request.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        done();
        req.pause();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(chunks);
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    // A client that goes away mid-body: nothing to answer, and nobody to answer it to.
    const onAborted = () => onError(httpError(400, 'request body was not sent completely'));
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    if (req.readableEnded) {
      resolve(chunks);
      return;
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

/** The same for a web request (the app driven in-process through app.fetch, no node request behind it). */
async function readWebBody(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  if (!body) return chunks;
  let size = 0;
  const reader = body.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    size += r.value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    chunks.push(Buffer.from(r.value));
  }
  return chunks;
}

/** The rest of the body is never read, so the connection cannot be reused for another request. */
function tooLarge(limit: number) {
  return httpError(413, `request body is larger than ${limit} bytes`, { limit }, { connection: 'close' });
}

/** The characters the depth scan stops at: everything else (a base64 image is megabytes of it) is skipped by the regex engine. */
const STRUCTURE = /["\\{}[\]]/g;

/**
 * Deepest `{`/`[` nesting of JSON text, brackets inside strings not counted; linear, no recursion.
 * The scan jumps from one structural character to the next with a native regex search rather than
 * looking at every character in JavaScript: every command starts without the optimizing compiler
 * (bin/service.js), and there a per-character loop over a 30 MB body took 0.8 s.
 */
export function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  STRUCTURE.lastIndex = 0;
  for (let m = STRUCTURE.exec(text); m !== null; m = STRUCTURE.exec(text)) {
    const c = text.charCodeAt(m.index);
    if (inString) {
      if (c === 0x5c)
        STRUCTURE.lastIndex = m.index + 2; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}
