import { EventStream, type EventStreamMessage, type H3Event } from 'h3';

/**
 * The only SSE writer, on h3's EventStream. Each item becomes exactly one `data: <json>` line and
 * a blank line; the only other thing a stream ever carries is a `: heartbeat` comment after
 * `heartbeatMs` of silence, so proxies keep it open. A client that goes away ends our reading of
 * the source; what that means for the source is the source's business (a chat turn goes on and
 * still lands in history).
 *
 * The response head goes out at once, before the first event: a queued turn's client and a quiet
 * event feed's EventSource see the response open. (No opening comment: a client that splits the
 * body on blank lines and parses each block as JSON must read only events.) Items that arrive
 * together (one read of the engine's output often holds several) leave in one write.
 */
export interface StreamOptions {
  heartbeatMs: number;
  /** Applied to each item before it is written (RouteTable.redact: no secret value leaves). */
  redact: <T>(value: T) => T;
  onClientGone?: () => void;
  /** Called with a promise that settles once the stream has written its last event. */
  track?: (finished: Promise<void>) => void;
  /** A last `data:` line written as it is (not JSON) once the source ended: OpenAI's `[DONE]`. */
  closing?: string;
}

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'private, no-cache, no-store, no-transform, must-revalidate, max-age=0',
  // nginx and similar proxies buffer responses unless told not to.
  'x-accel-buffering': 'no',
};

export function streamJson(event: H3Event, source: AsyncIterable<unknown>, opts: StreamOptions): EventStream {
  const stream = new EventStream(event);
  event.res.statusText = 'OK'; // the status line's reason phrase (http.ts reasonPhrase)
  // Served over HTTP/1.1 only (listen.ts): the node response is a ServerResponse.
  const nodeRes = event.runtime?.node?.res as import('node:http').ServerResponse | undefined;
  let ended = false;
  let gone = false;
  stream.onClosed(() => {
    if (ended || gone) return;
    gone = true;
    opts.onClientGone?.();
  });
  // Finished once the response itself has closed: its last bytes are with the socket.
  const responseClosed = nodeRes ? new Promise<void>((resolve) => nodeRes.once('close', () => resolve())) : Promise.resolve();
  let sourceDone!: () => void;
  const sourceEnded = new Promise<void>((resolve) => {
    sourceDone = resolve;
  });
  opts.track?.(sourceEnded.then(() => responseClosed));
  if (nodeRes) sendHeadNow(nodeRes);

  let lastWrite = Date.now();
  const heartbeat = setInterval(
    () => {
      if (!gone && !ended && Date.now() - lastWrite >= opts.heartbeatMs) {
        lastWrite = Date.now();
        void stream.pushComment('heartbeat');
      }
    },
    Math.max(10, Math.floor(opts.heartbeatMs / 3)),
  );
  heartbeat.unref();

  let batch: EventStreamMessage[] = [];
  let flushing: NodeJS.Immediate | undefined;
  const flush = () => {
    flushing = undefined;
    if (batch.length === 0 || gone) return;
    const out = batch;
    batch = [];
    lastWrite = Date.now();
    void stream.push(out);
  };

  void (async () => {
    try {
      for await (const item of source) {
        if (gone) break;
        batch.push({ data: JSON.stringify(opts.redact(item)) });
        flushing ??= setImmediate(flush);
      }
    } catch {
      // a failing source ends its stream; the source reports its own failure
    } finally {
      clearInterval(heartbeat);
      if (flushing) clearImmediate(flushing);
      if (opts.closing !== undefined) batch.push({ data: opts.closing });
      flush();
      ended = true;
      await stream.close();
      sourceDone();
    }
  })();
  return stream;
}

// --- internal ---

/**
 * h3 hands the stream to the node response (writeHead) once the handler has returned, through
 * promise callbacks only, but Node sends a head only with the first body bytes. The first event
 * of a queued turn can be minutes away, so the head is flushed as soon as it exists: on the next
 * tick, which runs once the promise callbacks queued now (h3's and srvx's) have run, before Node
 * reads the next request. Not on the next turn of the loop: a burst of requests read in one
 * turn would have every queued head wait for all of them to be handled (measured: 3-4x later).
 * Should the head not exist by then, it is flushed on the next turn of the loop.
 */
function sendHeadNow(res: import('node:http').ServerResponse): void {
  const flush = (again: boolean) => {
    if (res.destroyed || res.writableEnded) return;
    // (headersSent is already true once the head exists, sent or not; flushing a sent one writes nothing.)
    if (hasHead(res)) res.flushHeaders();
    else if (again) setImmediate(flush, false);
  };
  process.nextTick(flush, true);
}

/**
 * True once writeHead has run: the head Node will send exists (Node keeps it in `_header`, as it
 * has since 0.x; without it flushHeaders would send a default head instead of the stream's).
 */
function hasHead(res: import('node:http').ServerResponse): boolean {
  return typeof (res as unknown as { _header?: unknown })._header === 'string';
}
