import type { H3Event } from 'h3';
import type { z } from 'zod';
import { formatPath } from '../core/config/issues.js';
import { HttpFailure } from './http.js';

/**
 * Request bodies are read with a size limit (413 past it, checked while reading, not after) and
 * validated with zod (400 with every issue and its path). Documented limit: 36 MB, room for the
 * five 5 MB images a turn may carry, base64-encoded.
 */
export const MAX_BODY_BYTES = 36 * 1024 * 1024;

export interface ReadOptions {
  limit?: number | undefined;
  /** An empty body reads as `{}` (routes whose every field is optional). */
  allowEmpty?: boolean;
}

export async function readJson(event: H3Event, opts: ReadOptions = {}): Promise<unknown> {
  const limit = opts.limit ?? MAX_BODY_BYTES;
  const declared = Number(event.req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const body = event.req.body;
  if (!body) {
    if (opts.allowEmpty) return {};
    throw new HttpFailure(400, 'request body is required (JSON)');
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Not cancel(): that destroys the request under the response and listhen's shutdown hook then
      // throws on the missing socket. `Connection: close` discards the rest of the body instead.
      reader.releaseLock();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    if (opts.allowEmpty) return {};
    throw new HttpFailure(400, 'request body is required (JSON)');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpFailure(400, 'request body is not valid JSON');
  }
}

export async function readValidated<T>(event: H3Event, schema: z.ZodType<T>, opts: ReadOptions = {}): Promise<T> {
  const data = await readJson(event, opts);
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: formatPath(i.path.map((p) => (typeof p === 'number' ? p : String(p)))), message: i.message }));
    throw new HttpFailure(400, `invalid request body: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, { issues });
  }
  return parsed.data;
}

/** The rest of the body is never read, so the connection cannot be reused for another request. */
function tooLarge(limit: number): HttpFailure {
  return new HttpFailure(413, `request body is larger than ${limit} bytes`, { limit }, { connection: 'close' });
}
