import http from 'node:http';
import { H3 } from 'h3';
import { afterEach, describe, expect, it } from 'vitest';
import { listenApp, type RunningServer } from '../../../src/server/listen.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * Stopping the listener (the gateway's first step on SIGTERM): new connections are refused, and a
 * keep-alive client whose connection was busy at that moment is not served on it for the whole
 * grace period: its answer says `Connection: close`, and its next request needs a new connection,
 * which is refused.
 */
let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Answer {
  status: number;
  connection: string | undefined;
  body: string;
  socketClosed: Promise<void>;
}

function get(agent: http.Agent, url: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let socketClosed: Promise<void> = Promise.resolve();
    const req = http.get(url, { agent }, (res) => {
      socketClosed = res.socket.destroyed ? Promise.resolve() : new Promise((r) => res.socket.once('close', () => r()));
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body, socketClosed }));
    });
    req.on('error', reject);
  });
}

describe('a listener that stopped accepting', () => {
  it('answers the request in progress with Connection: close; the client then finds new connections refused', async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let arrived: () => void = () => undefined;
    const slowArrived = new Promise<void>((r) => {
      arrived = r;
    });
    const app = new H3()
      .get('/fast', () => 'fast')
      .get('/slow', async () => {
        arrived();
        await released;
        return 'slow';
      });
    server = await listenApp(app, { host: '127.0.0.1', port: 0 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = await get(agent, `${server.url}/fast`);
      expect(before).toMatchObject({ status: 200, connection: 'keep-alive', body: 'fast' });

      const slow = get(agent, `${server.url}/slow`); // the same kept-alive connection
      await slowArrived;
      server.stopAccepting(); // the connection is busy: closing idle connections leaves it open
      release();
      const answered = await slow;
      expect(answered).toMatchObject({ status: 200, connection: 'close', body: 'slow' });
      await answered.socketClosed;

      await expect(get(agent, `${server.url}/fast`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      agent.destroy();
    }
  });

  it('a streamed answer whose head went out before the stop ends, then its connection closes; the next request is refused', async () => {
    let push: ReadableStreamDefaultController<Uint8Array> | undefined;
    const app = new H3()
      .get('/fast', () => 'fast')
      .get('/stream', () => new Response(new ReadableStream<Uint8Array>({ start: (c) => void (push = c) }), { headers: { 'content-type': 'text/plain' } }));
    server = await listenApp(app, { host: '127.0.0.1', port: 0 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(await get(agent, `${server.url}/fast`)).toMatchObject({ status: 200, connection: 'keep-alive' });
      const headSent = new Promise<http.IncomingMessage>((resolve, reject) => http.get(`${server?.url}/stream`, { agent }, resolve).on('error', reject));
      await until(() => push !== undefined, HANG_MS, 'the stream to start');
      push?.enqueue(new TextEncoder().encode('first, ')); // Node sends the head with the first chunk
      const res = await headSent;
      expect(res.headers.connection).toBe('keep-alive'); // decided before the stop
      const socketClosed = new Promise<void>((r) => res.socket.once('close', () => r()));
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      const ended = new Promise<void>((r) => res.once('end', () => r()));
      server.stopAccepting();
      push?.enqueue(new TextEncoder().encode('the rest of the turn'));
      push?.close();
      await ended;
      expect(body).toBe('first, the rest of the turn');
      // At once, not after the keep-alive timeout: the kept connection is not served again.
      await expect(get(agent, `${server.url}/fast`)).rejects.toMatchObject({ code: expect.stringMatching(/^(ECONNREFUSED|ECONNRESET)$/) });
      await socketClosed;
    } finally {
      agent.destroy();
    }
  });
});
