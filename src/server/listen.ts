import { toNodeHandler, type H3 } from 'h3';
import { listen } from 'listhen';
import { STATUS_CODES } from 'node:http';
import net from 'node:net';
import { AppError } from '../core/errors.js';

/**
 * listhen around the h3 app: the exact host and port asked for (a busy port is an error, never a
 * silent move to another one); port 0 picks a free one.
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

export async function listenApp(app: H3, opts: { host: string; port: number }): Promise<RunningServer> {
  // Empty ranges: get-port-please must not fall back to other ports when the one asked for is busy.
  const noRange = [] as unknown as [number, number];
  const port = opts.port === 0 ? { port: 0, random: true } : { port: opts.port, ports: [], portRange: noRange, alternativePortRange: noRange, random: false };
  const listener = await listen(toNodeHandler(app), {
    port,
    hostname: opts.host,
    showURL: false,
    isProd: true,
    qr: false,
    public: opts.host !== '127.0.0.1' && opts.host !== 'localhost' && opts.host !== '::1',
    autoClose: false,
  }).catch(async (err: Error) => {
    throw await explainListenFailure(opts, err);
  });
  const address = listener.address;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const server = listener.server as import('node:http').Server;
  server.on('clientError', answerMalformed);
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

/**
 * listhen (get-port-please) reports every bind failure as "unable to find an available port";
 * binding once more ourselves gets the reason, so the user reads what to do (an ordinary error,
 * exit 1, never a bug report).
 */
async function explainListenFailure(opts: { host: string; port: number }, err: Error): Promise<AppError> {
  const code = await new Promise<string | undefined>((resolve) => {
    const probe = net.createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => resolve(e.code));
    probe.listen(opts.port, opts.host, () => probe.close(() => resolve(undefined)));
  });
  const { host, port } = opts;
  if (code === 'EADDRINUSE') {
    return new AppError('port_in_use', `port ${port} on ${host} is already in use; stop what is using it or choose another port with --port`);
  }
  if (code === 'EACCES') {
    return new AppError('port_denied', `not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges); choose another port with --port`);
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new AppError('host_unavailable', `cannot listen on ${host}: it is not an address of this machine; check --host or gateway.host`);
  }
  return new AppError('listen_failed', `cannot listen on ${host}:${port}: ${code ?? err.message}`);
}
