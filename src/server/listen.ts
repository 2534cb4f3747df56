import http, { STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError } from '../core/errors.js';
import type { ApiHandler } from './app.js';

/**
 * node:http around the API's handler (app.ts): the exact host and port asked for (a busy port is an error, never
 * a silent move to another one); port 0 picks a free one. (A plain server rather than listhen:
 * listhen's port search, certificate code and URL printing cost the gateway memory and start-up
 * time for nothing it uses.)
 */
export interface RunningServer {
  url: string;
  host: string;
  port: number;
  /** Stop accepting new connections; requests in progress (a streaming turn) go on. */
  stopAccepting(): void;
  /** Stop accepting and close every connection still open (event feeds, idle keep-alives). */
  close(): Promise<void>;
}

export interface ListenOptions {
  host: string;
  port: number;
  /**
   * Requests the listener answers itself, before the app (the gateway's GET /health): true when
   * it did. Everything else goes to the app.
   */
  answerFirst?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean;
}

export async function listenApp(handle: ApiHandler, opts: ListenOptions): Promise<RunningServer> {
  const first = opts.answerFirst;
  const server = http.createServer(first ? (req, res) => first(req, res) || handle(req, res) : handle);
  await new Promise<void>((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException) => reject(explainListenFailure(opts, err));
    server.once('error', fail);
    server.listen(opts.port, opts.host, () => {
      server.off('error', fail);
      resolve();
    });
  });
  server.on('clientError', answerMalformed);
  const address = server.address() as AddressInfo;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  let closed: Promise<void> | undefined;
  const stopAccepting = () => {
    closed ??= new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    url: `http://${host}:${address.port}`,
    host: opts.host,
    port: address.port,
    stopAccepting,
    async close() {
      stopAccepting();
      server.closeAllConnections();
      await closed;
    },
  };
}

// --- internal ---

/**
 * A request Node's parser refuses (an unknown method, a broken header) never reaches the app;
 * Node's own answer is a bare status line. Ours is the same status with the JSON error body
 * every other answer has.
 */
function answerMalformed(err: NodeJS.ErrnoException, socket: import('node:stream').Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status =
    err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? 413 : 400;
  const body = JSON.stringify({ error: `malformed HTTP request (${err.code ?? 'parse error'})` });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** A bind failure said so the user reads what to do (an ordinary error, exit 1, never a bug report). */
function explainListenFailure(opts: ListenOptions, err: NodeJS.ErrnoException): AppError {
  const { host, port } = opts;
  if (err.code === 'EADDRINUSE') {
    return new AppError('port_in_use', `port ${port} on ${host} is already in use; stop what is using it or choose another port with --port`);
  }
  if (err.code === 'EACCES') {
    return new AppError('port_denied', `not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges); choose another port with --port`);
  }
  if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') {
    return new AppError('host_unavailable', `cannot listen on ${host}: it is not an address of this machine; check --host or gateway.host`);
  }
  return new AppError('listen_failed', `cannot listen on ${host}:${port}: ${err.code ?? err.message}`);
}
