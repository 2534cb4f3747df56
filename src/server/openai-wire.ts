import { z } from 'zod';
import type { ImageInput } from '../core/assistant/images.js';
import { decodeImages } from '../core/assistant/images.js';
import { httpError } from './http.js';

/**
 * The OpenAI Chat Completions wire format as this gateway speaks it (POST /v1/chat/completions,
 * GET /v1/models): the request as clients send it, the conversation read out of it, and the
 * objects and errors sent back, shaped as OpenAI's API reference has them so that the official
 * SDKs and the clients built on them (Open WebUI, LibreChat, Chatbox, editor plugins) work as
 * they are. docs/api.md says what is taken from a request and what is ignored.
 */

const sessionKey = z.string().min(1).max(256);

const textPart = z.looseObject({ type: z.literal('text'), text: z.string().max(200_000) });
const imagePart = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.union([z.string(), z.looseObject({ url: z.string(), detail: z.string().optional() })]),
});
/** Parts of another type (audio, files) are named in the error the route answers. */
const otherPart = z.looseObject({ type: z.string() });

const message = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string().max(200_000), z.array(z.union([textPart, imagePart, otherPart])).max(100)]).nullish(),
  name: z.string().max(256).optional(),
});

/**
 * Unknown fields are accepted and ignored (unlike our own routes): clients send sampling settings
 * (`temperature`, `max_tokens`, `top_p`…) that an agent's engine chooses for itself.
 */
export const chatCompletionBody = z.looseObject({
  model: z.string().min(1).max(256),
  messages: z.array(message).min(1).max(1000),
  stream: z.boolean().nullish(),
  user: sessionKey.optional(),
  n: z.number().int().min(1).max(1, 'only one choice (n: 1) can be made').nullish(),
});

export type ChatCompletionRequest = z.output<typeof chatCompletionBody>;
type Message = ChatCompletionRequest['messages'][number];

/** What one request asks of the assistant. */
export interface OpenAiConversation {
  /** The last user message's text (what a person wrote, for the activity feed and slash commands). */
  text: string;
  /** The prompt for the engine: `text`, or with no session the earlier messages first as context. */
  prompt: string;
  images: ImageInput[];
}

/**
 * The last message must be the user's. With a session the engine keeps the history and gets only
 * that message; without one, the earlier messages (system instructions included) come first, as
 * context. Images reach the engine only from the last message (earlier ones are named).
 */
export function readConversation(messages: readonly Message[], withSession: boolean): OpenAiConversation {
  const last = messages.at(-1);
  if (last?.role !== 'user') {
    throw invalid(`the last message must be the user's (got "${last?.role ?? 'none'}"): the assistant answers the user's last message`, 'messages');
  }
  const index = messages.length - 1;
  const { text, images } = readContent(last, index);
  if (text.trim() === '' && images.length === 0) throw invalid('the last message has no text and no image', `messages[${index}].content`);
  const checked = decodeImages(images);
  if (!checked.ok) throw invalid(checked.message, `messages[${index}].content`);
  const earlier = messages.slice(0, -1);
  if (withSession || earlier.length === 0) return { text, prompt: text, images };
  const lines = earlier.map((m, i) => `[${m.role}] ${describeContent(m, i)}`);
  const prompt = `The conversation so far, as the client sent it:\n\n${lines.join('\n\n')}\n\nReply to the user's last message:\n\n${text}`;
  return { text, prompt, images };
}

/** The `id` of a completion: `chatcmpl-` and 24 characters, as OpenAI's look. */
export function completionId(random: string): string {
  return `chatcmpl-${random.replace(/-/g, '').slice(0, 24)}`;
}

export interface CompletionMeta {
  id: string;
  /** Unix seconds. */
  created: number;
  /** The request's `model`, reported back as it was sent. */
  model: string;
}

export function completionObject(meta: CompletionMeta, content: string): Record<string, unknown> {
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
  };
}

/** One `chat.completion.chunk`: `delta` is the new part; `finish` ends the choice. */
export function chunkObject(meta: CompletionMeta, delta: Record<string, unknown>, finish: 'stop' | null = null): Record<string, unknown> {
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
}

export function modelObject(id: string, created: number): Record<string, unknown> {
  return { id, object: 'model', created, owned_by: 'service' };
}

/** OpenAI's error object: `{message, type, param, code}`. */
export interface OpenAiError {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

/** How a turn that did not complete is answered: the status, the error, and whether retrying can help. */
export function failedTurnError(status: 'failed' | 'aborted', message: string): { status: number; error: OpenAiError; retry: boolean } {
  if (status === 'aborted') return { status: 503, error: { message, type: 'server_error', param: null, code: 'aborted' }, retry: false };
  if (/^(Server busy|Too many pending requests|You already have)/.test(message)) {
    return { status: 429, error: { message, type: 'requests', param: null, code: 'rate_limit_exceeded' }, retry: true };
  }
  if (/^The daily budget is spent/.test(message)) {
    return { status: 429, error: { message, type: 'insufficient_quota', param: null, code: 'insufficient_quota' }, retry: false };
  }
  return { status: 502, error: { message, type: 'server_error', param: null, code: 'engine_failed' }, retry: false };
}

/**
 * Our `{error: "…", …}` body (what httpError carries) as OpenAI's `{error: {message, type, param,
 * code}}`, for every answer under /v1/ (app.ts): a route's own details (`openai`) win.
 */
export function toOpenAiErrorBody(status: number, body: Record<string, unknown>): { error: OpenAiError } {
  const given = (body.openai ?? {}) as Partial<OpenAiError>;
  const issues = Array.isArray(body.issues) ? (body.issues as Array<{ path?: unknown }>) : [];
  const param = typeof issues[0]?.path === 'string' && issues[0].path !== '' ? issues[0].path : null;
  const type = status >= 500 ? 'server_error' : status === 429 ? 'requests' : 'invalid_request_error';
  const code = status === 401 ? 'invalid_api_key' : status === 404 ? 'not_found' : null;
  return {
    error: {
      message: typeof body.error === 'string' ? body.error : 'error',
      type: given.type ?? type,
      param: given.param ?? param,
      code: given.code ?? code,
    },
  };
}

export const isOpenAiPath = (path: string): boolean => path === '/v1' || path.startsWith('/v1/');

// --- internal ---

function invalid(message: string, param: string) {
  return httpError(400, message, { openai: { param } });
}

function readContent(m: Message, index: number): { text: string; images: ImageInput[] } {
  if (m.content === null || m.content === undefined) return { text: '', images: [] };
  if (typeof m.content === 'string') return { text: m.content, images: [] };
  const texts: string[] = [];
  const images: ImageInput[] = [];
  m.content.forEach((part, j) => {
    const at = `messages[${index}].content[${j}]`;
    if (part.type === 'text') texts.push(String(part.text));
    else if (part.type === 'image_url') images.push(readImage(part.image_url, at));
    else throw invalid(`content parts of type "${part.type}" are not supported (text and image_url are)`, `${at}.type`);
  });
  return { text: texts.join('\n'), images };
}

/** Only data URLs: the gateway fetches nothing from the network on a client's say-so. */
function readImage(value: unknown, at: string): ImageInput {
  const url = typeof value === 'string' ? value : String((value as { url?: unknown }).url ?? '');
  const m = /^data:([^;,]+);base64,/i.exec(url);
  if (!m) throw invalid('image_url must be a data URL (data:image/png;base64,…); the gateway does not fetch images from the network', `${at}.image_url`);
  return { mimeType: (m[1] ?? 'image/png').toLowerCase(), data: url.slice(m[0].length) };
}

/** A message of the context as text; images and other parts are named, not sent. */
function describeContent(m: Message, index: number): string {
  if (m.content === null || m.content === undefined) return '(no text)';
  if (typeof m.content === 'string') return m.content;
  return m.content
    .map((part) => (part.type === 'text' ? String(part.text) : part.type === 'image_url' ? '(an image)' : `(a ${part.type} part)`))
    .join('\n')
    .replace(/^$/, `(message ${index} has no text)`);
}
