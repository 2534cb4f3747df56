import { type ApiRequest, Reply } from './http.js';

/**
 * The only SSE writer. Each item becomes exactly one `data: <json>` line and a blank line; the
 * only other thing a stream ever carries is a `: heartbeat` comment after `heartbeatMs` of
 * silence, so proxies keep it open. A client that goes away ends our reading of the source;
 * what that means for the source is the source's business (a chat turn goes on and still lands
 * in history).
 *
 * The response headers go out at once, without a body line (flushHeaders). A queued turn's client and a quiet event feed's EventSource see the response
 * open before the first event, and a client that splits the body on blank lines and parses
 * each block as JSON reads only events (an opening `: accepted` comment broke such clients).
 */
export interface StreamOptions {
  heartbeatMs: number;
  /** Applied to each item before it is written (RouteTable.redact: no secret value leaves). */
  redact: <T>(value: T) => T;
  onClientGone?: () => void;
  /** Called with a promise that settles once the stream has written its last event. */
  track?: (finished: Promise<void>) => void;
}

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'private, no-cache, no-store, no-transform, must-revalidate, max-age=0',
  // nginx and similar proxies buffer responses unless told not to.
  'x-accel-buffering': 'no',
};

export function streamJson(request: ApiRequest, source: AsyncIterable<unknown>, opts: StreamOptions): Reply {
  const headers: Record<string, string> = { ...SSE_HEADERS };
  if (request.header('connection') === 'keep-alive') headers.connection = 'keep-alive';
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  opts.track?.(finished);
  return new Reply(200, headers, (res) => {
    let closed = false;
    let lastWrite = Date.now();
    // Events that arrive together (one read of the engine's output often holds several) leave in
    // one write: the socket is corked until the end of this tick.
    let corked = false;
    const uncork = () => {
      corked = false;
      res.uncork();
    };
    const write = (text: string) => {
      if (closed) return;
      lastWrite = Date.now();
      if (!corked) {
        corked = true;
        res.cork();
        process.nextTick(uncork);
      }
      res.write(text);
    };
    const clientGone = () => {
      if (closed) return;
      closed = true;
      opts.onClientGone?.();
    };
    res.on('close', () => {
      if (!res.writableFinished) clientGone();
    });
    res.flushHeaders();

    const heartbeat = setInterval(
      () => {
        if (!closed && Date.now() - lastWrite >= opts.heartbeatMs) write(': heartbeat\n\n');
      },
      Math.max(10, Math.floor(opts.heartbeatMs / 3)),
    );
    heartbeat.unref();

    void (async () => {
      try {
        for await (const item of source) {
          if (closed) break;
          write(`data: ${JSON.stringify(opts.redact(item))}\n\n`);
        }
      } catch {
        // a failing source ends its stream; the source reports its own failure
      } finally {
        clearInterval(heartbeat);
        if (!closed) {
          closed = true;
          res.end();
        }
        finish();
      }
    })();
  });
}
