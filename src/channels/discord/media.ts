import type { InboundImage } from '../types.js';

/** Discord's own attachment cap for bots without boosts is 25 MiB (10 MiB for most users): anything larger is not an image we want. */
export const MAX_IMAGE_BYTES = 25 * 1024 * 1024;

/**
 * Downloads an attachment by its URL (the `ref` of an InboundImage; attachment URLs on the CDN are
 * signed and expire after about a day, which covers an inbox replay). Bounded in time and size.
 */
export async function readImage(image: InboundImage, opts: { timeoutMs?: number } = {}): Promise<{ data: Buffer; mimeType: string }> {
  const url = new URL(image.ref);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`not an attachment URL: ${url.protocol}`);
  const res = await fetch(url, { signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000) });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status} for the attachment`);
  }
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > MAX_IMAGE_BYTES) {
    await res.body.cancel();
    throw new Error(`attachment is ${declared} bytes, over the ${MAX_IMAGE_BYTES}-byte cap`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    if (size > MAX_IMAGE_BYTES) throw new Error(`attachment is over the ${MAX_IMAGE_BYTES}-byte cap`);
    chunks.push(Buffer.from(chunk));
  }
  const mimeType = image.mimeType ?? res.headers.get('content-type')?.split(';')[0]?.trim() ?? 'application/octet-stream';
  return { data: Buffer.concat(chunks), mimeType };
}
