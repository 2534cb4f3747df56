import { readCappedResponse } from '../download.js';
import type { InboundFile, InboundImage } from '../types.js';

/** Pictures for the model: Discord's old 25 MiB cap for uploads, more than any picture needs. */
export const DISCORD_MAX_IMAGE_BYTES = 25 * 1024 * 1024;
/**
 * What a bot may upload in one attachment without server boosts (10 MiB since 2024; boosted
 * servers allow more, but the bot cannot rely on that).
 */
export const DISCORD_MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

/**
 * Downloads an attachment by its URL (the `ref`; attachment URLs on the CDN are signed and expire
 * after about a day, which covers an inbox replay). Bounded in time and size (too_long past it).
 */
export async function readDiscordAttachment(
  channel: string,
  attachment: InboundImage | InboundFile,
  opts: { maxBytes: number; timeoutMs?: number },
): Promise<{ data: Buffer; mimeType: string }> {
  const url = new URL(attachment.ref);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`not an attachment URL: ${url.protocol}`);
  const res = await fetch(url, { signal: AbortSignal.timeout(opts.timeoutMs ?? 60_000) });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status} for the attachment`);
  }
  const data = await readCappedResponse(channel, res, opts.maxBytes, attachment.fileName ?? 'the attachment');
  const mimeType = attachment.mimeType ?? res.headers.get('content-type')?.split(';')[0]?.trim() ?? 'application/octet-stream';
  return { data, mimeType };
}
