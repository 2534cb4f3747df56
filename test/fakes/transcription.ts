/**
 * A fake OpenAI-compatible speech-to-text endpoint on 127.0.0.1: `POST /v1/audio/transcriptions`,
 * multipart/form-data with `file` and `model` (and optional `language`, `response_format`),
 * answered `{"text": "…"}` as OpenAI answers `response_format=json`. Errors are OpenAI's shape,
 * `{"error": {"message", "type", "code"}}`: 401 without the expected key, 400 without a file or
 * model. What it heard is the transcript registered for the file's bytes (`say`), else
 * `heard <n> bytes`. `failNext` makes the next request fail with a status.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TranscriptionRequest {
  model: string;
  fileName: string;
  mimeType: string;
  bytes: number;
  language?: string;
  authorization?: string;
}

export interface FakeTranscription {
  /** The base URL to configure (`transcription.baseUrl`): http://127.0.0.1:P/v1 */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly requests: TranscriptionRequest[];
  /** What the service hears in a recording of exactly these bytes. */
  say(data: Buffer, text: string): void;
  failNext(status: number, message?: string): void;
  close(): Promise<void>;
}

export async function startFakeTranscription(): Promise<FakeTranscription> {
  const apiKey = 'sk-test-transcription-key';
  const requests: TranscriptionRequest[] = [];
  const transcripts = new Map<string, string>();
  const failures: Array<{ status: number; message: string }> = [];

  const reply = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const fail = (res: ServerResponse, status: number, message: string, code: string | null = null) =>
    reply(res, status, { error: { message, type: status === 401 ? 'invalid_request_error' : 'server_error', param: null, code } });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://127.0.0.1').pathname !== '/v1/audio/transcriptions') return fail(res, 404, 'Not found');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const type = req.headers['content-type'] ?? '';
    if (!type.startsWith('multipart/form-data')) return fail(res, 400, 'Could not parse multipart form: expected multipart/form-data');
    const form = await new Response(Buffer.concat(chunks), { headers: { 'content-type': type } }).formData();
    const file = form.get('file');
    const model = form.get('model');
    const language = form.get('language');
    const authorization = req.headers.authorization;
    if (typeof file === 'string' || !file || typeof model !== 'string') return fail(res, 400, "you must provide a 'file' and a 'model'");
    const data = Buffer.from(await file.arrayBuffer());
    requests.push({
      model,
      fileName: file.name,
      mimeType: file.type,
      bytes: data.length,
      ...(typeof language === 'string' ? { language } : {}),
      ...(authorization ? { authorization } : {}),
    });
    const injected = failures.shift();
    if (injected) return fail(res, injected.status, injected.message);
    if (authorization !== `Bearer ${apiKey}`) return fail(res, 401, 'Incorrect API key provided: sk-***.', 'invalid_api_key');
    reply(res, 200, { text: transcripts.get(data.toString('base64')) ?? `heard ${data.length} bytes` });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => fail(res, 500, String(err)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey,
    requests,
    say: (data, text) => void transcripts.set(data.toString('base64'), text),
    failNext: (status, message = 'The server had an error while processing your request.') => void failures.push({ status, message }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
