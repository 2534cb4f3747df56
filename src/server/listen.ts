import { toNodeHandler, type H3 } from 'h3';
import { listen } from 'listhen';

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
  }).catch((err: Error) => {
    throw new Error(`cannot listen on ${opts.host}:${opts.port}: ${err.message}`);
  });
  const address = listener.address;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const server = listener.server as import('node:http').Server;
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
