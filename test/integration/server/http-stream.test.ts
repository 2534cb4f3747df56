import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseSseStrict, startTestServer, TEST_TOKEN, type TestServer } from '../../helpers/server.js';
import { HANG_MS, until } from '../../helpers/wait.js';

let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

/** What a hand-written client does: blocks between blank lines, each `data: <json>`. Throws on anything else. */
function parseNaively(body: string): Array<Record<string, unknown>> {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => JSON.parse(block.replace(/^data: /, '')) as Record<string, unknown>);
}

/** The promise's value, or a failure naming what never came (a hang, not a slow machine: the deadline is generous). */
async function withDeadline<T>(p: Promise<T>, what: string, ms = HANG_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Read an SSE response until `until` matches the text so far (or the stream ends). */
async function readUntil(res: Response, until: (text: string) => boolean, ms = HANG_MS): Promise<string> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + ms;
  while (!until(text)) {
    if (Date.now() > deadline) throw new Error(`timed out; got: ${text}`);
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel().catch(() => undefined);
  return text;
}

describe('streams', () => {
  it('a queued /chat turn gets its response headers while the turn ahead of it still runs, and no body line before its first event', async () => {
    s = await startTestServer();
    const ahead = s.api('/chat', { json: { message: 'HANG', sessionKey: 'q' } });
    await until(() => s?.standIn.runs().length === 1, HANG_MS, 'the first turn to start');
    // Node sends headers only with the first body bytes; without flushing them this waits for the turn ahead (forever: it hangs).
    const queued = await withDeadline(s.api('/chat', { json: { message: 'second', sessionKey: 'q' } }), "the queued turn's response headers");
    expect(queued.status).toBe(200);
    expect(queued.headers.get('content-type')).toBe('text/event-stream');
    expect(s.assistant.status()).toMatchObject({ running: 1, waiting: 1 });
    expect(await (await s.api('/abort', { json: { sessionKey: 'q' } })).json()).toEqual({ ok: true, aborted: true });
    const body = await queued.text();
    expect(body.startsWith('data: {')).toBe(true);
    expect(body).not.toMatch(/^:/m);
    expect((parseSseStrict(body) as Array<Record<string, unknown>>).at(-1)).toMatchObject({
      type: 'completion',
      status: 'completed',
      finalText: expect.stringMatching(/^ECHO: second\n/),
    });
    expect((parseSseStrict(await (await ahead).text()) as Array<Record<string, unknown>>).at(-1)).toMatchObject({ status: 'aborted', message: 'Aborted' });
  });

  it("a queued turn's response head leaves while its request is handled, before the gateway goes on to anything else (the next request of a burst)", async () => {
    // The gateway reads a burst of requests in one turn of its event loop; what a request's own
    // callbacks do not send waits for all the others. Probe: a callback queued for the next turn
    // of the loop the moment the request's body has arrived sees the head already on the socket.
    let probe: Promise<{ atBodyEnd: number; atNextTurn: number }> | undefined;
    s = await startTestServer({
      answerFirst: (req) => {
        if (req.headers['x-probe'] === 'queued') {
          const socket = req.socket;
          probe = new Promise((resolve) => {
            req.once('end', () => {
              const atBodyEnd = socket.bytesWritten;
              setImmediate(() => resolve({ atBodyEnd, atNextTurn: socket.bytesWritten }));
            });
          });
        }
        return false;
      },
    });
    const ahead = s.api('/chat', { json: { message: 'HANG', sessionKey: 'p' } });
    await until(() => s?.standIn.runs().length === 1, HANG_MS, 'the first turn to start');
    const queued = withDeadline(
      s.api('/chat', { json: { message: 'second', sessionKey: 'p' }, headers: { 'x-probe': 'queued' } }),
      "the queued turn's response headers",
    );
    await until(() => probe !== undefined, HANG_MS, 'the queued request to arrive');
    const seen = await withDeadline(probe as NonNullable<typeof probe>, 'the end of the queued request');
    expect(seen.atNextTurn).toBeGreaterThan(seen.atBodyEnd);
    const res = await queued;
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(s.assistant.status()).toMatchObject({ running: 1, waiting: 1 });
    expect(await (await s.api('/abort', { json: { sessionKey: 'p' } })).json()).toEqual({ ok: true, aborted: true });
    expect((parseSseStrict(await res.text()) as Array<Record<string, unknown>>).at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    expect((parseSseStrict(await (await ahead).text()) as Array<Record<string, unknown>>).at(-1)).toMatchObject({ status: 'aborted' });
  });

  it('a naive client (split the body on blank lines, JSON-parse each block after "data: ") reads only events: /chat, a queued /chat, /command, /api/events', async () => {
    s = await startTestServer();
    const feed = await s.api('/api/events');
    expect(feed.headers.get('content-type')).toBe('text/event-stream');
    const first = s.api('/chat', { json: { message: 'SLEEP:300 one', sessionKey: 'n' } });
    await until(() => s?.standIn.runs().length === 1, HANG_MS, 'the first turn to start');
    const queued = s.api('/chat', { json: { message: 'TOOL:Read two', sessionKey: 'n' } });
    const bodies = [await (await first).text(), await (await queued).text(), await (await s.api('/command', { json: { command: 'review' } })).text()];
    for (const body of bodies) {
      const events = parseNaively(body);
      expect(events.at(-1)).toMatchObject({ type: 'completion' });
      expect(events.map((e) => e.type).filter((t) => t === 'completion')).toHaveLength(1);
    }
    expect(new Set(parseNaively(bodies[1] ?? '').map((e) => e.type))).toEqual(new Set(['tool_call', 'tool_result', 'text', 'done', 'completion']));
    const records = parseNaively(await readUntil(feed, (t) => t.split('\n\n').length > 3));
    expect(records.map((r) => r.messagePreview)).toEqual(['SLEEP:300 one', 'TOOL:Read two', '/review']);
  });

  it('idle streams get heartbeat comments', async () => {
    const t = await startTestServer({ heartbeatMs: 150 });
    s = t;
    const first = t.api('/chat', { json: { message: 'HANG first', sessionKey: 'q' } });
    await until(() => t.standIn.runs().length === 1, HANG_MS, 'the first turn to run');
    const queued = await t.api('/chat', { json: { message: 'second', sessionKey: 'q' } });
    expect(queued.headers.get('content-type')).toBe('text/event-stream');
    const reader = (queued.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readMore = async () => {
      const { done, value } = await reader.read();
      if (!done) text += decoder.decode(value, { stream: true });
      return done;
    };
    // Heartbeats while the turn waits behind the first one (which only the abort below ends).
    while (!text.includes(': heartbeat\n\n')) expect(await readMore(), 'stream ended before a heartbeat').toBe(false);
    expect(t.assistant.abort('q')).toBe(true);
    while (!(await readMore()));
    const events = parseSseStrict(text) as Array<Record<string, unknown>>;
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: expect.stringMatching(/^ECHO: second\nTURN: \d+$/) });
    await (await first).text();
  });

  it('a client that disconnects does not kill its turn: the reply lands in history and the activity feed', async () => {
    s = await startTestServer();
    const feed = await fetch(`${s.url}/api/events?token=${TEST_TOKEN}`);
    const ctl = new AbortController();
    const res = await s.api('/chat', { json: { message: 'SLEEP:600 leaving early', sessionKey: 'gone' }, signal: ctl.signal });
    expect(res.status).toBe(200);
    ctl.abort();
    const record = await readUntil(feed, (t) => t.includes('leaving early'));
    const [activity] = parseSseStrict(record.slice(0, record.lastIndexOf('\n\n') + 2)) as Array<Record<string, unknown>>;
    expect(activity).toMatchObject({
      source: 'http',
      messagePreview: 'SLEEP:600 leaving early',
      responsePreview: expect.stringContaining('ECHO: SLEEP:600'),
      status: 'completed',
    });
    expect(Object.keys(activity ?? {})).toEqual(
      expect.arrayContaining(['ts', 'source', 'sender', 'messagePreview', 'responsePreview', 'durationMs', 'costUsd']),
    );
    expect((await s.store.readHistory('gone')).map((h) => h.role)).toEqual(['user', 'assistant']);
  });

  it('GET /api/events bounds subscribers and frees a slot when a client leaves', async () => {
    s = await startTestServer({ maxEventSubscribers: 2 });
    const a = new AbortController();
    await s.api('/api/events', { signal: a.signal });
    await s.api('/api/events');
    const third = await s.api('/api/events');
    expect(third.status).toBe(503);
    expect(await third.json()).toEqual({ error: 'too many event subscribers (limit: 2)' });
    a.abort();
    const t = s;
    // Once the server has seen the disconnect, a new subscriber fits (a refused probe holds no slot).
    await until(async () => (await t.api('/api/events')).status === 200, HANG_MS, 'the slot to be freed', 50);
  });
});

describe('PATCH /api/config', () => {
  const YAML = '# my bot\nmaxConcurrent: 10 # plenty\nchannels:\n  channel_e:\n    botToken: ${TG_TOKEN}\n';

  it('applies immediate fields live: a lowered maxConcurrent is enforced on the next request; the file keeps comments and placeholders', async () => {
    process.env.TG_TOKEN = 'tg-secret-value';
    s = await startTestServer({ yaml: YAML });
    const res = await s.api('/api/config', { method: 'PATCH', json: { maxConcurrent: 1, groupChat: { groupPolicy: 'smart' } } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { ok: boolean; needsRestart: boolean; config: Record<string, unknown> };
    expect(body.ok).toBe(true);
    expect(body.needsRestart).toBe(false);
    expect(body.config).toMatchObject({ maxConcurrent: 1, groupChat: { groupPolicy: 'smart' }, channels: { channel_e: { botToken: '${TG_TOKEN}' } } });
    const file = fs.readFileSync(path.join(s.dir, 'service.yaml'), 'utf8');
    expect(file).toContain('# my bot\n');
    expect(file).toContain('maxConcurrent: 1 # plenty\n');
    expect(file).toContain('botToken: ${TG_TOKEN}');
    expect(file).not.toContain('tg-secret-value');
    const t = s;
    const running = t.api('/chat', { json: { message: 'HANG', sessionKey: 'a' } });
    await until(() => t.standIn.runs().length === 1, HANG_MS, 'the first turn to run');
    const busy = parseSseStrict(await (await t.api('/chat', { json: { message: 'x', sessionKey: 'b' } })).text());
    expect(busy[0]).toEqual({ type: 'error', message: 'Server busy: too many concurrent requests (limit: 1). Try again later.' });
    expect(t.assistant.abort('a')).toBe(true);
    await (await running).text();
    delete process.env.TG_TOKEN;
  });

  it.each([
    [{ engine: 'engine_d' }, true],
    [{ model: 'opus' }, true],
    [{ codex: { search: true } }, true],
    [{ channels: { channel_f: { botToken: 'x' } } }, true],
    [{ gateway: { port: 4000 } }, true],
    [{ mcp: { fs: { command: 'mcp-fs' } } }, true],
    [{ provider: { baseUrl: 'http://p.test' } }, true],
    [{ provider: { apiKey: 'k' } }, true],
    [{ provider: { fallback: { baseUrl: 'http://f.test' } } }, true],
    [{ timeout: 30 }, false],
    [{ maxConcurrent: 4 }, false],
    [{ sessionTtlDays: 3 }, false],
    [{ groupChat: { historyLimit: 5 } }, false],
    [{ streaming: { mode: 'streaming' } }, false],
    [{ persona: { role: 'helper' } }, false],
    [{ permissions: { deniedCommands: ['rm'] } }, false],
    [{ systemPrompt: 'Be kind.' }, false],
  ])('PATCH %j → needsRestart %s', async (patch, restart) => {
    s = await startTestServer();
    const res = await s.api('/api/config', { method: 'PATCH', json: patch });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { needsRestart: boolean }).needsRestart).toBe(restart);
  });

  it("takes a program's name for engine and provider.models, and writes the id", async () => {
    s = await startTestServer({ yaml: 'timeout: 60\n' });
    const res = await s.api('/api/config', { method: 'PATCH', json: { engine: 'codex', provider: { models: { claude: 'opus' } } } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { config: Record<string, unknown> }).config).toMatchObject({
      engine: 'engine_d',
      provider: { models: { engine_b: 'opus' } },
    });
    const file = fs.readFileSync(path.join(s.dir, 'service.yaml'), 'utf8');
    expect(file).toContain('engine: engine_d\n');
    expect(file).toContain('engine_b: opus');
    expect(file).not.toMatch(/codex|claude/);
    const bad = await s.api('/api/config', { method: 'PATCH', json: { engine: 'claud' } });
    expect(bad.status).toBe(400);
    const issue = ((await bad.json()) as { issues: Array<{ path: string; message: string }> }).issues[0];
    expect(issue).toMatchObject({ path: 'engine', message: expect.stringContaining('engine_b (Claude Code, alias claude)') });
  });

  it('rejects unknown fields and wrong types with their paths; the file is untouched', async () => {
    s = await startTestServer({ yaml: 'timeout: 60\n' });
    const before = fs.readFileSync(path.join(s.dir, 'service.yaml'), 'utf8');
    const cases: Array<[unknown, string[]]> = [
      [{ timeout: '30' }, ['timeout']],
      [{ colour: 'blue' }, ['colour']],
      [{ groupChat: { groupPolicy: 'all', bogus: 1 } }, ['groupChat.bogus', 'groupChat.groupPolicy']],
      [{ maxConcurrent: 0 }, ['maxConcurrent']],
      [{ name: null }, ['name']],
      [[1, 2], ['(root)']],
    ];
    for (const [patch, paths] of cases) {
      const res = await s.api('/api/config', { method: 'PATCH', json: patch });
      expect(res.status, JSON.stringify(patch)).toBe(400);
      const body = (await res.json()) as { error: string; issues: Array<{ path: string }> };
      expect(body.issues.map((i) => i.path).sort()).toEqual(paths);
    }
    expect(fs.readFileSync(path.join(s.dir, 'service.yaml'), 'utf8')).toBe(before);
  });
});

describe('no secret leaves the server', () => {
  it('no response body contains a secret from the config', async () => {
    const secrets = ['sk-oauth-SECRET-1', 'prov-key-SECRET-2', 'gw-token-SECRET-3', 'xoxb-SECRET-4', 'xapp-SECRET-5', 'fallback-SECRET-6'];
    s = await startTestServer({
      yaml: `${[
        `oauthToken: ${secrets[0]}`,
        `provider:\n  baseUrl: http://p.test\n  apiKey: ${secrets[1]}\n  fallback:\n    apiKey: ${secrets[5]}`,
        `gateway:\n  token: ${secrets[2]}`,
        `channels:\n  channel_d:\n    botToken: ${secrets[3]}\n    appToken: ${secrets[4]}`,
      ].join('\n')}\n`,
    });
    const bodies: string[] = [];
    for (const p of ['/health', '/', '/api/status', '/api/channels', '/api/config', '/dashboard/dashboard.js']) bodies.push(await (await s.api(p)).text());
    bodies.push(await (await s.api('/api/config', { method: 'PATCH', json: { timeout: 99 } })).text());
    bodies.push(await (await s.api('/chat', { json: { message: '/status' } })).text());
    bodies.push(await (await s.api('/chat', { json: { message: 'hello' } })).text());
    for (const body of bodies) for (const secret of secrets) expect(body).not.toContain(secret);
    expect(bodies[4]).toContain('********');
  });
});
