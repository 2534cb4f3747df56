import type { webApi } from '@slack/bolt';
import { readCappedResponse } from '../download.js';
import { ChannelError, type InboundFile, type InboundImage, type OutboundFile, type ReplyTarget } from '../types.js';
import { describe, toSlackChannelError } from './errors.js';

/** Files on Slack: downloads of `url_private` with the bot token, uploads through files.uploadV2. */

const HTTP_TIMEOUT_MS = 60_000;

/** A file attached to a message, fetched with the bot token (sent only to Slack's own hosts or the configured API host). */
export async function downloadSlackFile(
  name: string,
  image: InboundImage | InboundFile,
  opts: { botToken: string; apiUrl?: string | undefined },
  maxBytes: number,
): Promise<{ data: Buffer; mimeType: string }> {
  let url: URL;
  try {
    url = new URL(image.ref);
  } catch {
    throw new ChannelError(name, 'not_found', `not a Slack file URL: ${image.ref}`);
  }
  const apiHost = opts.apiUrl ? new URL(opts.apiUrl).host : undefined;
  if (url.host !== apiHost && !/(^|\.)slack\.com$/.test(url.hostname) && !/(^|\.)slack-edge\.com$/.test(url.hostname)) {
    throw new ChannelError(name, 'other', `refusing to send the bot token to ${url.host}`);
  }
  let res: Response;
  try {
    res = await fetch(url, { headers: { Authorization: `Bearer ${opts.botToken}` }, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
  } catch (e) {
    throw new ChannelError(name, 'network', `downloading ${image.fileName ?? 'a file'} failed: ${describe(e)}`, { cause: e });
  }
  const type = res.headers.get('content-type')?.split(';')[0]?.trim() ?? '';
  if (!res.ok || type === 'text/html') {
    await res.body?.cancel();
    // Slack answers a request without a usable token with its sign-in page, not an error status.
    const kind = res.status === 404 ? 'not_found' : 'auth';
    throw new ChannelError(
      name,
      kind,
      `downloading ${image.fileName ?? 'a file'} failed: ${res.ok ? 'got a sign-in page (does the bot have files:read?)' : `HTTP ${res.status}`}`,
    );
  }
  const data = await readCappedResponse(name, res, maxBytes, image.fileName ?? 'the file');
  return { data, mimeType: image.mimeType ?? (type || 'application/octet-stream') };
}

/**
 * files.uploadV2: files.getUploadURLExternal, the bytes to the upload URL, then
 * files.completeUploadExternal shares the file into the channel (the reply's thread). Slack shows
 * pictures inline by itself.
 */
export async function uploadSlackFile(name: string, client: webApi.WebClient, to: ReplyTarget, file: OutboundFile): Promise<void> {
  const common = { channel_id: to.chatId, file: file.data, filename: file.name, title: file.name };
  try {
    await (to.threadId ? client.filesUploadV2({ ...common, thread_ts: to.threadId }) : client.filesUploadV2(common));
  } catch (e) {
    throw toSlackChannelError(name, e, `upload of ${file.name} to ${to.chatId}`);
  }
}
