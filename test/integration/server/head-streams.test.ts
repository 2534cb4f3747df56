import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../../helpers/server.js';
import { HANG_MS } from '../../helpers/wait.js';

/**
 * Issue 36, part 1: HEAD on a route that streams answers its head and ends at once: nothing
 * subscribes, no turn starts, and the next request on the same keep-alive connection is answered
 * (a HEAD that never ended held every later request of its connection, and 32 of them took every
 * event-feed slot).
 */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

/** Two requests written back to back on one socket; resolves with what came back once the second answer has ended. */
function twoOnOneSocket(port: number, first: string, second: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.write(first + second));
    let raw = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer to the second request within ${HANG_MS} ms; got:\n${raw}`));
    }, HANG_MS);
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => {
      raw += d;
      // The second answer is /health's JSON, sent with its length and `connection: close`.
      if (/"status":"ok"[^\n]*\}$/.test(raw)) {
        clearTimeout(timer);
        sock.end();
        resolve(raw);
      }
    });
    sock.on('error', reject);
  });
}

const head = (path: string) => `HEAD ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n\r\n`;
const health = 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

describe('HEAD on the streaming routes', () => {
  it('GET /api/events: HEAD answers the stream head without subscribing, and the connection answers the next request', async () => {
    s = await startTestServer({ maxEventSubscribers: 1 });
    const port = s.server.port;
    // The one subscriber slot is taken: a HEAD that subscribed would be refused (503).
    const feed = new AbortController();
    expect((await s.api('/api/events', { signal: feed.signal })).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const raw = await twoOnOneSocket(port, head('/api/events'), health);
      const [first, second] = raw.split(/\r\n\r\n/);
      expect(first).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(first?.toLowerCase()).toContain('content-type: text/event-stream');
      expect(second).toMatch(/^HTTP\/1\.1 200 OK/);
    }
    // Still one subscriber: another GET is refused, and once the first leaves its slot is free.
    expect((await s.api('/api/events')).status).toBe(503);
    feed.abort();
  });

  it.each([
    ['/chat', 'POST'],
    ['/command', 'POST'],
    ['/api/tasks/daily/run', 'POST'],
    ['/v1/chat/completions', 'POST'],
  ])('HEAD %s (a %s route that streams) answers 405 at once, starts no turn, and the next request is answered', async (path, allow) => {
    s = await startTestServer({ yaml: 'tasks:\n  - id: daily\n    name: Daily\n    schedule: "0 9 * * *"\n    prompt: hello\n' });
    const raw = await twoOnOneSocket(s.server.port, head(path), health);
    const [first] = raw.split(/\r\n\r\n/);
    expect(first).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    expect(first?.toLowerCase()).toContain(`allow: ${allow.toLowerCase()}`);
    expect(s.assistant.status()).toMatchObject({ running: 0, waiting: 0 });
    expect(await s.assistant.recentActivity(10)).toEqual([]);
  });
});

describe('HEAD answers as its GET does', () => {
  it('HEAD /api/events with the token in the query (as EventSource sends it) is its head, like the GET; without a token 401', async () => {
    s = await startTestServer({ maxEventSubscribers: 1 });
    const base = `http://127.0.0.1:${s.server.port}`;
    const feed = new AbortController();
    expect((await fetch(`${base}/api/events?token=${TEST_TOKEN}`, { signal: feed.signal })).status).toBe(200);
    const head = await fetch(`${base}/api/events?token=${TEST_TOKEN}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('text/event-stream');
    expect((await fetch(`${base}/api/events`, { method: 'HEAD' })).status).toBe(401);
    // The HEAD took no slot: the one subscriber is still the first GET.
    expect((await s.api('/api/events')).status).toBe(503);
    feed.abort();
  });

  it.each([
    ['/api/config', true],
    ['/v1/models', true],
    ['/dashboard/api.js', false],
    ['/index.html', false],
    ['/api/config', false],
  ])('HEAD %s (token: %s) carries the status and content-length of its GET', async (path, withToken) => {
    s = await startTestServer();
    const init = (method: string): RequestInit => ({ method, headers: withToken ? { authorization: `Bearer ${TEST_TOKEN}` } : {} });
    const url = `http://127.0.0.1:${s.server.port}${path}`;
    const get = await fetch(url, init('GET'));
    const body = Buffer.from(await get.arrayBuffer());
    const head = await fetch(url, init('HEAD'));
    expect(head.status).toBe(get.status);
    expect(head.headers.get('content-length')).toBe(String(body.length));
    expect(get.headers.get('content-length')).toBe(String(body.length));
  });
});
