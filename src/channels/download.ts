import { ChannelError } from './types.js';

/**
 * A download body read up to `maxBytes`: past it, reading stops (the rest is never buffered) and
 * a ChannelError of kind `too_long` is thrown. Used by every adapter's downloadFile.
 */
export async function readCapped(
  channel: string,
  body: AsyncIterable<Uint8Array> & { destroy?: () => void; cancel?: () => Promise<void> },
  maxBytes: number,
  what: string,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      body.destroy?.();
      throw new ChannelError(channel, 'too_long', `${what} is over the ${maxBytes}-byte limit`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** A fetch Response's body within `maxBytes` (its declared length is checked first). */
export async function readCappedResponse(channel: string, res: Response, maxBytes: number, what: string): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel();
    throw new ChannelError(channel, 'too_long', `${what} is ${declared} bytes, over the ${maxBytes}-byte limit`);
  }
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body;
  try {
    return await readCapped(channel, reader as unknown as AsyncIterable<Uint8Array>, maxBytes, what);
  } catch (err) {
    await reader.cancel().catch(() => undefined);
    throw err;
  }
}
