import type { Logger } from '../../core/logger.js';

/** The logger shape @larksuiteoapi/node-sdk accepts (its LoggerProxy passes the arguments as one array). */
export interface LarkSdkLogger {
  error(...msg: unknown[]): void;
  warn(...msg: unknown[]): void;
  info(...msg: unknown[]): void;
  debug(...msg: unknown[]): void;
  trace(...msg: unknown[]): void;
}

/**
 * A logger for the SDK that never lets a credential through. `client.request()` logs the whole
 * axios error, whose config carries `Authorization: Bearer t-…` (and, for the token call, the app
 * secret); event payloads at debug level carry message text. So: errors become one line with
 * secrets masked, warnings go to debug, everything else is dropped.
 */
export function createLarkSdkLogger(log: () => Logger): LarkSdkLogger {
  const line = (args: unknown[]) => redactLarkSecrets(args.flat(2).map(formatArg).join(' '));
  return {
    error: (...a) => log().warn(`sdk: ${line(a)}`),
    warn: (...a) => log().debug(`sdk: ${line(a)}`),
    info: () => undefined,
    debug: () => undefined,
    trace: () => undefined,
  };
}

/** Masks bearer tokens, tenant/app tokens and secret-bearing JSON fields. */
export function redactLarkSecrets(text: string): string {
  return text
    .replace(/(Bearer\s+)[\w.~+/=-]+/gi, '$1***')
    .replace(/\b([ta]-)[A-Za-z0-9._-]{8,}/g, '$1***')
    .replace(/("?(?:app_secret|AppSecret|app_access_token|tenant_access_token|ClientAssertion|authorization)"?\s*[:=]\s*"?)[^",}\s]+/gi, '$1***');
}

// --- internal ---

/** An axios error keeps only method, URL, status and the Lark code/msg: never its config or headers. */
function formatArg(a: unknown): string {
  if (typeof a === 'string') return a;
  if (a instanceof Error) {
    const e = a as Error & { config?: { method?: string; url?: string }; response?: { status?: number; data?: unknown } };
    const where = e.config?.url ? ` [${(e.config.method ?? '').toUpperCase()} ${e.config.url.split('?')[0]}]` : '';
    const body = e.response ? ` HTTP ${e.response.status ?? '?'} ${safeJson(e.response.data)}` : '';
    return `${e.message}${where}${body}`;
  }
  return safeJson(a);
}

function safeJson(v: unknown): string {
  try {
    const s = JSON.stringify(v, (k, val: unknown) => {
      if (/^(headers|authorization|request)$/i.test(k)) return undefined;
      // a request config keeps where it went, not what it carried (the token call's body holds the secret)
      if (k === 'config' && val && typeof val === 'object') return { method: (val as { method?: unknown }).method, url: (val as { url?: unknown }).url };
      return val;
    });
    return s === undefined ? String(v) : s.length > 2000 ? `${s.slice(0, 2000)}…` : s;
  } catch {
    return String(v);
  }
}
