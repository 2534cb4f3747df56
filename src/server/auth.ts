import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import { writeFileAtomic } from '../core/atomic-write.js';

/**
 * The gateway always has a token. Sources in order: --token, SERVICE_TOKEN, gateway.token; with
 * none configured one is generated once, kept in .service/gateway-token (mode 0600) and reused,
 * so a web page on another origin can never drive the agent.
 */
export type TokenSource = 'flag' | 'env' | 'config' | 'stored' | 'generated';

export function resolveGatewayToken(opts: { flag?: string; env: NodeJS.ProcessEnv; configToken?: string; tokenFile: string }): {
  token: string;
  source: TokenSource;
} {
  if (opts.flag) return { token: opts.flag, source: 'flag' };
  if (opts.env.SERVICE_TOKEN) return { token: opts.env.SERVICE_TOKEN, source: 'env' };
  if (opts.configToken) return { token: opts.configToken, source: 'config' };
  try {
    const stored = fs.readFileSync(opts.tokenFile, 'utf8').trim();
    if (stored.length >= 16) {
      fs.chmodSync(opts.tokenFile, 0o600);
      return { token: stored, source: 'stored' };
    }
  } catch {
    // none stored yet
  }
  const token = randomBytes(24).toString('base64url');
  writeFileAtomic(opts.tokenFile, `${token}\n`, { mode: 0o600 });
  return { token, source: 'generated' };
}

/** Constant-time comparison (hashes first, so unequal lengths take the same time too). */
export function tokensMatch(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The bearer token of a request: the Authorization header, or `?token=` where the route allows it. */
export function presentedToken(header: string | undefined, url: URL, allowQuery: boolean): string | undefined {
  const m = header ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
  if (m?.[1]) return m[1].trim();
  if (allowQuery) return url.searchParams.get('token') ?? undefined;
  return undefined;
}

/** Who holds a token: the gateway's own (the owner: every route) or the engine's (send-only, see engineMayCall). */
export type TokenHolder = 'owner' | 'engine';

/** Which token was presented; undefined when it is neither (constant-time comparisons, both always made). */
export function identifyToken(presented: string, tokens: { gateway: string; engine?: string | undefined }): TokenHolder | undefined {
  const owner = tokensMatch(presented, tokens.gateway);
  const engine = tokens.engine !== undefined && tokensMatch(presented, tokens.engine);
  return owner ? 'owner' : engine ? 'engine' : undefined;
}

/**
 * What the engine's own token may call: send a message (POST /api/send), see which channels can
 * send (GET /api/channels: the message-push skill checks first) and fetch a sent file (GET
 * /api/files/…). Everything else (chat, approvals, configuration, access, tasks, status, events)
 * is refused with 403: the agent must never act as the owner, nor answer its own approvals.
 */
export function engineMayCall(method: string, pathname: string): boolean {
  const read = method === 'GET' || method === 'HEAD';
  const path = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
  return (method === 'POST' && path === '/api/send') || (read && path === '/api/channels') || (read && pathname.startsWith('/api/files/'));
}
