import type http from 'node:http';
import net from 'node:net';
import type { H3 } from 'h3';
import { toNodeHandler } from 'h3/node';
import { type Listener, listen } from 'listhen';
import { AppError } from '../core/errors.js';
import { keepSelfSigned, type TlsFiles } from './tls.js';

/**
 * listhen around the API's h3 app (app.ts): HTTP or HTTPS, the exact host and port asked for (a
 * busy port is an error, never a silent move to another one; port 0 picks a free one), and the
 * addresses it can be reached at. listhen's own output, signal handlers and port search stay off:
 * the gateway prints its URLs, owns SIGINT/SIGTERM (graceful shutdown), and a port is the one
 * asked for.
 */
export interface RunningServer {
  url: string;
  host: string;
  port: number;
  /** The certificate in use (PEM) when serving HTTPS. */
  tls?: { cert: string };
  /** Stop accepting new connections; requests in progress (a streaming turn) go on. */
  stopAccepting(): void;
  /** Stop accepting and close every connection still open (event feeds, idle keep-alives). */
  close(): Promise<void>;
  /** Where the server can be reached: the local URL, and on a public bind each network address. */
  urls(): Promise<Array<{ url: string; type: 'local' | 'network' | 'tunnel' | 'extra' }>>;
  /** Print `url` as a QR code with the URLs it is reached at (listhen's URL panel). */
  showQr(url: string): Promise<void>;
}

export interface ListenOptions {
  host: string;
  port: number;
  /**
   * Requests the listener answers itself, before the app (the gateway's GET /health): true when
   * it did. Everything else goes to the app.
   */
  answerFirst?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean;
  /** Serve HTTPS with this certificate and key (tls.ts resolves or makes them). */
  tls?: TlsFiles;
}

export async function listenApp(app: H3, opts: ListenOptions): Promise<RunningServer> {
  assertHostname(opts.host);
  const handle = toNodeHandler(app) as (req: http.IncomingMessage, res: http.ServerResponse) => void;
  const first = opts.answerFirst;
  const connections = closingConnections();
  const serve = (req: http.IncomingMessage, res: http.ServerResponse) => {
    connections.track(req, res);
    if (!first?.(req, res)) handle(req, res);
  };
  const listener = await listen(serve, {
    hostname: opts.host,
    // A port of our own choosing or none: get-port-please must neither look for another port nor pick a random one.
    port: opts.port === 0 ? { port: 0, random: true } : { port: opts.port, random: false, verbose: false },
    public: isAnyHost(opts.host),
    https: httpsOption(opts.tls),
    showURL: false,
    qr: false,
    open: false,
    clipboard: false,
    autoClose: false,
    isProd: true,
  }).catch(async (err: unknown) => {
    throw await explainListenFailure(opts, err);
  });
  if (opts.port !== 0 && listener.address.port !== opts.port) {
    // get-port-please skips ports browsers refuse (6000, 6666, ...) and would have used another one.
    await listener.close();
    throw new AppError('port_unsafe', `port ${opts.port} is one that web browsers refuse to connect to; choose another port with --port`);
  }
  if (opts.tls?.selfSigned && listener.https) keepSelfSigned(opts.tls, listener.https);
  const server = listener.server;
  server.on('clientError', answerMalformed);
  let closed: Promise<void> | undefined;
  const stopAccepting = () => {
    connections.closeAfterAnswers();
    closed ??= new Promise<void>((resolve) => server.close(() => resolve()));
  };
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    url: `${opts.tls ? 'https' : 'http'}://${host}:${listener.address.port}`,
    host: opts.host,
    port: listener.address.port,
    ...(listener.https ? { tls: { cert: listener.https.cert } } : {}),
    stopAccepting,
    async close() {
      stopAccepting();
      server.closeAllConnections();
      await closed;
    },
    urls: () => readUrls(listener),
    showQr: (url) => listener.showURL({ publicURL: url, qr: true, extraURLs: [] }),
  };
}

// --- internal ---

/**
 * Keep-alive connections once the listener stops: Node closes those that are idle at that moment,
 * but a client whose connection was busy (or that sends again at once) would be served on it for
 * the whole grace period. From then on each answer closes its connection: `Connection: close` where
 * the head is not sent yet, the socket ended after the answer where it is (a streaming turn).
 * Kept per connection, not per request: every request passes here (/health too), so a request
 * only notes itself as its connection's latest answer; a listener is added per connection.
 */
function closingConnections() {
  const ANSWER = Symbol('answer');
  type Connection = net.Socket & { [ANSWER]?: http.ServerResponse };
  const open = new Set<Connection>();
  let closing = false;
  const closeAfter = (res: http.ServerResponse, socket: net.Socket) => {
    if (!res.headersSent) res.shouldKeepAlive = false;
    else res.once('finish', () => socket.end());
  };
  return {
    track(req: http.IncomingMessage, res: http.ServerResponse) {
      const socket: Connection = req.socket;
      if (closing) return closeAfter(res, socket);
      socket[ANSWER] = res;
      if (open.has(socket)) return;
      open.add(socket);
      socket.once('close', () => open.delete(socket));
    },
    closeAfterAnswers() {
      closing = true;
      for (const socket of open) {
        const res = socket[ANSWER];
        if (res && !res.writableFinished) closeAfter(res, socket);
      }
      open.clear();
    },
  };
}

/** listhen's https option: the files, or the names of the certificate it makes now. */
function httpsOption(tls: TlsFiles | undefined) {
  if (!tls) return false;
  return tls.selfSigned ? { domains: tls.selfSigned.domains, validityDays: tls.selfSigned.validityDays } : { cert: tls.certFile, key: tls.keyFile };
}

async function readUrls(listener: Listener): Promise<Array<{ url: string; type: 'local' | 'network' | 'tunnel' | 'extra' }>> {
  return (await listener.getURLs({ extraURLs: [] })).map(({ url, type }) => ({ url: url.replace(/\/$/, ''), type }));
}

const isAnyHost = (host: string) => host === '0.0.0.0' || host === '::' || host === '';

/** listhen replaces a host name it cannot use by `localhost` (with a warning); here it is an error. */
function assertHostname(host: string): void {
  if (!/^(?!-)[\d.:A-Za-z-]{1,63}(?<!-)$/.test(host)) {
    throw new AppError('host_unavailable', `cannot listen on ${JSON.stringify(host)}: not a host name or an address; check --host or gateway.host`);
  }
}

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
  const reason = { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Payload Too Large', 431: 'Request Header Fields Too Large' }[status];
  const body = JSON.stringify({ error: `malformed HTTP request (${err.code ?? 'parse error'})` });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * A bind failure said so the user reads what to do (an ordinary error, exit 1, never a bug
 * report). get-port-please reports every failure as "no available port"; binding once more
 * tells which it was.
 */
async function explainListenFailure(opts: ListenOptions, err: unknown): Promise<AppError> {
  const { host, port } = opts;
  const code = (err as NodeJS.ErrnoException).code ?? (await probeBind(host, port));
  if (code === 'EADDRINUSE') {
    return new AppError('port_in_use', `port ${port} on ${host} is already in use; stop what is using it or choose another port with --port`);
  }
  if (code === 'EACCES') {
    return new AppError('port_denied', `not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges); choose another port with --port`);
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new AppError('host_unavailable', `cannot listen on ${host}: it is not an address of this machine; check --host or gateway.host`);
  }
  if (opts.tls && !code) {
    return new AppError(
      'tls_failed',
      `cannot serve HTTPS with ${opts.tls.certFile} and ${opts.tls.keyFile}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return new AppError('listen_failed', `cannot listen on ${host}:${port}: ${code ?? (err instanceof Error ? err.message : String(err))}`);
}

/** The error code of binding host:port now, or undefined when it binds. */
function probeBind(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'listen_failed'));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}
