import type { IncomingMessage } from 'node:http';

/**
 * CORS: any origin may call the API (the bearer token is what protects it, and a page on another
 * origin cannot know it), preflights are answered without the token and cached for 10 minutes,
 * and scripts may read WWW-Authenticate. The headers of every answer and of a preflight's.
 */
export const CORS_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'WWW-Authenticate',
};

export const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET,POST,PATCH,DELETE,OPTIONS',
  'access-control-allow-headers': 'Content-Type,Authorization',
  'access-control-max-age': '600',
  vary: 'access-control-request-headers',
};

/** A browser's preflight: OPTIONS with an Origin and the method it wants to use. */
export function isPreflight(req: IncomingMessage): boolean {
  return req.method === 'OPTIONS' && !!req.headers.origin && !!req.headers['access-control-request-method'];
}
