import type { FileInput } from '../../core/files/incoming.js';
import type { Logger } from '../../core/logger.js';
import { singleLine } from '../markdown.js';
import type { InboundFile } from '../types.js';
import { TranscriptionError, type TranscriptionSettings, transcribeAudio } from './transcribe.js';

/**
 * Voice notes and audio files of a channel message → text for the engine, when `transcription`
 * is configured. A recording is a file the adapter marked as one (`kind`), or one with an
 * `audio/*` type or a recording's extension. Each is transcribed on its own; the engine reads
 * the transcripts first, each marked as a transcribed recording, then what was typed, and still
 * gets the recordings as files. A recording that cannot be transcribed is named in a short notice
 * for the sender and goes to the engine as a file only, or with the platform's own transcript where
 * the platform made one (DingTalk): that transcript is also what the engine reads with
 * `transcription` off.
 */
export interface VoiceNotes {
  /** The message's text for the engine: the marked transcripts, then the typed text. */
  text: string;
  /** What was heard, for the first line of a streamed reply: 🎤 "…". Absent when nothing was. */
  preface?: string;
  /** One short line per recording that could not be transcribed. */
  notices: string[];
}

const RECORDING_NAME = /\.(ogg|oga|opus|mp3|mpga|mpeg|m4a|aac|wav|webm|weba|flac|amr|3gp)$/i;

export function isRecording(file: Pick<FileInput, 'name' | 'mimeType'>, source?: Pick<InboundFile, 'kind' | 'mimeType'>): boolean {
  if (source?.kind) return true;
  const type = (source?.mimeType ?? file.mimeType ?? '').toLowerCase();
  if (type.startsWith('audio/')) return true;
  return (type === '' || type === 'application/octet-stream') && RECORDING_NAME.test(file.name);
}

/**
 * Undefined when the message carries no recording, or only recordings nothing can be read from
 * (transcription off and no transcript of the platform's own). `inbound` is the message's files
 * as the platform gave them: a recording that could not be downloaded is still read out from the
 * platform's transcript when it has one (DingTalk's).
 */
export async function transcribeVoiceNotes(
  typed: string,
  files: readonly FileInput[],
  sources: readonly InboundFile[],
  settings: TranscriptionSettings | undefined,
  log: Logger,
  inbound: readonly InboundFile[] = sources,
): Promise<VoiceNotes | undefined> {
  const recordings = files.map((file, i) => ({ file, source: sources[i] })).filter(({ file, source }) => isRecording(file, source));
  const unsaved = inbound.filter((f) => f.transcript && !sources.includes(f));
  if (!settings && !recordings.some(({ source }) => source?.transcript) && unsaved.length === 0) return undefined;
  const marked: string[] = [];
  const heard: string[] = [];
  const notices: string[] = [];
  // `name` is absent for a recording that was never downloaded (nothing in the inbox to point to).
  const platformHeard = (name: string | undefined, kind: InboundFile['kind'], transcript: string) => {
    heard.push(transcript);
    const what = describeRecording(name ?? '', kind).label;
    marked.push(`[${name === undefined ? what : `${what} ${name}`}, transcribed by the platform]: ${transcript}`);
  };
  for (const { file, source } of recordings) {
    const { label, what } = describeRecording(file.name, source?.kind);
    const fallback = source?.transcript?.trim();
    if (!settings) {
      if (fallback) platformHeard(file.name, source?.kind, fallback);
      continue;
    }
    const alsoSaid = fallback ? ", with the platform's own transcript" : '';
    try {
      const data = typeof file.data === 'string' ? Buffer.from(file.data, 'base64') : file.data;
      const text = await transcribeAudio(settings, { name: file.name, data, mimeType: file.mimeType ?? 'application/octet-stream' });
      if (text) {
        heard.push(text);
        marked.push(`[${label} ${file.name}, transcribed]: ${text}`);
        continue;
      }
      notices.push(`I could not hear any words in ${what}; it is passed on as a file${alsoSaid}.`);
    } catch (err) {
      const reason = err instanceof TranscriptionError ? err.message : 'the transcription failed';
      log.warn(`transcription of ${file.name} failed: ${err instanceof TranscriptionError ? err.detail : String(err)}`);
      notices.push(`I could not transcribe ${what} (${reason}); it is passed on as a file${alsoSaid}.`);
    }
    if (fallback) platformHeard(file.name, source?.kind, fallback);
  }
  for (const f of unsaved) platformHeard(f.fileName, f.kind, (f.transcript ?? '').trim());
  if (recordings.length === 0 && unsaved.length === 0) return undefined;
  return {
    text: [...marked, typed.trim()].filter(Boolean).join('\n\n'),
    ...(heard.length > 0 ? { preface: `🎤 "${escapeMarkdown(singleLine(heard.join(' ')))}"` } : {}),
    notices,
  };
}

// --- internal ---

/** How the engine's text marks a recording, and how a notice names it to the sender. */
function describeRecording(name: string, kind: InboundFile['kind']): { label: string; what: string } {
  if (kind === 'voice') return { label: 'Voice message', what: 'your voice message' };
  if (kind === 'audio') return { label: 'Audio file', what: `the audio file ${name}` };
  return { label: 'Recording', what: `the recording ${name}` };
}

/** What was heard is shown as typed: no character of it may turn into markup. */
function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|~<>]/g, '\\$&');
}
