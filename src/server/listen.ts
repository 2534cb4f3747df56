import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler, type H3 } from 'h3';

/**
 * node:http around the h3 app: the exact host and port asked for (a busy port is an error, never
 * a silent move to another one); port 0 picks a free one. (A plain server, not listhen: listhen's
 * port search, certificate code and URL printing cost the gateway memory and start-up time for
 * nothing it uses.)
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
  const server = http.createServer(toNodeHandler(app));
  await new Promise<void>((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? `port ${opts.port} is already in use` : err.message;
      reject(new Error(`cannot listen on ${opts.host}:${opts.port}: ${why}`));
    };
    server.once('error', fail);
    server.listen(opts.port, opts.host, () => {
      server.off('error', fail);
      resolve();
    });
  });
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
