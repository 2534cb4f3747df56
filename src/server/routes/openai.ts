import { randomUUID } from 'node:crypto';
import type { H3Event } from 'h3';
import { isSlashCommand } from '../../core/commands/command-table.js';
import type { Completion, StreamEvent } from '../../core/events.js';
import { createAsyncQueue } from '../../core/util/async-queue.js';
import { readValidated } from '../body.js';
import { httpError, jsonReply, routeParam } from '../http.js';
import {
  type ChatCompletionRequest,
  chatCompletionBody,
  chunkObject,
  type CompletionMeta,
  completionId,
  completionObject,
  failedTurnError,
  modelObject,
  readConversation,
} from '../openai-wire.js';
import { streamJson } from '../sse.js';
import type { RouteTable, ServerDeps } from '../types.js';
import { withFileUrls } from './files.js';

/**
 * The assistant as an OpenAI-compatible model: POST /v1/chat/completions (streamed as
 * `chat.completion.chunk` events ending in `data: [DONE]`, or one `chat.completion`) and GET
 * /v1/models (the assistant, named after itself). The token check, the turn queue, sessions,
 * `/abort`, the activity feed and costs are those of POST /chat; errors anywhere under /v1/ are
 * OpenAI's shape (app.ts). What is taken from a request and what is ignored: docs/api.md.
 */
export function registerOpenAiRoutes(table: RouteTable, deps: ServerDeps): void {
  const log = deps.log.child('http');
  const created = () => Math.floor((Date.now() - deps.assistant.status().uptime) / 1000);
  const modelId = () => deps.config.current().config.name;

  table.add('GET', '/v1/models', () => ({ object: 'list', data: [modelObject(modelId(), created())] }));
  table.add('GET', '/v1/models/:model', (event) => {
    const id = routeParam(event, 'model');
    if (id !== modelId())
      throw httpError(404, `The model "${id ?? ''}" does not exist; this gateway serves "${modelId()}"`, {
        openai: { code: 'model_not_found', param: 'model' },
      });
    return modelObject(modelId(), created());
  });

  table.add('POST', '/v1/chat/completions', async (event) => {
    const body = await readValidated(event, chatCompletionBody, { limit: deps.maxBodyBytes });
    const given = sessionKeyOf(event, body);
    const key = given ?? `openai-${randomUUID()}`;
    const conversation = readConversation(body.messages, given !== undefined);
    const meta: CompletionMeta = { id: completionId(randomUUID()), created: Math.floor(Date.now() / 1000), model: body.model };
    const headers = { 'x-session-key': key };
    const opts = { sessionKey: key, source: 'http', sender: 'openai' };

    if (isSlashCommand(conversation.text)) {
      const result = await deps.assistant.runCommand(conversation.text, { ...opts, allowConfigChanges: true });
      if (given === undefined) await deps.assistant.reset(key);
      if (!body.stream) return jsonReply(200, completionObject(meta, result.text), headers);
      return stream(event, meta, headers, oneReply(result.text));
    }
    const turn = drained(
      withFileUrls(deps.assistant.chat(conversation.prompt, { ...opts, images: conversation.images, messageText: conversation.text }), deps.token),
      // A request without a session is a conversation of its own: nothing of it is kept once its turn ended.
      given === undefined ? () => deps.assistant.reset(key) : undefined,
      (err) => log.error(`after the OpenAI turn on "${key}": ${String(err)}`),
    );
    if (body.stream) return stream(event, meta, headers, turn);
    return answerWhole(meta, headers, turn, baseUrl(event));
  });

  function stream(event: H3Event, meta: CompletionMeta, headers: Record<string, string>, events: AsyncIterable<StreamEvent>) {
    const out = streamJson(event, toChunks(meta, events, baseUrl(event)), {
      heartbeatMs: deps.heartbeatMs ?? 15_000,
      redact: table.redact,
      track: table.trackStream,
      closing: '[DONE]',
      onClientGone: () => log.debug(`client left /v1/chat/completions on "${headers['x-session-key']}"; the turn goes on`),
    });
    for (const [k, v] of Object.entries(headers)) out.headers.set(k, v);
    return out;
  }
}

// --- internal ---

/** `X-Session-Key` first (our own header), else the request's `user`; neither: a conversation of its own. */
function sessionKeyOf(event: H3Event, body: ChatCompletionRequest): string | undefined {
  const header = event.req.headers.get('x-session-key');
  if (header === null) return body.user;
  if (header.length < 1 || header.length > 256)
    throw httpError(400, 'X-Session-Key: expected a session key of 1 to 256 characters', { openai: { param: 'X-Session-Key' } });
  return header;
}

/**
 * The turn's events read to the end whatever the client does (one that leaves does not stop the
 * turn, as on /chat), then `after` (a one-off conversation is forgotten); the client reads a copy.
 */
function drained(events: AsyncIterable<StreamEvent>, after: (() => Promise<void>) | undefined, onError: (err: unknown) => void): AsyncIterable<StreamEvent> {
  const copy = createAsyncQueue<StreamEvent>();
  void (async () => {
    try {
      for await (const e of events) copy.push(e);
      await after?.();
    } catch (err) {
      onError(err);
    } finally {
      copy.end();
    }
  })();
  return copy;
}

async function* oneReply(text: string): AsyncIterable<StreamEvent> {
  yield { type: 'text', content: text };
  yield { type: 'completion', status: 'completed', finalText: text };
}

/** The origin the client reached us at, for absolute links to files the agent sent. */
function baseUrl(event: H3Event): string {
  return event.url.origin;
}

/** A file the agent sent, as a Markdown line: a link while it can be downloaded, else why not. */
function fileLine(e: Extract<StreamEvent, { type: 'file' }>, base: string): string {
  return e.url ? `[${e.name.replace(/[[\]]/g, '\\$&')}](${base}${e.url})` : `${e.name}: ${e.error ?? 'not sent'}`;
}

/**
 * The turn as `chat.completion.chunk`s: the role first (the head goes out at once, as on /chat),
 * the text as it comes, files the agent sent as links, then `finish_reason: "stop"`; a turn that
 * failed or was aborted ends with OpenAI's in-stream error object instead. Tool calls stay the
 * agent's own (they are not the client's to run); an approval request is told in the text.
 */
async function* toChunks(meta: CompletionMeta, events: AsyncIterable<StreamEvent>, base: string): AsyncIterable<unknown> {
  yield chunkObject(meta, { role: 'assistant', content: '' });
  let completion: Completion | undefined;
  for await (const e of events) {
    if (e.type === 'text') yield chunkObject(meta, { content: e.content });
    else if (e.type === 'file') yield chunkObject(meta, { content: `\n\n${fileLine(e, base)}` });
    else if (e.type === 'approval_request') yield chunkObject(meta, { content: approvalNotice(e) });
    else if (e.type === 'completion') completion = e;
  }
  if (completion?.status === 'completed' || completion?.status === 'silent') {
    yield chunkObject(meta, {}, 'stop');
    return;
  }
  const failure = failedTurnError(completion?.status === 'aborted' ? 'aborted' : 'failed', completion?.message ?? 'the turn ended without an answer');
  yield { error: failure.error };
}

function approvalNotice(e: Extract<StreamEvent, { type: 'approval_request' }>): string {
  return `\n\n> The assistant asks to use ${e.tool}: \`${e.summary.replace(/`/g, "'")}\`. Answer with \`/allow ${e.id}\` or \`/deny ${e.id}\` on this session (or POST /approve).\n\n`;
}

/** Non-streaming: the whole reply once the turn ended; a turn that did not complete is an OpenAI error with its status. */
async function answerWhole(meta: CompletionMeta, headers: Record<string, string>, events: AsyncIterable<StreamEvent>, base: string) {
  let completion: Completion | undefined;
  const files: string[] = [];
  for await (const e of events) {
    if (e.type === 'file') files.push(fileLine(e, base));
    else if (e.type === 'completion') completion = e;
  }
  if (completion?.status === 'completed' || completion?.status === 'silent') {
    const content = [completion.finalText ?? '', ...files].filter(Boolean).join('\n\n');
    return jsonReply(200, completionObject(meta, content), headers);
  }
  const failure = failedTurnError(completion?.status === 'aborted' ? 'aborted' : 'failed', completion?.message ?? 'the turn ended without an answer');
  // The official SDKs retry 429 and 5xx by themselves: a turn that failed is not run again unasked.
  return jsonReply(
    failure.status,
    { error: failure.error },
    { ...headers, 'x-should-retry': String(failure.retry), ...(failure.retry ? { 'retry-after': '1' } : {}) },
  );
}
