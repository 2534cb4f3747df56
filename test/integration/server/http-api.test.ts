import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createRecordingHub, parseSseStrict, startTestServer, TEST_TOKEN, type TestServer } from '../../helpers/server.js';
import { HANG_MS, until } from '../../helpers/wait.js';

let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const chatEvents = async (res: Response) => parseSseStrict(await res.text()) as Array<Record<string, unknown>>;

describe('HTTP API routes (real sockets)', () => {
  it('GET /health needs no token: status ok, ISO timestamp, name', async () => {
    s = await startTestServer();
    const res = await fetch(`${s.url}/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'ok', name: 'tester', engine: 'engine_b', version: '0.0.0-test' });
    expect(new Date(String(body.timestamp)).toISOString()).toBe(body.timestamp);
  });

  it('GET / serves the dashboard without a token and without any secret', async () => {
    s = await startTestServer({ yaml: 'oauthToken: sk-oauth-very-secret\n' });
    const res = await fetch(`${s.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const html = await res.text();
    expect(html).toContain('<script src="/dashboard/dashboard.js"');
    expect(html).not.toContain('sk-oauth-very-secret');
    expect(html).not.toContain(TEST_TOKEN);
    expect((await fetch(`${s.url}/dashboard/dashboard.js`)).status).toBe(200);
    expect((await fetch(`${s.url}/dashboard/..%2F..%2Fpackage.json`)).status).toBe(404);
  });

  it('POST /chat streams text, done then completion', async () => {
    s = await startTestServer();
    const res = await s.api('/chat', { json: { message: 'hello', sessionKey: 'k1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = await chatEvents(res);
    expect(events.slice(-2).map((e) => e.type)).toEqual(['done', 'completion']);
    expect(events.filter((e) => e.type === 'completion')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ status: 'completed', finalText: 'ECHO: hello\nTURN: 1', sessionId: expect.any(String) });
    expect(
      events
        .filter((e) => e.type === 'text')
        .map((e) => e.content)
        .join(''),
    ).toBe('ECHO: hello\nTURN: 1');
  });

  it('POST /chat with images only sends "(image)"; a slash command answers JSON', async () => {
    s = await startTestServer();
    const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
    const events = await chatEvents(await s.api('/chat', { json: { images: [{ data: png }] } }));
    expect(events.at(-1)).toMatchObject({ status: 'completed', finalText: expect.stringMatching(/^ECHO: \(image\)/) });
    const cmd = await s.api('/chat', { json: { message: '/model list' } });
    expect(cmd.headers.get('content-type')).toContain('application/json');
    expect(await cmd.json()).toEqual({ type: 'command', engine: 'engine_b', models: expect.any(Array), text: expect.any(String) });
  });

  it('busy and queue-full are in-stream errors with HTTP 200', async () => {
    const t = await startTestServer({ yaml: 'maxQueuePerSession: 0\n' });
    s = t;
    const running = t.api('/chat', { json: { message: 'HANG', sessionKey: 'q' } });
    await until(() => t.standIn.runs().length === 1, HANG_MS, 'the first turn to run');
    const res = await t.api('/chat', { json: { message: 'second', sessionKey: 'q' } });
    expect(res.status).toBe(200);
    expect(await chatEvents(res)).toEqual([
      { type: 'error', message: 'Too many pending requests for this session (limit: 0). Try again later.' },
      { type: 'done', durationMs: 0 },
      { type: 'completion', status: 'failed', message: 'Too many pending requests for this session (limit: 0). Try again later.' },
    ]);
    expect(t.assistant.abort('q')).toBe(true);
    await (await running).text();
  });

  it('POST /command on engine_b: error saying native commands are unsupported, done, completion failed; never a prompt', async () => {
    s = await startTestServer();
    const events = await chatEvents(await s.api('/command', { json: { command: 'review', arguments: 'src' } }));
    expect(events).toEqual([
      { type: 'error', message: expect.stringContaining('does not support native commands') },
      { type: 'done', durationMs: 0 },
      { type: 'completion', status: 'failed', message: expect.stringContaining('does not support native commands') },
    ]);
    expect(s.standIn.runs()).toEqual([]);
  });

  it('POST /command on engine_c runs the native command', async () => {
    s = await startTestServer({ engine: 'engine_c' });
    const events = await chatEvents(await s.api('/command', { json: { command: 'review', arguments: 'src/app.ts' } }));
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    expect(s.standIn.runs()[0]?.argv).toEqual(expect.arrayContaining(['--command', 'review', 'src/app.ts']));
  });

  it('POST /command with a slash command of ours (any engine) answers 400 naming POST /chat; no turn, no activity, nothing reaches the engine', async () => {
    for (const engine of ['engine_b', 'engine_c']) {
      s = await startTestServer({ engine });
      for (const [body, line] of [
        [{ command: 'status' }, '/status'],
        [{ command: '/reset' }, '/reset'],
        [{ command: 'cron', arguments: 'list' }, '/cron list'],
        [{ command: 'Help' }, '/Help'],
      ] as const) {
        const res = await s.api('/command', { json: body });
        expect(res.status, `${engine} ${line}`).toBe(400);
        const answer = (await res.json()) as { error: string; chat: unknown };
        expect(answer.error).toMatch(/is a slash command of this service, not a native engine command: send it as a message to POST \/chat/);
        expect(answer.chat).toEqual({ message: line });
      }
      expect(s.standIn.runs()).toEqual([]);
      expect((await s.assistant.metrics()).totalMessages).toBe(0);
      expect(await (await s.api('/api/escalations')).json()).toEqual({ escalations: [] });
      await s.stop();
      s = undefined;
    }
  });

  it('POST /abort reports whether a turn was running; POST /reset clears the session', async () => {
    s = await startTestServer();
    expect(await (await s.api('/abort', { method: 'POST' })).json()).toEqual({ ok: true, aborted: false });
    const turn = s.api('/chat', { json: { message: 'HANG', sessionKey: 'x' } });
    const server = s;
    await until(() => server.standIn.runs().length > 0, HANG_MS, 'the turn to start');
    expect(await (await s.api('/abort', { json: { sessionKey: 'x' } })).json()).toEqual({ ok: true, aborted: true });
    expect((await chatEvents(await turn)).at(-1)).toMatchObject({ status: 'aborted' });
    expect(await (await s.api('/reset', { json: { sessionKey: 'x' } })).json()).toEqual({ ok: true });
    expect(await s.store.getSession('x')).toBeUndefined();
  });

  it('GET /api/status is the spec record; GET /api/channels lists adapters', async () => {
    s = await startTestServer({
      files: { 'skills/notes/SKILL.md': '---\nname: notes\ndescription: Notes.\n---\n' },
      hub: createRecordingHub({ channel_e: { canSend: true }, mine: { canSend: false } }),
    });
    await (await s.api('/chat', { json: { message: 'hi' } })).text();
    const status = (await (await s.api('/api/status')).json()) as Record<string, unknown>;
    expect(status).toMatchObject({
      name: 'tester',
      engine: 'engine_b',
      model: '',
      version: '0.0.0-test',
      uptime: expect.any(Number),
      channels: [
        { type: 'channel_e', status: 'connected' },
        { type: 'mine', status: 'connected' },
      ],
      skills: [{ name: 'notes', description: 'Notes.' }],
      metrics: { totalMessages: 1, totalCostUsd: 0.0123, avgDurationMs: expect.any(Number), messagesBySource: { http: 1 } },
    });
    expect((status.recentMessages as unknown[])[0]).toMatchObject({
      source: 'http',
      messagePreview: 'hi',
      responsePreview: expect.stringContaining('ECHO: hi'),
    });
    expect(await (await s.api('/api/channels')).json()).toEqual({
      channels: [
        { name: 'channel_e', canSend: true },
        { name: 'mine', canSend: false },
      ],
    });
  });

  it('POST /api/send: ok, 400, 404 with available channels, 501, 503', async () => {
    const hub = createRecordingHub({ channel_e: { canSend: true }, channel_b: { canSend: false } });
    s = await startTestServer({ hub });
    expect(await (await s.api('/api/send', { json: { channel: 'channel_e', chatId: '42', text: 'hi *there*' } })).json()).toEqual({ ok: true });
    expect(hub.sent).toEqual([{ channel: 'channel_e', chatId: '42', text: 'hi *there*' }]);
    const missing = await s.api('/api/send', { json: { channel: 'channel_e' } });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: expect.stringContaining('chatId'), issues: expect.any(Array) });
    const unknown = await s.api('/api/send', { json: { channel: 'channel_a', chatId: '1', text: 'x' } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: expect.any(String), reason: 'not_found', availableChannels: ['channel_e', 'channel_b'] });
    const cannot = await s.api('/api/send', { json: { channel: 'channel_b', chatId: '1', text: 'x' } });
    expect(cannot.status).toBe(501);
    expect(await cannot.json()).toEqual({ error: expect.stringContaining('cannot send'), reason: 'unsupported' });
    await s.stop();
    s = await startTestServer({ hub: createRecordingHub({}) });
    const none = await s.api('/api/send', { json: { channel: 'channel_e', chatId: '1', text: 'x' } });
    expect(none.status).toBe(503);
    expect(await none.json()).toEqual({ error: expect.stringContaining('no channel adapters'), reason: 'no_channels' });
  });
});

describe('authentication and cross-origin policy', () => {
  it('every route but /health and / needs the bearer token: 401 JSON with WWW-Authenticate', async () => {
    s = await startTestServer();
    const routes: Array<[string, string]> = [
      ['POST', '/chat'],
      ['POST', '/command'],
      ['POST', '/reset'],
      ['POST', '/abort'],
      ['GET', '/api/status'],
      ['POST', '/api/send'],
      ['PATCH', '/api/config'],
      ['GET', '/api/channels'],
      ['GET', '/api/events'],
      ['GET', '/nope'],
    ];
    for (const [method, path] of routes) {
      for (const auth of [undefined, 'Bearer wrong-token', `Basic ${TEST_TOKEN}`, `Bearer ${TEST_TOKEN}x`]) {
        const res = await fetch(`${s.url}${path}`, { method, headers: auth ? { authorization: auth } : {} });
        expect(res.status, `${method} ${path} ${auth}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
        expect(res.headers.get('access-control-allow-origin')).toBe('*');
        expect(await res.json()).toEqual({ error: expect.stringMatching(/bearer token/) });
      }
    }
  });

  it('?token= is accepted on GET /api/events only', async () => {
    s = await startTestServer();
    expect((await fetch(`${s.url}/api/status?token=${TEST_TOKEN}`)).status).toBe(401);
    const ctl = new AbortController();
    const events = await fetch(`${s.url}/api/events?token=${TEST_TOKEN}`, { signal: ctl.signal });
    expect(events.status).toBe(200);
    ctl.abort();
  });

  it('answers preflight without a token with the spec methods and headers', async () => {
    s = await startTestServer();
    const res = await fetch(`${s.url}/chat`, {
      method: 'OPTIONS',
      headers: { origin: 'https://other.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET,POST,PATCH,DELETE,OPTIONS');
    expect(res.headers.get('access-control-allow-headers')).toBe('Content-Type,Authorization,X-Session-Key');
    expect(res.headers.get('access-control-max-age')).toBe('600');
    const normal = await s.api('/api/channels', { headers: { origin: 'https://other.example' } });
    expect(normal.headers.get('access-control-allow-origin')).toBe('*');
    // A page on another origin may read why it was refused (the Bearer challenge).
    expect(normal.headers.get('access-control-expose-headers')).toBe('WWW-Authenticate,X-Session-Key');
  });

  it('a request target that is not a path (`*`, an absolute URL) is a 400 with the JSON error body, and the server goes on', async () => {
    s = await startTestServer();
    const { port } = new URL(s.url);
    for (const target of ['*', `http://127.0.0.1:${port}/api/status`]) {
      const raw = await new Promise<string>((resolve, reject) => {
        const sock = net.connect(Number(port), '127.0.0.1', () =>
          sock.end(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nConnection: close\r\n\r\n`),
        );
        let text = '';
        sock.setEncoding('utf8');
        sock.on('data', (d) => (text += d));
        sock.on('end', () => resolve(text));
        sock.on('error', reject);
      });
      expect(raw.split('\r\n')[0], target).toBe('HTTP/1.1 400 Bad Request');
      // A JSON answer says its length (not chunked): the body below is read as it is.
      expect(raw.toLowerCase(), target).toMatch(/\r\ncontent-length: \d+\r\n/);
      expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)), target).toEqual({ error: 'malformed request URL' });
    }
    expect((await s.api('/api/status')).status).toBe(200);
  });
});

describe('bad input', () => {
  it('400 for invalid JSON, wrong types, missing fields, empty chats; all JSON', async () => {
    s = await startTestServer();
    const cases: Array<[string, RequestInit, RegExp]> = [
      ['/chat', { method: 'POST', body: '{not json' }, /not valid JSON/],
      ['/chat', { method: 'POST', body: '' }, /body is required/],
      ['/chat', { method: 'POST', body: JSON.stringify({ message: 42 }) }, /message/],
      ['/chat', { method: 'POST', body: JSON.stringify({ sesionKey: 'typo', message: 'x' }) }, /sesionKey/],
      ['/chat', { method: 'POST', body: JSON.stringify({ message: '   ' }) }, /message, images or files is required/],
      ['/chat', { method: 'POST', body: JSON.stringify({ images: [{ mimeType: 'image/png' }] }) }, /images\[0\]\.data/],
      ['/command', { method: 'POST', body: JSON.stringify({ arguments: 'x' }) }, /command/],
      ['/reset', { method: 'POST', body: JSON.stringify({}) }, /sessionKey/],
      ['/api/send', { method: 'POST', body: JSON.stringify({ channel: 'x', chatId: 5, text: 'y' }) }, /chatId/],
      ['/api/send', { method: 'POST', body: '[]' }, /invalid request body/],
    ];
    for (const [path, init, message] of cases) {
      const res = await s.api(path, init);
      expect(res.status, `${path} ${String(init.body)}`).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect((await res.json()) as { error: string }).toMatchObject({ error: expect.stringMatching(message) });
    }
    expect(s.standIn.runs()).toEqual([]);
  });

  it('413 past the body limit, 404 unknown route, 405 wrong method, all JSON; the server keeps serving', async () => {
    s = await startTestServer({ maxBodyBytes: 1024 });
    const big = await s.api('/chat', { method: 'POST', body: JSON.stringify({ message: 'x'.repeat(5000) }) });
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ error: expect.stringContaining('larger than 1024 bytes'), limit: 1024 });
    const chunked = await s.api('/chat', { method: 'POST', body: new Blob(['{"message":"', 'y'.repeat(4000), '"}']).stream(), duplex: 'half' } as RequestInit);
    expect(chunked.status).toBe(413);
    const notFound = await s.api('/api/nothing');
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toEqual({ error: 'no route GET /api/nothing' });
    const wrong = await s.api('/chat', { method: 'GET' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(await wrong.json()).toMatchObject({ error: expect.stringContaining('not allowed') });
    // A route with a parameter too: the path exists, the method does not.
    const wrongParam = await s.api('/api/tasks/daily/run', { method: 'GET' });
    expect(wrongParam.status).toBe(405);
    expect(wrongParam.headers.get('allow')).toBe('POST');
    expect((await s.api('/api/tasks/daily/run/more', { method: 'GET' })).status).toBe(404);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });
});
