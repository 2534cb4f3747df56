/**
 * Speech to text through an OpenAI-compatible endpoint: `POST {baseUrl}/audio/transcriptions`,
 * multipart with `file` and `model` (and `language` when set), answered `{"text": "…"}`. The
 * base URL includes the API's version path, as OpenAI's clients take it
 * (`https://api.openai.com/v1`, a local server's `http://127.0.0.1:8000/v1`).
 */
export interface TranscriptionSettings {
  baseUrl: string;
  apiKey?: string | undefined;
  model: string;
  language?: string | undefined;
  timeoutSeconds: number;
}

export interface AudioInput {
  name: string;
  data: Buffer;
  mimeType: string;
}

/** Why a transcription failed: `message` in words fit for the person who sent the recording, `detail` for the log. */
export class TranscriptionError extends Error {
  readonly detail: string;
  constructor(message: string, opts: { cause?: unknown; detail?: string } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'TranscriptionError';
    this.detail = opts.detail ?? (opts.cause instanceof Error ? `${message} (${opts.cause.message})` : message);
  }
}

/** At most this much of an error answer is read (a proxy's HTML page can be large). */
const ERROR_BODY_MAX = 4096;

export async function transcribeAudio(settings: TranscriptionSettings, audio: AudioInput): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(audio.data)], { type: audio.mimeType }), audio.name);
  form.append('model', settings.model);
  form.append('response_format', 'json');
  if (settings.language) form.append('language', settings.language);
  const url = `${settings.baseUrl.replace(/\/+$/, '')}/audio/transcriptions`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {},
      body: form,
      signal: AbortSignal.timeout(settings.timeoutSeconds * 1000),
    });
  } catch (err) {
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    throw new TranscriptionError(timedOut ? `no answer within ${settings.timeoutSeconds} s` : 'the transcription service cannot be reached', { cause: err });
  }
  if (!res.ok) {
    const message = `the transcription service answered ${res.status}`;
    throw new TranscriptionError(message, { detail: `${message}${await reasonOf(res)}` });
  }
  const body = (await res.json().catch(() => undefined)) as { text?: unknown } | undefined;
  if (typeof body?.text !== 'string') throw new TranscriptionError('the transcription service gave no text');
  return body.text.trim();
}

// --- internal ---

/** `: <message>` from an OpenAI-style error body (`{"error": {"message": …}}`), else nothing. */
async function reasonOf(res: Response): Promise<string> {
  const text = (await res.text().catch(() => '')).slice(0, ERROR_BODY_MAX);
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    return typeof message === 'string' && message ? `: ${message.slice(0, 200)}` : '';
  } catch {
    return '';
  }
}
