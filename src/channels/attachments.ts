import type { ImageInput } from '../core/assistant/images.js';
import { errorMessage } from '../core/errors.js';
import type { FileEvent } from '../core/events.js';
import { formatBytes, formatSizeAndLimit, readRegularFile, toSafeFileName } from '../core/files/file-names.js';
import { type FileInput, INCOMING_FILE_LIMITS } from '../core/files/incoming.js';
import type { Logger } from '../core/logger.js';
import type { ReplyAdapter } from './reply-adapter.js';
import { ChannelError, type ChannelAdapter, type InboundFile, type InboundMessage, type ReplyTarget, type SentMessage } from './types.js';

/**
 * Attachments between a platform and a turn. In: the images of a message (into the turn) and its
 * documents (saved into the workspace by the assistant), each within its limit; a document that
 * cannot be taken is named in a short notice to the sender. Out: the files of a reply (`file`
 * events), uploaded after the text through the adapter's `sendFile` within the platform's cap,
 * and what could not be sent named in one short message.
 */

export async function downloadImages(adapter: ChannelAdapter, msg: InboundMessage, log: Logger): Promise<ImageInput[]> {
  if (!msg.images?.length || !adapter.downloadImage) return [];
  const out: ImageInput[] = [];
  for (const image of msg.images.slice(0, 5)) {
    try {
      const { data, mimeType } = await adapter.downloadImage(image);
      out.push({ data, mimeType, ...(image.fileName ? { fileName: image.fileName } : {}) });
    } catch (err) {
      log.warn(`${msg.channel} ${msg.messageId}: image download failed: ${errorMessage(err)}`);
    }
  }
  return out;
}

/**
 * The message's documents, downloaded; `notices` says which could not be taken, and why;
 * `sources[i]` is the message's file that `files[i]` was downloaded from.
 */
export async function downloadFiles(
  adapter: ChannelAdapter,
  msg: InboundMessage,
  log: Logger,
): Promise<{ files: FileInput[]; notices: string[]; sources: InboundFile[] }> {
  const files: FileInput[] = [];
  const sources: InboundFile[] = [];
  const notices: string[] = [];
  const max = INCOMING_FILE_LIMITS.maxBytes;
  const tooBig = (name: string, size?: number) => {
    const shown = formatSizeAndLimit(size ?? 0, max);
    return `${name}${size !== undefined ? ` (${shown.size})` : ''} was not saved: files sent to me can be at most ${size !== undefined ? shown.limit : formatBytes(max)}.`;
  };
  for (const [i, file] of (msg.files ?? []).entries()) {
    // The name the file will have in the workspace: also what notices show (no control characters, no path).
    const name = toSafeFileName(file.fileName ?? 'file');
    if (i >= INCOMING_FILE_LIMITS.maxCount) {
      notices.push(`${name} was not saved: at most ${INCOMING_FILE_LIMITS.maxCount} files are taken from one message.`);
      continue;
    }
    if (!adapter.downloadFile) {
      notices.push(`${name} was not saved: receiving files is not supported on this channel.`);
      continue;
    }
    if (file.size !== undefined && file.size > max) {
      notices.push(tooBig(name, file.size));
      continue;
    }
    // Some platforms name a file only in its download (WeCom): the adapter then fills in file.fileName.
    const named = () => toSafeFileName(file.fileName ?? 'file');
    // A notice about a file the platform did not name: what it is (a voice message, until its download names it).
    const told = () =>
      file.fileName !== undefined ? named() : file.kind === 'voice' ? 'Your voice message' : file.kind === 'audio' ? 'The audio file' : 'The file';
    try {
      const { data, mimeType } = await adapter.downloadFile(file, { maxBytes: max });
      if (data.length === 0) notices.push(`${told()} was not saved: the file is empty.`);
      else {
        files.push({ name: named(), data, mimeType: file.mimeType ?? mimeType });
        sources.push(file);
      }
    } catch (err) {
      if (err instanceof ChannelError && err.kind === 'too_long') notices.push(tooBig(told()));
      else {
        log.warn(`${msg.channel} ${msg.messageId}: download of ${named()} failed: ${errorMessage(err)}`);
        notices.push(`${told()} was not saved: the download failed.`);
      }
    }
  }
  return { files, notices, sources };
}

/** Upload a reply's files after its text; the ones that could not go out are named in one message (`say`). */
export async function deliverFiles(
  adapter: ReplyAdapter,
  to: ReplyTarget,
  files: readonly FileEvent[],
  opts: { log: Logger; say: (markdown: string) => Promise<void>; onSent?: (sent: SentMessage | undefined, text: string) => void },
): Promise<void> {
  const notices: string[] = [];
  for (const f of files) {
    const max = adapter.maxFileBytes;
    if (f.error || !f.path) notices.push(`Could not send ${f.name}: ${(f.error ?? 'not sent').replace(/^not sent: /, '')}.`);
    else if (!adapter.sendFile) notices.push(`Could not send ${f.name}: sending files is not supported on this channel.`);
    else if (max !== undefined && f.size > max) notices.push(formatTooBigToSend(f.name, f.size, max));
    else {
      try {
        const data = readRegularFile(f.path, max ?? Number.MAX_SAFE_INTEGER);
        opts.onSent?.(await adapter.sendFile(to, { name: f.name, mimeType: f.mimeType, data }), `[file: ${f.name}]`);
      } catch (err) {
        opts.log.warn(`${adapter.name}: sending ${f.name} failed: ${errorMessage(err)}`);
        notices.push(`Could not send ${f.name}: the upload failed.`);
      }
    }
  }
  if (notices.length > 0) await opts.say(notices.join('\n'));
}

function formatTooBigToSend(name: string, size: number, max: number): string {
  const shown = formatSizeAndLimit(size, max);
  return `Could not send ${name} (${shown.size}): files sent here can be at most ${shown.limit}.`;
}
