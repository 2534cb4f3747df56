import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { Readable } from 'node:stream';

/**
 * The HTTP vocabulary of the API on plain node:http: the request a route sees, the answer it
 * gives, and the error type routes throw. No web Request/Response: building those costs every
 * request (and Node's fetch implementation behind them about 11 MB resident, loaded on first use).
 */
export interface ApiRequest {
  readonly method: string;
  /** The request's path and query on this server's origin (the path exactly as sent, not decoded). */
  readonly url: URL;
  readonly headers: IncomingHttpHeaders;
  /**
   * A route parameter (`:id`) decoded: '' when the route has none of that name, undefined when
   * its percent-encoding is broken (`%zz`), which each route answers in its own terms.
   */
  param(name: string): string | undefined;
  /** The request itself: its body is read from it (body.ts). */
  readonly raw: IncomingMessage;
  /** One header's value; a repeated header is its values joined with `, `. */
  header(name: string): string | undefined;
}

/** What a route answers with when a plain object (JSON 200) does not say enough. */
export class Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** A stream is piped; a writer owns the response from its head on (SSE). */
  readonly body: string | Buffer | Readable | ((res: ServerResponse) => void) | undefined;

  constructor(status: number, headers: Record<string, string>, body?: Reply['body']) {
    this.status = status;
    this.headers = headers;
    this.body = body;
  }
}

/** One shape for every error: `{error, ...}`. */
export class HttpFailure extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(status: number, error: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(error);
    this.status = status;
    this.body = { error, ...extra };
    this.headers = headers;
  }
}

export const JSON_TYPE = 'application/json; charset=utf-8';

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return new Reply(status, { 'content-type': JSON_TYPE, ...headers }, JSON.stringify(body));
}

/** Write a reply after the headers already set on `res` (CORS); a HEAD answer carries no body (Node drops it). */
export function sendReply(res: ServerResponse, reply: Reply): void {
  const { body } = reply;
  if (typeof body === 'function') {
    for (const [k, v] of Object.entries(reply.headers)) res.setHeader(k, v);
    res.statusCode = reply.status;
    body(res);
    return;
  }
  if (body instanceof Readable) {
    res.writeHead(reply.status, reply.headers);
    body.on('error', () => res.destroy());
    res.on('close', () => body.destroy());
    body.pipe(res);
    return;
  }
  // With the head written first Node cannot count the body itself (it would send it chunked).
  res.writeHead(reply.status, { ...reply.headers, 'content-length': String(body === undefined ? 0 : Buffer.byteLength(body)) });
  res.end(body);
}

/** One HTTP log line: `404 Not Found GET /x: why`. The logger escapes what the client controls. */
export function formatHttpLine(status: number, method: string, path: string, detail?: string): string {
  const reason = STATUS_CODES[status];
  return `${status}${reason ? ` ${reason}` : ''} ${method} ${path}${detail ? `: ${detail}` : ''}`;
}
