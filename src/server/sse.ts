import { createEventStream, type EventStream, type H3Event } from 'h3';

/**
 * The only SSE writer. Each item becomes exactly one `data: <json>` line and a blank line (h3's
 * EventStream does the framing); an idle stream gets a `: heartbeat` comment so proxies keep it
 * open. A client that goes away ends our reading of the source; what that means for the source
 * is the source's business (a chat turn goes on and still lands in history).
 */
export interface StreamOptions {
  heartbeatMs: number;
  /** Applied to each item before it is written (RouteTable.redact: no secret value leaves). */
  redact: <T>(value: T) => T;
  onClientGone?: () => void;
  /** Called with a promise that settles once the stream has written its last event. */
  track?: (finished: Promise<void>) => void;
  /**
   * Write this comment at once. Node sends the response headers only with the first body bytes,
   * so a feed that may stay quiet for a while (GET /api/events) would otherwise leave the
   * client (a browser's EventSource) waiting for `open` until the first event.
   */
  openingComment?: string;
}

export function streamJson(event: H3Event, source: AsyncIterable<unknown>, opts: StreamOptions): EventStream {
  const stream = createEventStream(event);
  let closed = false;
  let lastWrite = Date.now();
  stream.onClosed(() => {
    if (closed) return;
    closed = true;
    opts.onClientGone?.();
  });
  const heartbeat = setInterval(
    () => {
      if (closed || Date.now() - lastWrite < opts.heartbeatMs) return;
      lastWrite = Date.now();
      void stream.pushComment('heartbeat').catch(() => undefined);
    },
    Math.max(10, Math.floor(opts.heartbeatMs / 3)),
  );
  heartbeat.unref();
  if (opts.openingComment) void stream.pushComment(opts.openingComment).catch(() => undefined);

  const finished = (async () => {
    try {
      for await (const item of source) {
        if (closed) break;
        lastWrite = Date.now();
        await stream.push(JSON.stringify(opts.redact(item)));
      }
    } catch {
      // the client went away mid-write
    } finally {
      clearInterval(heartbeat);
      closed = true;
      await stream.close().catch(() => undefined);
    }
  })();
  opts.track?.(finished);
  return stream;
}
