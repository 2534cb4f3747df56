/**
 * Which configuration values are secrets. One rule for every place that shows or stores config:
 * error messages, /api/status, the PATCH response, logs. Two layers:
 * - by key: secret fields are shown as the mask in config views (`maskSecrets`);
 * - by value: every value that came from the environment (a `${VAR}` resolution, a variable whose
 *   name says it is a credential) and every secret field's value is masked wherever it occurs in
 *   anything we return or log, whatever key it sits under (`maskSecretValues`).
 */
const SECRET_KEY = /(token|secret|password|passwd|apikey|api_key|credential|privatekey)/i;
/** Everything under these keys is treated as secret (MCP env and headers usually carry credentials). */
const SECRET_CONTAINERS = new Set(['env', 'headers']);

export const MASK = '********';

/** Secret fields whose key alone does not say so: the store URL carries the database password. */
const SECRET_PATHS = new Set(['store.url']);

export function isSecretPath(path: ReadonlyArray<string | number>): boolean {
  if (SECRET_PATHS.has(path.join('.'))) return true;
  const last = path[path.length - 1];
  if (typeof last === 'string' && SECRET_KEY.test(last)) return true;
  return path.slice(0, -1).some((seg) => typeof seg === 'string' && SECRET_CONTAINERS.has(seg));
}

/**
 * A copy of a config tree with secret values masked. Values that are still `${VAR}` placeholders
 * are shown as written: the placeholder is not the secret.
 */
export function maskSecrets<T>(tree: T, path: Array<string | number> = []): T {
  if (Array.isArray(tree)) return tree.map((v, i) => maskSecrets(v, [...path, i])) as T;
  if (tree !== null && typeof tree === 'object') {
    return Object.fromEntries(Object.entries(tree).map(([k, v]) => [k, maskSecrets(v, [...path, k])])) as T;
  }
  if (typeof tree === 'string' && isSecretPath(path) && !/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(tree)) {
    return (tree === '' ? '' : MASK) as T;
  }
  return tree;
}

/** Every secret string in a resolved config, so logs and responses can be scanned or redacted. */
export function collectSecretValues(tree: unknown, path: Array<string | number> = [], out = new Set<string>()): Set<string> {
  if (Array.isArray(tree)) {
    for (const [i, v] of tree.entries()) collectSecretValues(v, [...path, i], out);
  } else if (tree !== null && typeof tree === 'object') {
    for (const [k, v] of Object.entries(tree)) collectSecretValues(v, [...path, k], out);
  } else if (typeof tree === 'string' && tree.length >= 4 && isSecretPath(path)) out.add(tree);
  return out;
}

/**
 * Whether a config tree (as written, placeholders unresolved) holds a secret in plain text: a
 * secret field whose value is not just a `${VAR}` placeholder. Such a file is written 0600.
 */
export function holdsLiteralSecret(tree: unknown, path: Array<string | number> = []): boolean {
  if (Array.isArray(tree)) return tree.some((v, i) => holdsLiteralSecret(v, [...path, i]));
  if (tree !== null && typeof tree === 'object') return Object.entries(tree).some(([k, v]) => holdsLiteralSecret(v, [...path, k]));
  return typeof tree === 'string' && tree !== '' && isSecretPath(path) && !/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(tree);
}

/**
 * A URL for messages, with its credentials masked in both forms a connection string takes them:
 * `user:password@host` and `?password=…` (any query parameter whose name says it is a secret).
 * The one masking of store URLs (`service doctor`, `service fleet ls`, `service store migrate`,
 * errors).
 */
export function formatSafeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const key of [...u.searchParams.keys()]) if (SECRET_KEY.test(key)) u.searchParams.set(key, '***');
    return u.toString();
  } catch {
    return 'the configured URL (it does not parse)';
  }
}

/**
 * The secret values a URL carries, for masking by value wherever they could appear: the URL as
 * written, and each password (userinfo or a secret query parameter), as written and decoded.
 */
export function collectUrlSecrets(url: string | undefined): string[] {
  if (!url) return [];
  const out = new Set([url]);
  try {
    const u = new URL(url);
    const add = (raw: string) => {
      out.add(raw);
      try {
        out.add(decodeURIComponent(raw));
      } catch {
        // a stray % stays as written
      }
    };
    if (u.password) add(u.password);
    for (const [key, value] of u.searchParams) if (SECRET_KEY.test(key) && value) add(value);
    for (const part of u.search.slice(1).split('&')) {
      const [key = '', raw = ''] = part.split('=');
      if (SECRET_KEY.test(key) && raw) out.add(raw);
    }
  } catch {
    // not a URL: the value as a whole is masked
  }
  return [...out].filter(isMaskableValue);
}

/** Values shorter than this, and plain numbers and booleans (a port, a flag), are not masked by value. */
const MIN_MASKED_LENGTH = 4;

export function isMaskableValue(value: string): boolean {
  return value.length >= MIN_MASKED_LENGTH && !/^(\d+|true|false)$/i.test(value);
}

/**
 * Values of environment variables whose name says they hold a credential (ANTHROPIC_API_KEY,
 * GITHUB_TOKEN...), from 8 characters: shorter ones there are placeholders such as `none`.
 */
export function collectSecretEnvValues(env: NodeJS.ProcessEnv): Set<string> {
  const out = new Set<string>();
  for (const [name, value] of Object.entries(env)) if (value && value.length >= 8 && SECRET_KEY.test(name) && isMaskableValue(value)) out.add(value);
  return out;
}

/**
 * A copy of a JSON-like tree where every occurrence of a secret value, in any string or key, is
 * the mask. Longer values first, so a secret containing another is masked whole.
 */
export function maskSecretValues<T>(tree: T, values: Iterable<string>): T {
  const list = [...new Set(values)].filter(isMaskableValue).sort((a, b) => b.length - a.length);
  if (list.length === 0) return tree;
  const mask = (text: string) => {
    let out = text;
    for (const v of list) if (out.includes(v)) out = out.split(v).join(MASK);
    return out;
  };
  const walk = (node: unknown): unknown => {
    if (typeof node === 'string') return mask(node);
    if (Array.isArray(node)) return node.map(walk);
    if (node !== null && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([k, v]) => [mask(k), walk(v)]));
    return node;
  };
  return walk(tree) as T;
}

/**
 * The effective config with every value that came from a placeholder shown as written (`${VAR}`,
 * `http://h/mcp?key=${KEY}`), the way the file view shows it: what a client sends back is then
 * the placeholder, never the value it resolved to.
 */
export function restorePlaceholders<T>(effective: T, raw: unknown): T {
  const walk = (eff: unknown, r: unknown): unknown => {
    if (typeof r === 'string') return /\$\{[A-Za-z_][A-Za-z0-9_]*\}/.test(r) && eff !== undefined ? r : eff;
    if (Array.isArray(r) && Array.isArray(eff)) return eff.map((v, i) => walk(v, r[i]));
    if (r !== null && typeof r === 'object' && eff !== null && typeof eff === 'object' && !Array.isArray(eff)) {
      const rawMap = r as Record<string, unknown>;
      return Object.fromEntries(Object.entries(eff).map(([k, v]) => [k, Object.hasOwn(rawMap, k) ? walk(v, rawMap[k]) : v]));
    }
    return eff;
  };
  return walk(effective, raw) as T;
}
