import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../../helpers/server.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * POST /v1/chat/completions and GET /v1/models over a real socket, on the wire (fetch, curl): the
 * format as OpenAI's API reference has it, `data:` blocks of `chat.completion.chunk`, `data:
 * [DONE]` last, `{error: {message, type, param, code}}`. The official client: openai-client.test.ts.
 */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

type Json = Record<string, any>;
const pngBytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...Buffer.from('fake-image-bytes')]);
const png = `data:image/png;base64,${pngBytes.toString('base64')}`;

const completions = (body: Json, headers: Record<string, string> = {}) => (s as TestServer).api('/v1/chat/completions', { json: body, headers });

/** The SSE body as an OpenAI client reads it: `data:` lines, comments skipped, `[DONE]` kept as a marker. */
async function readStream(res: Response): Promise<Array<Json | '[DONE]'>> {
  const text = await res.text();
  expect(text.endsWith('\n\n')).toBe(true);
  const out: Array<Json | '[DONE]'> = [];
  for (const block of text.split('\n\n').filter((b) => b !== '')) {
    if (block.startsWith(':')) continue;
    expect(block.startsWith('data: ')).toBe(true);
    const data = block.slice(6);
    out.push(data === '[DONE]' ? '[DONE]' : (JSON.parse(data) as Json));
  }
  return out;
}

const contentOf = (events: Array<Json | '[DONE]'>) =>
  events
    .filter((e): e is Json => e !== '[DONE]' && Array.isArray(e.choices))
    .map((e) => e.choices[0]?.delta?.content ?? '')
    .join('');

describe('GET /v1/models and the token', () => {
  it('lists the assistant as the one model; a wrong or missing key gets OpenAI’s 401 error shape', async () => {
    s = await startTestServer();
    const res = await s.api('/v1/models');
    expect(res.status).toBe(200);
    const body = (await res.json()) as Json;
    expect(body).toMatchObject({ object: 'list', data: [{ id: 'tester', object: 'model', owned_by: 'service' }] });
    expect(typeof body.data[0].created).toBe('number');
    expect(await (await s.api('/v1/models/tester')).json()).toMatchObject({ id: 'tester', object: 'model' });
    const unknown = await s.api('/v1/models/gpt-4o');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as Json).error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found', param: 'model' });

    for (const headers of [{ authorization: 'Bearer sk-wrong' }, { authorization: '' }]) {
      const denied = await fetch(`${s.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(denied.status).toBe(401);
      const err = (await denied.json()) as Json;
      expect(Object.keys(err)).toEqual(['error']);
      expect(err.error).toEqual({ message: expect.stringMatching(/bearer token/), type: 'invalid_request_error', param: null, code: 'invalid_api_key' });
    }
    expect(s.standIn.runs()).toHaveLength(0);
  });
});

describe('POST /v1/chat/completions', () => {
  it('answers without streaming; the same `user` continues the conversation and only the last message is sent', async () => {
    s = await startTestServer();
    const first = await completions({ model: 'any-name-at-all', user: 'alice', messages: [{ role: 'user', content: 'hello there' }] });
    expect(first.status).toBe(200);
    expect(first.headers.get('x-session-key')).toBe('alice');
    const a = (await first.json()) as Json;
    expect(a).toMatchObject({
      object: 'chat.completion',
      model: 'any-name-at-all',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'ECHO: hello there\nTURN: 1' } }],
    });
    expect(a.id).toMatch(/^chatcmpl-[0-9a-f]{24}$/);
    const second = await completions({
      model: 'x',
      user: 'alice',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello there' },
        { role: 'assistant', content: 'ECHO: hello there\nTURN: 1' },
        { role: 'user', content: [{ type: 'text', text: 'and again' }] },
      ],
    });
    expect(((await second.json()) as Json).choices[0].message.content).toBe('ECHO: and again\nTURN: 2');
    expect(s.standIn.runs().map((r) => r.prompt)).toEqual(['hello there', 'and again']);
    // The same session /chat uses under that key: the conversation goes on there too.
    expect((await s.store.readHistory('alice')).map((h) => h.text)).toEqual([
      'hello there',
      'ECHO: hello there\nTURN: 1',
      'and again',
      'ECHO: and again\nTURN: 2',
    ]);
    const [record] = await s.assistant.recentActivity(1);
    expect(record).toMatchObject({ source: 'http', sender: 'openai', sessionKey: 'alice', messagePreview: 'and again', status: 'completed' });
  });

  it('streams chat.completion.chunk events ending in data: [DONE]; X-Session-Key wins over `user`', async () => {
    s = await startTestServer();
    const res = await completions(
      { model: 'm', stream: true, user: 'ignored', messages: [{ role: 'user', content: 'PARAGRAPHS stream me' }] },
      { 'x-session-key': 'from-header' },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-session-key')).toBe('from-header');
    const events = await readStream(res);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1) as Json[];
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) expect(c).toMatchObject({ object: 'chat.completion.chunk', model: 'm', id: chunks[0]?.id, created: chunks[0]?.created });
    expect(chunks[0]?.choices[0]).toEqual({ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null });
    expect(chunks.at(-1)?.choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
    const [record] = await s.assistant.recentActivity(1);
    expect(contentOf(events)).toBe((await s.store.readHistory('from-header')).at(-1)?.text);
    expect(record?.sessionKey).toBe('from-header');
  });

  it('without a session: a conversation of its own, the earlier messages given as context, nothing kept after it', async () => {
    s = await startTestServer();
    const res = await completions({
      model: 'm',
      messages: [
        { role: 'system', content: 'You are terse.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'my name is Ada' },
            { type: 'image_url', image_url: { url: png } },
          ],
        },
        { role: 'assistant', content: 'Hello Ada.' },
        { role: 'user', content: 'what is my name?' },
      ],
    });
    const key = res.headers.get('x-session-key') ?? '';
    expect(key).toMatch(/^openai-/);
    expect(((await res.json()) as Json).choices[0].message.content).toMatch(/TURN: 1$/);
    const [run] = s.standIn.runs();
    expect(run?.prompt).toContain('[system] You are terse.');
    expect(run?.prompt).toContain('[user] my name is Ada\n(an image)');
    expect(run?.prompt).toContain('[assistant] Hello Ada.');
    expect(String(run?.prompt).endsWith("Reply to the user's last message:\n\nwhat is my name?")).toBe(true);
    // Only the last message's images reach the engine.
    expect(run?.images).toEqual([]);
    await until(
      async () => (await s?.store.getSession(key)) === undefined && (await s?.store.readHistory(key))?.length === 0,
      HANG_MS,
      'the one-off session to go',
    );
    const again = await completions({ model: 'm', messages: [{ role: 'user', content: 'fresh' }] });
    expect(again.headers.get('x-session-key')).not.toBe(key);
    expect(((await again.json()) as Json).choices[0].message.content).toBe('ECHO: fresh\nTURN: 1');
  });

  it('hands a data-URL image of the last message to the engine as images are handed today; refuses remote URLs', async () => {
    s = await startTestServer();
    const res = await completions({
      model: 'm',
      user: 'pics',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this' },
            { type: 'image_url', image_url: { url: png, detail: 'low' } },
          ],
        },
      ],
    });
    expect(res.status).toBe(200);
    const [run] = s.standIn.runs();
    expect(run?.images).toEqual([expect.objectContaining({ exists: true, bytes: pngBytes.length })]);
    const remote = await completions({
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://127.0.0.1:9/cat.png' } }] }],
    });
    expect(remote.status).toBe(400);
    expect(((await remote.json()) as Json).error).toMatchObject({
      type: 'invalid_request_error',
      param: 'messages[0].content[0].image_url',
      message: expect.stringContaining('data URL'),
    });
    expect(s.standIn.runs()).toHaveLength(1);
  });

  it('answers bad requests with OpenAI’s error shape and the field as `param`', async () => {
    s = await startTestServer();
    const cases: Array<[Json, string | null, RegExp]> = [
      [{ messages: [{ role: 'user', content: 'hi' }] }, 'model', /model/],
      [{ model: 'm', messages: [] }, 'messages', /messages/],
      [{ model: 'm', messages: [{ role: 'wizard', content: 'hi' }] }, 'messages[0].role', /role/],
      [
        {
          model: 'm',
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'yo' },
          ],
        },
        'messages',
        /last message must be the user's/,
      ],
      [{ model: 'm', n: 2, messages: [{ role: 'user', content: 'hi' }] }, 'n', /one choice/],
      [{ model: 'm', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }, 'messages[0].content[0].type', /input_audio/],
    ];
    for (const [body, param, message] of cases) {
      const res = await completions(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const err = ((await res.json()) as Json).error;
      expect(err, JSON.stringify(body)).toMatchObject({ type: 'invalid_request_error', param, code: null });
      expect(err.message).toMatch(message);
    }
    // Sampling settings a client sends are taken and ignored.
    const ok = await completions({
      model: 'm',
      temperature: 0.2,
      max_tokens: 50,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'ok' }],
    });
    expect(ok.status).toBe(200);
    const missing = await s.api('/v1/embeddings', { json: { input: 'x' } });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as Json).error).toMatchObject({ type: 'invalid_request_error', code: 'not_found' });
  });

  it('a failed turn is a 502 that the SDKs do not retry; in a stream, an error object then [DONE]', async () => {
    s = await startTestServer();
    const res = await completions({ model: 'm', user: 'f', messages: [{ role: 'user', content: 'FAIL:the model is down' }] });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(((await res.json()) as Json).error).toMatchObject({
      type: 'server_error',
      code: 'engine_failed',
      message: expect.stringContaining('the model is down'),
    });
    const streamed = await readStream(await completions({ model: 'm', stream: true, user: 'f', messages: [{ role: 'user', content: 'FAIL:still down' }] }));
    expect(streamed.at(-1)).toBe('[DONE]');
    expect((streamed.at(-2) as Json).error).toMatchObject({ type: 'server_error', code: 'engine_failed', message: expect.stringContaining('still down') });
  });

  it('queue limits as on /chat (429, retried by the SDKs); POST /abort stops the turn (503 aborted)', async () => {
    s = await startTestServer({ yaml: 'maxQueuePerSession: 0\n' });
    const hanging = completions({ model: 'm', user: 'busy', messages: [{ role: 'user', content: 'HANG' }] });
    await until(() => s?.standIn.runs().length === 1, HANG_MS, 'the first turn to start');
    const refused = await completions({ model: 'm', user: 'busy', messages: [{ role: 'user', content: 'me too' }] });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-should-retry')).toBe('true');
    expect(((await refused.json()) as Json).error).toMatchObject({
      code: 'rate_limit_exceeded',
      message: expect.stringContaining('Too many pending requests'),
    });
    expect(await (await s.api('/abort', { json: { sessionKey: 'busy' } })).json()).toEqual({ ok: true, aborted: true });
    const stopped = await hanging;
    expect(stopped.status).toBe(503);
    expect(((await stopped.json()) as Json).error).toMatchObject({ code: 'aborted', message: 'Aborted' });
  });

  it('a message starting with / is a slash command, answered as the reply', async () => {
    s = await startTestServer();
    const res = await completions({ model: 'm', user: 'cmd', messages: [{ role: 'user', content: '/status' }] });
    const content = ((await res.json()) as Json).choices[0].message.content as string;
    expect(content).toContain('tester');
    expect(s.standIn.runs()).toHaveLength(0);
    const streamed = await readStream(await completions({ model: 'm', stream: true, user: 'cmd', messages: [{ role: 'user', content: '/help' }] }));
    expect(contentOf(streamed)).toContain('/status');
    expect(streamed.at(-1)).toBe('[DONE]');
  });

  it('works from curl', async () => {
    s = await startTestServer();
    const body = JSON.stringify({ model: 'tester', stream: true, messages: [{ role: 'user', content: 'from curl' }] });
    const out = await new Promise<string>((resolve, reject) => {
      const curl = spawn('curl', [
        '-sS',
        '-N',
        `${s?.url}/v1/chat/completions`,
        '-H',
        `Authorization: Bearer ${TEST_TOKEN}`,
        '-H',
        'Content-Type: application/json',
        '-d',
        body,
      ]);
      let text = '';
      curl.stdout.on('data', (d: Buffer) => (text += d.toString()));
      curl.on('error', reject);
      curl.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`curl exited ${code}`))));
    });
    expect(out).toContain('"object":"chat.completion.chunk"');
    expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
    const chunks = out
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map((b) => JSON.parse(b.slice(6)) as Json);
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('ECHO: from curl\nTURN: 1');
  });
});
