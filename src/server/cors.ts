import type { CorsOptions } from 'h3';

/**
 * CORS, through h3's handleCors: any origin may call the API (the bearer token is what protects
 * it, and a page on another origin cannot know it), preflights are answered without the token
 * and cached for 10 minutes, and scripts may read WWW-Authenticate. CORS_HEADERS are what every
 * answer carries, for the answers made before the app (the /health fast path).
 */
export const CORS_OPTIONS: CorsOptions = {
  origin: '*',
  methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
  // X-Session-Key: the session of an OpenAI-compatible request (routes/openai.ts), sent and answered.
  allowHeaders: ['Content-Type', 'Authorization', 'X-Session-Key'],
  exposeHeaders: ['WWW-Authenticate', 'X-Session-Key'],
  maxAge: '600',
};

export const CORS_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'WWW-Authenticate,X-Session-Key',
};
