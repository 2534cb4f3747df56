import fs from 'node:fs';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { parseSseStrict, startTestServer, type TestServer } from '../../helpers/server.js';

/**
 * What the dashboard's Chat view needs over HTTP, on a real socket: a session's stored messages
 * (GET /api/sessions/:key/history) and its Markdown library served from this package's own
 * dependency (GET /dashboard/vendor/marked.js), never from another host.
 */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

async function chat(srv: TestServer, message: string, sessionKey: string): Promise<void> {
  const res = await srv.api('/chat', { json: { message, sessionKey } });
  expect(res.status).toBe(200);
  expect(await res.text()).toContain('"type":"completion"');
}

/**
 * A turn's stream read as it arrives: `until(done)` resolves once `done(reply, types)` holds for
 * the reply text so far and the event types seen (throws if the body ends first).
 */
function readTurn(res: Response): { until(done: (reply: string, types: string[]) => boolean): Promise<void>; end(): Promise<void> } {
  const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let reply = '';
  const types: string[] = [];
  return {
    async until(done) {
      while (!done(reply, types)) {
        const next = await reader?.read();
        if (!next || next.done) throw new Error(`the stream ended first (${types.join(', ')})`);
        buffer += next.value;
        for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (!block.startsWith('data: ')) continue;
          const event = JSON.parse(block.slice(6)) as { type: string; content?: string };
          types.push(event.type);
          if (event.type === 'text') reply += event.content;
        }
      }
    },
    /** The body's end: the turn has been recorded by then (its stream closes after). */
    async end() {
      for (let next = await reader?.read(); next && !next.done; next = await reader?.read());
    },
  };
}

const history = (srv: TestServer, key: string, query = '') => srv.api(`/api/sessions/${encodeURIComponent(key)}/history${query}`);

describe('GET /api/sessions/:key/history', () => {
  it('the stored messages, oldest first, with their times; any key, percent-encoded; the newest `limit`, `more` when older ones are left out', async () => {
    s = await startTestServer();
    const key = 'room/1 #a?b';
    await chat(s, 'first question', key);
    await chat(s, 'second question', key);
    await chat(s, 'elsewhere', 'other');

    const res = await history(s, key);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = (await res.json()) as { key: string; messages: Array<{ role: string; text: string; ts: string }>; more: boolean };
    expect(body.key).toBe(key);
    expect(body.more).toBe(false);
    expect(body.messages.map(({ role, text }) => ({ role, text }))).toEqual([
      { role: 'user', text: 'first question' },
      { role: 'assistant', text: 'ECHO: first question\nTURN: 1' },
      { role: 'user', text: 'second question' },
      { role: 'assistant', text: 'ECHO: second question\nTURN: 2' },
    ]);
    for (const m of body.messages) expect(new Date(m.ts).toISOString()).toBe(m.ts);
    const times = body.messages.map((m) => Date.parse(m.ts));
    expect([...times].sort((a, b) => a - b)).toEqual(times);

    const last3 = (await (await history(s, key, '?limit=3')).json()) as typeof body;
    expect(last3.messages.map((m) => m.text)).toEqual(['ECHO: first question\nTURN: 1', 'second question', 'ECHO: second question\nTURN: 2']);
    expect(last3.more).toBe(true);
    expect(((await (await history(s, key, '?limit=4')).json()) as typeof body).more).toBe(false);

    // A key nothing was said on has no messages (it is not an error: a new conversation).
    expect(await (await history(s, 'never-used')).json()).toEqual({ key: 'never-used', messages: [], more: false, running: false });
    // HEAD is answered like the GET, without a body.
    const head = await s.api(`/api/sessions/other/history`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('`running` says whether a turn of the key runs now: a page reloaded mid-turn follows it', async () => {
    s = await startTestServer();
    const srv = s;
    const res = await srv.api('/chat', { json: { message: 'GATE:history-gate slow', sessionKey: 'busy' } });
    const stream = readTurn(res);
    await stream.until((reply) => reply === 'Before the gate.');
    const during = (await (await history(srv, 'busy')).json()) as { messages: Array<{ role: string; text: string }>; running: boolean };
    expect(during.running).toBe(true);
    expect(during.messages.map((m) => m.role)).toEqual(['user']);
    expect(((await (await history(srv, 'idle')).json()) as { running: boolean }).running).toBe(false);
    fs.writeFileSync(`${srv.dir}/history-gate`, '');
    await stream.until((_, types) => types.includes('completion'));
    const after = (await (await history(srv, 'busy')).json()) as typeof during;
    expect(after.running).toBe(false);
    expect(after.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('a reply stopped after some text is stored with `status: aborted` and the message the turn ended with; a completed one has neither', async () => {
    s = await startTestServer();
    const srv = s;
    await chat(srv, 'done in one go', 'cut');
    const res = await srv.api('/chat', { json: { message: 'GATE:never-opened stop here', sessionKey: 'cut' } });
    const stream = readTurn(res);
    await stream.until((reply) => reply === 'Before the gate.');
    expect(await (await srv.api('/abort', { json: { sessionKey: 'cut' } })).json()).toEqual({ ok: true, aborted: true });
    await stream.until((_, types) => types.includes('completion'));
    await stream.end();
    const body = (await (await history(srv, 'cut')).json()) as { messages: Array<Record<string, unknown>> };
    expect(body.messages.map(({ ts, ...m }) => m)).toEqual([
      { role: 'user', text: 'done in one go' },
      { role: 'assistant', text: 'ECHO: done in one go\nTURN: 1' },
      { role: 'user', text: 'GATE:never-opened stop here' },
      { role: 'assistant', text: 'Before the gate.', status: 'aborted', message: 'Aborted' },
    ]);
  });

  it('a turn that failed after some text keeps that text, with `status: failed` and the failure, as the page showed it live', async () => {
    s = await startTestServer();
    const res = await s.api('/chat', { json: { message: 'TEXT-THEN-FAIL:the model went away', sessionKey: 'broken' } });
    const events = parseSseStrict(await res.text());
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'failed', message: 'the model went away' });
    const body = (await (await history(s, 'broken')).json()) as { messages: Array<Record<string, unknown>> };
    expect(body.messages.map(({ ts, ...m }) => m)).toEqual([
      { role: 'user', text: 'TEXT-THEN-FAIL:the model went away' },
      { role: 'assistant', text: 'Before the failure.', status: 'failed', message: 'the model went away' },
    ]);
  });

  it('bad limits, keys and encodings are 400s naming the problem; the token is required; a reset empties it', async () => {
    s = await startTestServer();
    await chat(s, 'hello', 'k');
    for (const limit of ['0', '1001', 'abc', '2.5', '']) {
      const res = await history(s, 'k', `?limit=${limit}`);
      expect(res.status, limit).toBe(400);
      expect(await res.json()).toEqual({ error: `limit: expected an integer from 1 to 1000, got "${limit}"` });
    }
    const tooLong = await history(s, 'k'.repeat(257));
    expect(tooLong.status).toBe(400);
    expect(await tooLong.json()).toEqual({ error: 'key: expected a session key of 1 to 256 characters, percent-encoded in the path' });
    expect((await s.api('/api/sessions/%zz/history')).status).toBe(400);
    expect((await history(s, 'k'.repeat(256))).status).toBe(200);

    const anonymous = await fetch(`${s.url}/api/sessions/k/history`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ error: 'missing bearer token' });
    expect((await fetch(`${s.url}/api/sessions/k/history?token=${encodeURIComponent('test-token-0123456789abcdef')}`)).status).toBe(401);
    expect((await s.api('/api/sessions/k/history', { method: 'POST', json: {} })).status).toBe(405);

    expect(((await (await history(s, 'k')).json()) as { messages: unknown[] }).messages).toHaveLength(2);
    expect((await s.api('/reset', { json: { sessionKey: 'k' } })).status).toBe(200);
    expect(await (await history(s, 'k')).json()).toEqual({ key: 'k', messages: [], more: false, running: false });
  });

  it('secret values in stored messages are masked, as in every JSON reply', async () => {
    s = await startTestServer({ yaml: 'oauthToken: sk-oauth-very-secret\n' });
    await chat(s, 'my token is sk-oauth-very-secret, keep it', 'secrets');
    const text = await (await history(s, 'secrets')).text();
    expect(text).not.toContain('sk-oauth-very-secret');
    expect(JSON.parse(text).messages[0].text).toBe('my token is ********, keep it');
  });
});

describe('GET /dashboard/vendor/marked.js', () => {
  it("is marked's ES module from the package's dependency, served without a token under the dashboard's headers", async () => {
    s = await startTestServer();
    const res = await fetch(`${s.url}/dashboard/vendor/marked.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const file = createRequire(import.meta.url).resolve('marked');
    expect(await res.text()).toBe(fs.readFileSync(file, 'utf8'));
    // The page imports it by this path (templates/dashboard/chat-markdown.js).
    expect(fs.readFileSync(new URL('../../../templates/dashboard/chat-markdown.js', import.meta.url), 'utf8')).toContain("from './vendor/marked.js'");
    expect((await fetch(`${s.url}/dashboard/vendor/other.js`)).status).toBe(404);
  });
});
