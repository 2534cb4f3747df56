import { randomBytes } from 'node:crypto';

/**
 * What the engine inherits of the gateway's environment, and how it reaches the gateway.
 *
 * The engine runs the agent's commands, so it never inherits the gateway's credentials: not the
 * admin token (`SERVICE_TOKEN`), not the store's URL (`SERVICE_STORE_URL`, with its password),
 * nor any other variable holding the resolved `gateway.token`, `store.url` or the store's
 * password. Under a gateway it gets `SERVICE_URL` and a token of its own instead, made at start
 * and good only for sending messages and files (server/auth.ts `engineMayCall`), so the
 * message-push skill works whichever way the gateway got its own token (`--token` too).
 */
export interface EngineApiAccess {
  /** The engine's token: random per gateway run, never written anywhere. */
  readonly token: string;
  /** Where the engine reaches the gateway, once it listens (`describe`); undefined before. */
  url(): string | undefined;
  /** The certificate a client must trust to reach it, when it serves HTTPS (SERVICE_CA_FILE). */
  caFile(): string | undefined;
  /** The gateway listens: say where (a wildcard host is reached on the loopback address), and with which certificate. */
  describe(where: { host: string; port: number; tls?: { certFile: string } }): void;
}

/** The parts of the configuration that hold the gateway's own credentials. */
export interface GatewaySecrets {
  gateway: { token?: string | undefined };
  store: { url?: string | undefined };
}

/** Variables that hold the gateway's own credentials: never in an engine's environment. */
export const WITHHELD_VARS: readonly string[] = ['SERVICE_TOKEN', 'SERVICE_STORE_URL'];

export function createEngineApiAccess(): EngineApiAccess {
  const token = randomBytes(24).toString('base64url');
  let url: string | undefined;
  let caFile: string | undefined;
  return {
    token,
    url: () => url,
    caFile: () => caFile,
    describe({ host, port, tls }) {
      const wildcard = host === '' || host === '0.0.0.0' || host === '::';
      const reach = wildcard ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
      url = `${tls ? 'https' : 'http'}://${reach}:${port}`;
      caFile = tls?.certFile;
    },
  };
}

/**
 * The base environment of an engine run: the gateway's, without its credentials (by name and by
 * value, so `store.url: ${DATABASE_URL}` withholds DATABASE_URL too), plus SERVICE_URL and the
 * engine's token when a gateway serves the API.
 */
export function buildEngineEnv(env: NodeJS.ProcessEnv, config: GatewaySecrets, api?: EngineApiAccess): NodeJS.ProcessEnv {
  const secrets = new Set([config.gateway.token, config.store.url, storePassword(config.store.url)].filter((v): v is string => Boolean(v)));
  const out: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) {
    if (WITHHELD_VARS.includes(key) || (value !== undefined && secrets.has(value))) continue;
    out[key] = value;
  }
  const url = api?.url();
  if (api && url) {
    out.SERVICE_URL = url;
    out.SERVICE_TOKEN = api.token;
    // Over HTTPS the gateway's certificate is often self-signed: the skill passes it to curl (--cacert).
    const ca = api.caFile();
    if (ca) out.SERVICE_CA_FILE = ca;
  }
  return out;
}

// --- internal ---

function storePassword(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const parsed = new URL(url);
    return decodeURIComponent(parsed.password) || parsed.searchParams.get('password') || undefined;
  } catch {
    return undefined;
  }
}
