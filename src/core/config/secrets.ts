/**
 * Which configuration values are secrets. One rule for every place that shows or stores config:
 * error messages, /api/status, the PATCH response, logs.
 */
const SECRET_KEY = /(token|secret|password|passwd|apikey|api_key|credential|privatekey)/i;
/** Everything under these keys is treated as secret (MCP env and headers usually carry credentials). */
const SECRET_CONTAINERS = new Set(['env', 'headers']);

export const MASK = '********';

export function isSecretPath(path: ReadonlyArray<string | number>): boolean {
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
