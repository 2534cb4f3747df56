import { STATUS_CODES } from 'node:http';

/** JSON responses and the error type routes throw; one shape for every error: `{error, ...}`. */
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

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });
}

/** One HTTP log line: `404 Not Found GET /x: why`. The logger escapes what the client controls. */
export function formatHttpLine(status: number, method: string, path: string, detail?: string): string {
  const reason = STATUS_CODES[status];
  return `${status}${reason ? ` ${reason}` : ''} ${method} ${path}${detail ? `: ${detail}` : ''}`;
}
