import { STATUS_CODES } from 'node:http';
import { getRouterParam, type H3Event, HTTPError, HTTPResponse } from 'h3';

/**
 * The API's HTTP vocabulary on top of h3: the error routes throw (h3's HTTPError, carrying our
 * `{error, ...}` body in `data`), a JSON answer with a status, and a route parameter decoded the
 * way every route expects it.
 */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** h3's error with what our log line says of it, when that is not the message the client reads. */
export class ApiError extends HTTPError {
  readonly logDetail: string | undefined;
  constructor(status: number, message: string, extra: Record<string, unknown>, headers: Record<string, string>, logDetail?: string) {
    super({ status, message, data: { error: message, ...extra }, headers });
    this.logDetail = logDetail;
  }
}

/** Every error the API answers has one shape: `{error: message, ...extra}` (app.ts renders it). */
export function httpError(
  status: number,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  logDetail?: string,
): HTTPError {
  return new ApiError(status, message, extra, headers, logDetail);
}

/** The `{error, ...}` body an HTTPError carries (one made by httpError, or h3's own). */
export function errorBody(err: HTTPError): Record<string, unknown> {
  const data = err.data;
  if (data && typeof data === 'object' && typeof (data as { error?: unknown }).error === 'string') return data as Record<string, unknown>;
  return { error: err.message };
}

/** JSON with a status other than 200, or with headers of its own. */
export function jsonReply(status: number, body: unknown, headers: Record<string, string> = {}): HTTPResponse {
  const text: string | undefined = JSON.stringify(body);
  // Counted here, not by srvx: a HEAD answer (its body left out by h3) carries it too.
  const length: Record<string, string> = text === undefined ? {} : { 'content-length': String(Buffer.byteLength(text)) };
  return new HTTPResponse(text, { status, statusText: reasonPhrase(status), headers: { 'content-type': JSON_TYPE, ...headers, ...length } });
}

/**
 * The status line's reason phrase. srvx writes the response's statusText as it is, and a web
 * response's is '' unless given: without this the wire says `HTTP/1.1 404 ` instead of `404 Not Found`.
 */
export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? '';
}

/** True for a JSON reply made by jsonReply (its body is re-read when secrets are masked). */
export function isJsonReply(value: unknown): value is HTTPResponse & { body: string } {
  return value instanceof HTTPResponse && typeof value.body === 'string' && (value.headers.get('content-type') ?? '').includes('application/json');
}

/**
 * A route parameter (`:id`) decoded: '' when the route has none of that name, undefined when its
 * percent-encoding is broken (`%zz`), which each route answers in its own terms.
 */
export function routeParam(event: H3Event, name: string): string | undefined {
  try {
    return decodeURIComponent(getRouterParam(event, name) ?? '');
  } catch {
    return undefined;
  }
}

/** One HTTP log line: `404 Not Found GET /x: why`. The logger escapes what the client controls. */
export function formatHttpLine(status: number, method: string, path: string, detail?: string): string {
  const reason = STATUS_CODES[status];
  return `${status}${reason ? ` ${reason}` : ''} ${method} ${path}${detail ? `: ${detail}` : ''}`;
}
