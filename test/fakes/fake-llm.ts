/**
 * A scripted LLM server for tests. It speaks the four wire APIs the supported coding-agent CLIs use,
 * with the same SSE framing the real services use, on 127.0.0.1:
 *
 * - Anthropic Messages       `POST /v1/messages` (Claude Code), `POST /v1/messages/count_tokens`
 * - OpenAI Chat Completions  `POST /v1/chat/completions` (OpenCode via @ai-sdk/openai-compatible, Qwen Code)
 * - OpenAI Responses         `POST /v1/responses` (Codex)
 * - Gemini API               `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, `:generateContent`,
 *                            `:countTokens` (Gemini CLI; key in `x-goog-api-key`, a bad key gets Google's 400
 *                            `API_KEY_INVALID`; JSON-mode calls get the smallest object their schema accepts)
 * - `GET /v1/models`; `HEAD` of any path, `GET /` and `GET /api/hello` (warm-ups, no auth)
 *
 * The `/v1` prefix is optional on every route and query strings are ignored (`?beta=true`).
 *
 * What it answers is decided by the latest real user message of the request (CLI-added context such as
 * `<system-reminder>` blocks or Codex's `<environment_context>` messages is ignored, and the double quotes
 * OpenCode puts around argv prompts are removed):
 *
 * - `RUN-TOOL`    no tool result since that user message yet: one shell tool call `echo FAKE-TOOL-OUTPUT`;
 *                 once the result is in: `FAKE-LLM-REPLY: <user message>`.
 * - `BIG-OUTPUT`  the same, but the command prints 300 000 bytes.
 * - `ASK-TOOL`    the same, but the command writes a file first (agents that ask before writing do ask).
 *                 The shell tool is the first of bash / run_shell_command / Bash / shell the request offers.
 * - `RUN-COMMAND-B64:<base64>` like `RUN-TOOL`, but the command is what the base64 (UTF-8) decodes to
 *                 (newlines, zero-width characters and quotes survive every CLI's prompt handling).
 * - `CALL-TOOL-B64:<base64>` Anthropic Messages only: a call of any tool, `{"name", "input"}` decoded from
 *                 the base64 JSON (Claude Code's Write, Edit, Read…); elsewhere as `RUN-TOOL`.
 * - `TEXT-THEN-TOOL` like `RUN-TOOL`, but the tool call comes after a text block in the same message
 *                 (`FAKE_PREAMBLE`), as models do when they say what they are about to do.
 * - `SLOW-<ms>`   waits that long before the response headers (combinable with everything else).
 * - `HOLD-<word>` holds the response (before its headers) until the test calls `release('HOLD-<word>')`;
 *                 once released, that marker holds nothing any more (an engine that folds an interrupted
 *                 message into the next one is not held again).
 * - `SAY:<text>`  answers exactly `<text>` (the rest of the message, trailing whitespace dropped). This is
 *                 the one text answer that never gets the PREVIOUS-USER-MESSAGE line, so it stays exact.
 * - `PARAGRAPHS`  three paragraphs separated by blank lines, streamed as many small deltas.
 * - otherwise     `FAKE-LLM-REPLY: <user message>`.
 *
 * Every other text answer gets a last line `PREVIOUS-USER-MESSAGE: <first earlier user message>` when the
 * conversation holds an earlier user message (i.e. a resumed session). A tools-less request whose system
 * prompt talks about a title (OpenCode's title generator) gets a short title.
 *
 * Every call reports 100 input / 20 output tokens.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';

export type FakeApi = 'anthropic' | 'chat' | 'responses' | 'gemini' | 'other';

export interface RecordedRequest {
  method: string;
  /** Path including the query string, as received. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body; the raw text when it is not JSON; undefined when empty. */
  body: unknown;
  api: FakeApi;
}

export interface FakeLlm {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Answer the requests a `HOLD-<word>` marker holds, and every later one carrying it. */
  release(marker: string): void;
  close(): Promise<void>;
}

export interface FakeLlmOptions {
  port?: number;
  /** The only key accepted (x-api-key or Authorization: Bearer). Default `fake-key`. */
  apiKey?: string;
}

export const FAKE_MODEL = 'fake-model';
export const FAKE_TOOL_COMMAND = 'echo FAKE-TOOL-OUTPUT';
export const FAKE_BIG_COMMAND = "head -c 300000 /dev/zero | tr '\\0' x";
/** A command that writes a file: agents that ask before such a tool call (ACP permission requests) do ask. */
export const FAKE_ASKING_COMMAND = 'echo FAKE-TOOL-OUTPUT > FAKE-WRITTEN.txt; cat FAKE-WRITTEN.txt';
export const FAKE_TITLE = 'Fake session title';
export const FAKE_PREAMBLE = 'FAKE-LLM-PREAMBLE: I will run a command first.';
export const FAKE_PARAGRAPHS = [
  'First paragraph: the fake model streams this text in many small pieces so that a client can show it as it arrives.',
  'Second paragraph: it is separated from the first by one blank line, which chat renderers keep as a break.',
  'Third paragraph: this is the end of the scripted answer.',
].join('\n\n');

const USAGE_IN = 100;
const USAGE_OUT = 20;

// ---------------------------------------------------------------------------------------------------
// Conversation model shared by the three APIs.

type Entry = { kind: 'user'; text: string } | { kind: 'tool_result' } | { kind: 'assistant' };

interface Conversation {
  system: string;
  entries: Entry[];
  hasTools: boolean;
  /** Names of the tools the request offers (the shell tool is picked from them). */
  toolNames: string[];
}

type Reply =
  | { kind: 'text'; text: string; chunkSize: number; deltaDelayMs: number }
  /**
   * A tool call, optionally after a text block in the same message; `tool` is the shell tool the
   * request offered; `call` (Anthropic only) replaces the shell call by any tool and input.
   */
  | { kind: 'tool'; command: string; description: string; preamble?: string; tool?: string; call?: { name: string; input: unknown } };

interface Plan {
  /** A `HOLD-<word>` marker of the user message. */
  hold?: string;
  delayMs: number;
  reply: Reply;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const block of content) {
    if (typeof block === 'string') parts.push(block);
    else if (block && typeof block === 'object') {
      const b = block as Record<string, unknown>;
      if (typeof b.text === 'string' && (b.type === undefined || /text/.test(String(b.type)))) parts.push(b.text);
    }
  }
  return parts.join('\n');
}

/** Removes text a CLI adds around the user's words; '' when the message is pure CLI context. */
function cleanUserText(raw: string): string {
  let text = raw.replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, '').trim();
  // Whole-message context blocks: <environment_context>…</environment_context>, <user_instructions>…
  if (/^<([A-Za-z_][\w-]*)(\s[^>]*)?>[\s\S]*<\/\1>$/.test(text)) return '';
  if (/^# AGENTS\.md instructions/.test(text)) return '';
  // OpenCode passes argv prompts as a JSON-ish quoted string: "…" with inner quotes escaped.
  const quoted = /^"([\s\S]*)"$/.exec(text);
  if (quoted) text = quoted[1]!.replace(/\\(["\\])/g, '$1');
  return text;
}

function pushUser(entries: Entry[], raw: string): void {
  const text = cleanUserText(raw);
  if (text) entries.push({ kind: 'user', text });
}

function anthropicConversation(body: Record<string, unknown>): Conversation {
  const entries: Entry[] = [];
  let system = textOf(body.system);
  for (const m of asArray(body.messages)) {
    const role = m.role;
    if (role === 'system') {
      system += `\n${textOf(m.content)}`;
    } else if (role === 'assistant') {
      entries.push({ kind: 'assistant' });
    } else if (role === 'user') {
      if (Array.isArray(m.content)) {
        const texts: string[] = [];
        for (const b of m.content as Array<Record<string, unknown>>) {
          if (b?.type === 'tool_result') entries.push({ kind: 'tool_result' });
          else if (b?.type === 'text' && typeof b.text === 'string') {
            const t = cleanUserText(b.text);
            if (t) texts.push(t);
          }
        }
        if (texts.length) entries.push({ kind: 'user', text: texts.join('\n') });
      } else pushUser(entries, textOf(m.content));
    }
  }
  return { system, entries, hasTools: asArray(body.tools).length > 0, toolNames: asArray(body.tools).map((t) => String(t.name)) };
}

function chatConversation(body: Record<string, unknown>): Conversation {
  const entries: Entry[] = [];
  let system = '';
  for (const m of asArray(body.messages)) {
    const role = m.role;
    if (role === 'system' || role === 'developer') system += `\n${textOf(m.content)}`;
    else if (role === 'assistant') entries.push({ kind: 'assistant' });
    else if (role === 'tool' || role === 'function') entries.push({ kind: 'tool_result' });
    else if (role === 'user') pushUser(entries, textOf(m.content));
  }
  const toolNames = asArray(body.tools).map((t) => String((t.function as Record<string, unknown> | undefined)?.name ?? t.name));
  return { system, entries, hasTools: toolNames.length > 0, toolNames };
}

function responsesConversation(body: Record<string, unknown>): Conversation {
  const entries: Entry[] = [];
  let system = typeof body.instructions === 'string' ? body.instructions : '';
  if (typeof body.input === 'string') pushUser(entries, body.input);
  for (const item of asArray(body.input)) {
    const type = item.type ?? 'message';
    if (type === 'message') {
      if (item.role === 'user') pushUser(entries, textOf(item.content));
      else if (item.role === 'assistant') entries.push({ kind: 'assistant' });
      else system += `\n${textOf(item.content)}`;
    } else if (typeof type === 'string' && type.endsWith('_call_output')) {
      entries.push({ kind: 'tool_result' });
    } else if (typeof type === 'string' && type.endsWith('_call')) {
      entries.push({ kind: 'assistant' });
    }
  }
  return { system, entries, hasTools: asArray(body.tools).length > 0, toolNames: asArray(body.tools).map((t) => String(t.name)) };
}

/** Gemini generateContent: `contents` of user/model turns; function responses are tool results. */
function geminiConversation(body: Record<string, unknown>): Conversation {
  const entries: Entry[] = [];
  const system = textOf(asArray((body.systemInstruction as Record<string, unknown> | undefined)?.parts));
  for (const c of asArray(body.contents)) {
    const parts = asArray(c.parts);
    if (c.role === 'model') {
      entries.push({ kind: 'assistant' });
      continue;
    }
    const texts: string[] = [];
    for (const part of parts) {
      if (part.functionResponse) entries.push({ kind: 'tool_result' });
      else if (typeof part.text === 'string') {
        // Gemini CLI puts its own <session_context> block in front of the first prompt, as a part of its own.
        const t = cleanUserText(part.text);
        if (t) texts.push(t);
      }
    }
    if (texts.length) entries.push({ kind: 'user', text: texts.join('\n') });
  }
  const toolNames = asArray(body.tools).flatMap((t) => asArray(t.functionDeclarations).map((d) => String(d.name)));
  return { system, entries, hasTools: toolNames.length > 0, toolNames };
}

function asArray(v: unknown): Array<Record<string, unknown>> {
  return Array.isArray(v) ? (v.filter((x) => x && typeof x === 'object') as Array<Record<string, unknown>>) : [];
}

function plan(conv: Conversation): Plan {
  if (!conv.hasTools && /\btitle\b/i.test(conv.system)) {
    return { delayMs: 0, reply: { kind: 'text', text: FAKE_TITLE, chunkSize: 8, deltaDelayMs: 0 } };
  }
  let lastUser = -1;
  for (let i = conv.entries.length - 1; i >= 0; i--) {
    if (conv.entries[i]!.kind === 'user') {
      lastUser = i;
      break;
    }
  }
  const userText = lastUser >= 0 ? (conv.entries[lastUser] as { text: string }).text : '';
  const toolResultSeen = conv.entries.slice(lastUser + 1).some((e) => e.kind === 'tool_result');
  const earlier = conv.entries.slice(0, Math.max(lastUser, 0)).find((e) => e.kind === 'user') as { text: string } | undefined;

  const slow = /SLOW-(\d+)/.exec(userText);
  const delayMs = slow ? Number(slow[1]) : 0;
  const withPrevious = (text: string): string => (earlier ? `${text}\nPREVIOUS-USER-MESSAGE: ${earlier.text}` : text);

  const encoded = /RUN-COMMAND-B64:(\S+)/.exec(userText)?.[1];
  const called = /CALL-TOOL-B64:(\S+)/.exec(userText)?.[1];
  if ((encoded || called) && !toolResultSeen) {
    const tool = SHELL_TOOLS.find((t) => conv.toolNames.includes(t));
    const command = encoded ? Buffer.from(encoded, 'base64').toString('utf8') : FAKE_TOOL_COMMAND;
    const call = called ? (JSON.parse(Buffer.from(called, 'base64').toString('utf8')) as { name: string; input: unknown }) : undefined;
    return { delayMs, reply: { kind: 'tool', command, description: 'Run the given command', ...(tool ? { tool } : {}), ...(call ? { call } : {}) } };
  }
  const big = userText.includes('BIG-OUTPUT');
  const preamble = userText.includes('TEXT-THEN-TOOL');
  const asking = userText.includes('ASK-TOOL');
  if ((big || preamble || asking || userText.includes('RUN-TOOL')) && !toolResultSeen) {
    const tool = SHELL_TOOLS.find((t) => conv.toolNames.includes(t));
    return {
      delayMs,
      reply: big
        ? { kind: 'tool', command: FAKE_BIG_COMMAND, description: 'Print 300000 bytes', ...(tool ? { tool } : {}) }
        : asking
          ? { kind: 'tool', command: FAKE_ASKING_COMMAND, description: 'Write and print a file', ...(tool ? { tool } : {}) }
          : {
              kind: 'tool',
              command: FAKE_TOOL_COMMAND,
              description: 'Print a marker',
              ...(preamble ? { preamble: FAKE_PREAMBLE } : {}),
              ...(tool ? { tool } : {}),
            },
    };
  }
  const say = /SAY:([\s\S]*)$/.exec(userText);
  if (say) return { delayMs, reply: { kind: 'text', text: say[1]!.trimEnd(), chunkSize: 4, deltaDelayMs: 0 } };
  if (userText.includes('PARAGRAPHS')) {
    return { delayMs, reply: { kind: 'text', text: withPrevious(FAKE_PARAGRAPHS), chunkSize: 5, deltaDelayMs: 5 } };
  }
  return {
    delayMs,
    reply: { kind: 'text', text: withPrevious(`FAKE-LLM-REPLY: ${userText}`), chunkSize: 12, deltaDelayMs: 0 },
  };
}

/** Shell tool names of the CLIs, in the order they are looked for among the request's tools. */
const SHELL_TOOLS = ['bash', 'run_shell_command', 'Bash', 'shell'];

function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  if (out.length === 0) out.push('');
  return out;
}

function id(prefix: string, len = 24): string {
  return prefix + randomBytes(len).toString('base64url').slice(0, len);
}

// ---------------------------------------------------------------------------------------------------
// HTTP plumbing.

class Stream {
  private closed = false;
  constructor(private readonly res: http.ServerResponse) {
    res.on('close', () => {
      this.closed = true;
    });
  }
  get gone(): boolean {
    return this.closed || this.res.destroyed;
  }
  start(): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-request-id': id('req_'),
      'request-id': id('req_'),
    });
    this.res.flushHeaders();
  }
  async event(name: string | null, data: unknown, delayMs = 0): Promise<void> {
    if (this.gone) return;
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    this.res.write(`${name ? `event: ${name}\n` : ''}data: ${payload}\n\n`);
    await pause(delayMs);
  }
  end(): void {
    if (!this.gone) this.res.end();
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => (ms > 0 ? setTimeout(resolve, ms) : setImmediate(resolve)));
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, extra: http.OutgoingHttpHeaders = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': id('req_'),
    'x-request-id': id('req_'),
    ...extra,
  });
  res.end(text);
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const enc = String(req.headers['content-encoding'] ?? '').toLowerCase();
    let src: NodeJS.ReadableStream = req;
    if (enc === 'gzip' || enc === 'x-gzip') src = req.pipe(zlib.createGunzip());
    else if (enc === 'deflate') src = req.pipe(zlib.createInflate());
    else if (enc === 'br') src = req.pipe(zlib.createBrotliDecompress());
    const parts: Buffer[] = [];
    src.on('data', (c: Buffer) => parts.push(c));
    src.on('end', () => resolve(Buffer.concat(parts)));
    src.on('error', reject);
  });
}

function classify(path: string): FakeApi {
  if (/^(\/v1)?\/messages(\/count_tokens)?$/.test(path)) return 'anthropic';
  if (/^(\/v1)?\/chat\/completions$/.test(path)) return 'chat';
  if (/^(\/v1)?\/responses$/.test(path)) return 'responses';
  if (/^\/v1(beta|alpha)?\/models\/[^/:]+:(streamGenerateContent|generateContent|countTokens)$/.test(path)) return 'gemini';
  return 'other';
}

function presentedKey(req: http.IncomingMessage): string | undefined {
  const x = req.headers['x-api-key'] ?? req.headers['x-goog-api-key'];
  if (typeof x === 'string' && x) return x;
  const query = new URL(req.url ?? '/', 'http://fake').searchParams.get('key');
  if (query) return query;
  const auth = req.headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(auth);
    if (m) return m[1]!.trim();
  }
  return undefined;
}

function maskKey(key: string | undefined): string {
  if (!key) return '';
  return key.length <= 6 ? '***' : `${key.slice(0, 3)}***${key.slice(-3)}`;
}

function unauthorized(res: http.ServerResponse, api: FakeApi, key: string | undefined): void {
  if (api === 'anthropic') {
    sendJson(res, 401, {
      type: 'error',
      error: { type: 'authentication_error', message: 'invalid x-api-key' },
      request_id: id('req_'),
    });
    return;
  }
  const message = key
    ? `Incorrect API key provided: ${maskKey(key)}. You can find your API key at https://platform.openai.com/account/api-keys.`
    : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
  sendJson(res, 401, {
    error: { message, type: 'invalid_request_error', param: null, code: key ? 'invalid_api_key' : null },
  });
}

// ---------------------------------------------------------------------------------------------------
// Anthropic Messages.

function anthropicUsage(output: number): Record<string, unknown> {
  return {
    input_tokens: USAGE_IN,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: output,
    service_tier: 'standard',
  };
}

async function anthropicStream(res: http.ServerResponse, model: string, reply: Reply): Promise<void> {
  const s = new Stream(res);
  s.start();
  const msgId = id('msg_');
  await s.event('message_start', {
    type: 'message_start',
    message: {
      id: msgId,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: anthropicUsage(1),
    },
  });
  const textBlock = async (index: number, text: string, chunkSize: number, deltaDelayMs: number) => {
    await s.event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    if (index === 0) await s.event('ping', { type: 'ping' });
    for (const piece of chunks(text, chunkSize)) {
      await s.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } }, deltaDelayMs);
    }
    await s.event('content_block_stop', { type: 'content_block_stop', index });
  };
  if (reply.kind === 'text') {
    await textBlock(0, reply.text, reply.chunkSize, reply.deltaDelayMs);
  } else {
    const index = reply.preamble ? 1 : 0;
    if (reply.preamble) await textBlock(0, reply.preamble, 8, 0);
    await s.event('content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: id('toolu_'), name: reply.call?.name ?? 'Bash', input: {} },
    });
    if (index === 0) await s.event('ping', { type: 'ping' });
    const json = JSON.stringify(reply.call?.input ?? { command: reply.command, description: reply.description });
    for (const piece of ['', ...chunks(json, 16)]) {
      await s.event('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: piece },
      });
    }
    await s.event('content_block_stop', { type: 'content_block_stop', index });
  }
  await s.event('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: reply.kind === 'text' ? 'end_turn' : 'tool_use', stop_sequence: null },
    usage: { output_tokens: USAGE_OUT },
  });
  await s.event('message_stop', { type: 'message_stop' });
  s.end();
}

function anthropicJson(model: string, reply: Reply): Record<string, unknown> {
  return {
    id: id('msg_'),
    type: 'message',
    role: 'assistant',
    model,
    content:
      reply.kind === 'text'
        ? [{ type: 'text', text: reply.text }]
        : [
            ...(reply.preamble ? [{ type: 'text', text: reply.preamble }] : []),
            {
              type: 'tool_use',
              id: id('toolu_'),
              name: reply.call?.name ?? 'Bash',
              input: reply.call?.input ?? { command: reply.command, description: reply.description },
            },
          ],
    stop_reason: reply.kind === 'text' ? 'end_turn' : 'tool_use',
    stop_sequence: null,
    usage: anthropicUsage(USAGE_OUT),
  };
}

// ---------------------------------------------------------------------------------------------------
// OpenAI Chat Completions.

async function chatStream(res: http.ServerResponse, model: string, reply: Reply, includeUsage: boolean): Promise<void> {
  const s = new Stream(res);
  s.start();
  const base = { id: id('chatcmpl-'), object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, system_fingerprint: 'fp_fake' };
  const chunk = (delta: Record<string, unknown>, finish: string | null): Record<string, unknown> => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  if (reply.kind === 'text') {
    await s.event(null, chunk({ role: 'assistant', content: '', refusal: null }, null));
    for (const piece of chunks(reply.text, reply.chunkSize)) {
      await s.event(null, chunk({ content: piece }, null), reply.deltaDelayMs);
    }
    await s.event(null, chunk({}, 'stop'));
  } else {
    const args = JSON.stringify({ command: reply.command, description: reply.description });
    if (reply.preamble) {
      await s.event(null, chunk({ role: 'assistant', content: '', refusal: null }, null));
      for (const piece of chunks(reply.preamble, 8)) await s.event(null, chunk({ content: piece }, null));
    }
    await s.event(
      null,
      chunk(
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ index: 0, id: id('call_'), type: 'function', function: { name: reply.tool ?? 'bash', arguments: '' } }],
          refusal: null,
        },
        null,
      ),
    );
    for (const piece of chunks(args, 16)) {
      await s.event(null, chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }, null));
    }
    await s.event(null, chunk({}, 'tool_calls'));
  }
  if (includeUsage) {
    await s.event(null, {
      ...base,
      choices: [],
      usage: {
        prompt_tokens: USAGE_IN,
        completion_tokens: USAGE_OUT,
        total_tokens: USAGE_IN + USAGE_OUT,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
    });
  }
  await s.event(null, '[DONE]');
  s.end();
}

function chatJson(model: string, reply: Reply): Record<string, unknown> {
  const message =
    reply.kind === 'text'
      ? { role: 'assistant', content: reply.text, refusal: null }
      : {
          role: 'assistant',
          content: reply.preamble ?? null,
          refusal: null,
          tool_calls: [
            {
              id: id('call_'),
              type: 'function',
              function: { name: reply.tool ?? 'bash', arguments: JSON.stringify({ command: reply.command, description: reply.description }) },
            },
          ],
        };
  return {
    id: id('chatcmpl-'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    system_fingerprint: 'fp_fake',
    choices: [{ index: 0, message, logprobs: null, finish_reason: reply.kind === 'text' ? 'stop' : 'tool_calls' }],
    usage: { prompt_tokens: USAGE_IN, completion_tokens: USAGE_OUT, total_tokens: USAGE_IN + USAGE_OUT },
  };
}

// ---------------------------------------------------------------------------------------------------
// OpenAI Responses.

function responsesUsage(): Record<string, unknown> {
  return {
    input_tokens: USAGE_IN,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: USAGE_OUT,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: USAGE_IN + USAGE_OUT,
  };
}

function responseObject(respId: string, model: string, status: string, output: unknown[], usage: unknown): Record<string, unknown> {
  return {
    id: respId,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage,
    metadata: {},
  };
}

type ResponsesOutput = { kind: 'message'; text: string; chunkSize: number; deltaDelayMs: number } | { kind: 'call'; command: string };

/** The output items of one response: the text, or a function call (after a text message when there is a preamble). */
function responsesOutputs(reply: Reply): ResponsesOutput[] {
  if (reply.kind === 'text') return [{ kind: 'message', text: reply.text, chunkSize: reply.chunkSize, deltaDelayMs: reply.deltaDelayMs }];
  return [
    ...(reply.preamble ? [{ kind: 'message' as const, text: reply.preamble, chunkSize: 8, deltaDelayMs: 0 }] : []),
    { kind: 'call', command: reply.command },
  ];
}

function responsesItem(out: ResponsesOutput, ids: { id: string; callId: string }, done: boolean): Record<string, unknown> {
  if (out.kind === 'message') {
    return {
      id: ids.id,
      type: 'message',
      status: done ? 'completed' : 'in_progress',
      role: 'assistant',
      content: done ? [{ type: 'output_text', text: out.text, annotations: [], logprobs: [] }] : [],
    };
  }
  return {
    id: ids.id,
    type: 'function_call',
    status: done ? 'completed' : 'in_progress',
    call_id: ids.callId,
    name: 'exec_command',
    arguments: done ? JSON.stringify({ cmd: out.command }) : '',
  };
}

const responsesIds = (out: ResponsesOutput) => ({ id: id(out.kind === 'message' ? 'msg_' : 'fc_'), callId: id('call_') });

async function responsesStream(res: http.ServerResponse, model: string, reply: Reply): Promise<void> {
  const s = new Stream(res);
  s.start();
  let seq = 0;
  const ev = (type: string, data: Record<string, unknown>, delayMs = 0): Promise<void> => s.event(type, { type, sequence_number: seq++, ...data }, delayMs);
  const respId = id('resp_');
  await ev('response.created', { response: responseObject(respId, model, 'in_progress', [], null) });
  await ev('response.in_progress', { response: responseObject(respId, model, 'in_progress', [], null) });
  const done: Array<Record<string, unknown>> = [];
  for (const [outputIndex, out] of responsesOutputs(reply).entries()) {
    const ids = responsesIds(out);
    const doneItem = responsesItem(out, ids, true);
    await ev('response.output_item.added', { output_index: outputIndex, item: responsesItem(out, ids, false) });
    if (out.kind === 'message') {
      const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      const at = { item_id: ids.id, output_index: outputIndex, content_index: 0 };
      await ev('response.content_part.added', { ...at, part });
      for (const piece of chunks(out.text, out.chunkSize)) {
        await ev('response.output_text.delta', { ...at, delta: piece, logprobs: [] }, out.deltaDelayMs);
      }
      await ev('response.output_text.done', { ...at, text: out.text, logprobs: [] });
      await ev('response.content_part.done', { ...at, part: { ...part, text: out.text } });
    } else {
      const args = doneItem.arguments as string;
      for (const piece of chunks(args, 16)) {
        await ev('response.function_call_arguments.delta', { item_id: ids.id, output_index: outputIndex, delta: piece });
      }
      await ev('response.function_call_arguments.done', { item_id: ids.id, output_index: outputIndex, arguments: args });
    }
    await ev('response.output_item.done', { output_index: outputIndex, item: doneItem });
    done.push(doneItem);
  }
  await ev('response.completed', { response: responseObject(respId, model, 'completed', done, responsesUsage()) });
  s.end();
}

// ---------------------------------------------------------------------------------------------------
// Gemini API (`/v1beta/models/<model>:streamGenerateContent?alt=sse`, `:generateContent`, `:countTokens`).

function geminiUsage(): Record<string, unknown> {
  return { promptTokenCount: USAGE_IN, candidatesTokenCount: USAGE_OUT, totalTokenCount: USAGE_IN + USAGE_OUT };
}

function geminiChunk(model: string, parts: unknown[], finish: boolean, responseId: string): Record<string, unknown> {
  return {
    candidates: [{ content: { parts, role: 'model' }, ...(finish ? { finishReason: 'STOP' } : {}), index: 0 }],
    ...(finish ? { usageMetadata: geminiUsage() } : {}),
    modelVersion: model,
    responseId,
  };
}

/** The parts of the whole answer: text, or a function call (after a text part when there is a preamble). */
function geminiParts(reply: Reply): Array<Record<string, unknown>> {
  if (reply.kind === 'text') return [{ text: reply.text }];
  return [
    ...(reply.preamble ? [{ text: reply.preamble }] : []),
    { functionCall: { name: reply.tool ?? 'run_shell_command', args: { command: reply.command, description: reply.description } } },
  ];
}

async function geminiStream(res: http.ServerResponse, model: string, reply: Reply): Promise<void> {
  const s = new Stream(res);
  s.start();
  const responseId = id('resp_');
  if (reply.kind === 'text') {
    const pieces = chunks(reply.text, reply.chunkSize);
    for (const [i, piece] of pieces.entries()) {
      await s.event(null, geminiChunk(model, [{ text: piece }], i === pieces.length - 1, responseId), reply.deltaDelayMs);
    }
  } else {
    const parts = geminiParts(reply);
    for (const [i, part] of parts.entries()) await s.event(null, geminiChunk(model, [part], i === parts.length - 1, responseId));
  }
  s.end();
}

/**
 * A JSON-mode request (Gemini CLI's model router, next-speaker check): the smallest object its
 * schema accepts, so the CLI's own bookkeeping calls succeed without a scripted answer.
 */
function geminiJsonAnswer(schema: unknown): unknown {
  const sc = (schema ?? {}) as Record<string, unknown>;
  const type = String(sc.type ?? '').toLowerCase();
  if (Array.isArray(sc.enum) && sc.enum.length > 0) return sc.enum[0];
  if (type === 'object' || sc.properties) {
    const props = (sc.properties ?? {}) as Record<string, unknown>;
    const required = Array.isArray(sc.required) ? (sc.required as string[]) : Object.keys(props);
    return Object.fromEntries(required.map((k) => [k, geminiJsonAnswer(props[k])]));
  }
  if (type === 'array') return [];
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'boolean') return false;
  return 'fake';
}

function geminiJsonSchema(body: Record<string, unknown>): unknown | undefined {
  const config = (body.generationConfig ?? {}) as Record<string, unknown>;
  if (config.responseMimeType !== 'application/json') return undefined;
  return config.responseJsonSchema ?? config.responseSchema ?? {};
}

/** Google answers a bad key with 400 INVALID_ARGUMENT / API_KEY_INVALID (not 401). */
function geminiUnauthorized(res: http.ServerResponse): void {
  sendJson(res, 400, {
    error: {
      code: 400,
      message: 'API key not valid. Please pass a valid API key.',
      status: 'INVALID_ARGUMENT',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }],
    },
  });
}

/** The text of the latest user message (where a HOLD marker is looked for). */
function conversationText(conv: Conversation): string {
  for (let i = conv.entries.length - 1; i >= 0; i--) {
    const e = conv.entries[i]!;
    if (e.kind === 'user') return e.text;
  }
  return '';
}

// ---------------------------------------------------------------------------------------------------

export async function startFakeLlm(opts: FakeLlmOptions = {}): Promise<FakeLlm> {
  const apiKey = opts.apiKey ?? 'fake-key';
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const held = new Map<string, Set<() => void>>();
  const released = new Set<string>();

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const raw = await readBody(req);
    const fullPath = req.url ?? '/';
    const path = fullPath.split('?')[0]!.replace(/\/+$/, '') || '/';
    const api = classify(path);
    const method = req.method ?? 'GET';
    let body: unknown;
    if (raw.length) {
      const text = raw.toString('utf8');
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    requests.push({ method, path: fullPath, headers: req.headers, body, api });

    // Connection warm-ups: Claude Code sends `HEAD /api/hello` (without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC)
    // and older versions `HEAD /`. Every HEAD, and GET of / or /api/hello, is answered 200 without auth.
    if (method === 'HEAD' || (method === 'GET' && (path === '/' || path === '/api/hello'))) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(method === 'HEAD' ? undefined : 'fake-llm ok\n');
      return;
    }

    const key = presentedKey(req);
    const isModels = method === 'GET' && /^(\/v1)?\/models$/.test(path);
    if (api !== 'other' || isModels) {
      if (key !== apiKey) {
        if (api === 'gemini') geminiUnauthorized(res);
        else unauthorized(res, api, key);
        return;
      }
    }
    if (isModels) {
      sendJson(res, 200, {
        object: 'list',
        data: [
          {
            id: FAKE_MODEL,
            object: 'model',
            created: 1_700_000_000,
            owned_by: 'fake-llm',
            type: 'model',
            display_name: 'Fake Model',
            created_at: '2026-01-01T00:00:00Z',
          },
        ],
        has_more: false,
        first_id: FAKE_MODEL,
        last_id: FAKE_MODEL,
      });
      return;
    }
    if (api === 'other' || method !== 'POST' || !body || typeof body !== 'object') {
      if (api === 'anthropic') {
        sendJson(res, method === 'POST' ? 400 : 404, {
          type: 'error',
          error: { type: method === 'POST' ? 'invalid_request_error' : 'not_found_error', message: 'Unsupported request' },
        });
      } else {
        sendJson(res, 404, { error: { message: `Unknown request URL: ${method} ${path}`, type: 'invalid_request_error', param: null, code: 'unknown_url' } });
      }
      return;
    }

    const b = body as Record<string, unknown>;
    // Gemini names the model in the path: /v1beta/models/<model>:<method>.
    const geminiCall = api === 'gemini' ? /\/models\/([^/:]+):(\w+)$/.exec(path) : null;
    const model = typeof b.model === 'string' ? b.model : (geminiCall?.[1] ?? FAKE_MODEL);
    if (geminiCall?.[2] === 'countTokens') {
      sendJson(res, 200, { totalTokens: USAGE_IN });
      return;
    }
    const jsonSchema = api === 'gemini' ? geminiJsonSchema(b) : undefined;
    if (jsonSchema !== undefined) {
      const text = JSON.stringify(geminiJsonAnswer(jsonSchema));
      sendJson(res, 200, geminiChunk(model, [{ text }], true, id('resp_')));
      return;
    }
    if (api === 'anthropic' && path.endsWith('/count_tokens')) {
      sendJson(res, 200, { input_tokens: USAGE_IN });
      return;
    }
    const conv =
      api === 'anthropic'
        ? anthropicConversation(b)
        : api === 'chat'
          ? chatConversation(b)
          : api === 'gemini'
            ? geminiConversation(b)
            : responsesConversation(b);
    const p = plan(conv);
    const marker = /HOLD-[A-Za-z0-9-]+/.exec(conversationText(conv))?.[0];
    if (marker && !released.has(marker)) {
      await new Promise<void>((resolve) => {
        const waiting = held.get(marker) ?? new Set<() => void>();
        held.set(marker, waiting);
        waiting.add(resolve);
        res.on('close', () => {
          waiting.delete(resolve);
          resolve();
        });
      });
      if (res.destroyed) return;
    }
    if (p.delayMs > 0) {
      let aborted = false;
      res.on('close', () => {
        aborted = true;
      });
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          timers.delete(t);
          resolve();
        }, p.delayMs);
        timers.add(t);
        res.on('close', () => {
          clearTimeout(t);
          timers.delete(t);
          resolve();
        });
      });
      if (aborted || res.destroyed) return;
    }
    const stream = b.stream === true;
    if (api === 'gemini') {
      if (geminiCall?.[2] === 'streamGenerateContent') await geminiStream(res, model, p.reply);
      else sendJson(res, 200, geminiChunk(model, geminiParts(p.reply), true, id('resp_')));
    } else if (api === 'anthropic') {
      if (stream) await anthropicStream(res, model, p.reply);
      else sendJson(res, 200, anthropicJson(model, p.reply));
    } else if (api === 'chat') {
      const includeUsage = Boolean((b.stream_options as Record<string, unknown> | undefined)?.include_usage);
      if (stream) await chatStream(res, model, p.reply, includeUsage);
      else sendJson(res, 200, chatJson(model, p.reply));
    } else {
      if (stream) await responsesStream(res, model, p.reply);
      else {
        const outputs = responsesOutputs(p.reply);
        sendJson(res, 200, {
          ...responseObject(
            id('resp_'),
            model,
            'completed',
            outputs.map((out) => responsesItem(out, responsesIds(out), true)),
            responsesUsage(),
          ),
          output_text: outputs.flatMap((out) => (out.kind === 'message' ? [out.text] : [])).join(''),
        });
      }
    }
  };

  const server = http.createServer({ noDelay: true, keepAliveTimeout: 5_000 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(err), type: 'server_error' } });
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    release(marker) {
      released.add(marker);
      for (const resolve of held.get(marker) ?? []) resolve();
      held.delete(marker);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const resolve of [...held.values()].flatMap((w) => [...w])) resolve();
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
