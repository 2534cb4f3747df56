import type { H3Event } from 'h3';

/**
 * The only SSE writer. Each item becomes exactly one `data: <json>` line and a blank line; the
 * only other thing a stream ever carries is a `: heartbeat` comment after `heartbeatMs` of
 * silence, so proxies keep it open. A client that goes away ends our reading of the source;
 * what that means for the source is the source's business (a chat turn goes on and still lands
 * in history).
 *
 * The response headers go out at once, without a body line: Node sends them only with the first
 * body bytes, so the stream starts with an empty chunk (Node writes the headers for it and
 * nothing else). A queued turn's client and a quiet event feed's EventSource see the response
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

export function streamJson(event: H3Event, source: AsyncIterable<unknown>, opts: StreamOptions): Response {
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  let lastWrite = Date.now();
  const write = (text: string) => {
    if (closed) return;
    lastWrite = Date.now();
    try {
      controller.enqueue(encoder.encode(text));
    } catch {
      closed = true; // the client went away mid-write
    }
  };
  const clientGone = () => {
    if (closed) return;
    closed = true;
    opts.onClientGone?.();
  };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      c.enqueue(new Uint8Array(0)); // flushes the headers; no body bytes
    },
    cancel: clientGone,
  });

  const heartbeat = setInterval(
    () => {
      if (!closed && Date.now() - lastWrite >= opts.heartbeatMs) write(': heartbeat\n\n');
    },
    Math.max(10, Math.floor(opts.heartbeatMs / 3)),
  );
  heartbeat.unref();

  const finished = (async () => {
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
        try {
          controller.close();
        } catch {
          // already cancelled
        }
      }
    }
  })();
  opts.track?.(finished);
  const headers = new Headers(SSE_HEADERS);
  if (event.req.headers.get('connection') === 'keep-alive') headers.set('connection', 'keep-alive');
  return new Response(body, { status: 200, headers });
}
