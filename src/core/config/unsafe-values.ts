/**
 * Values that can never be valid anywhere in our input, found in one pass over the raw tree
 * (service.yaml as read, a request body as parsed) before any schema, merge or resolution sees
 * it:
 * - a NUL character in a string or a key: no program can receive it in argv or env, and Node
 *   refuses to spawn with it;
 * - `__proto__`, `constructor` or `prototype` as a key: none of them is a setting of ours, and
 *   merging such a key into an object changes that object's prototype.
 * The walk uses its own stack, so any depth is safe; messages name the path, never the value
 * (it may be a secret).
 */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export const NUL_MESSAGE = 'must not contain a NUL character (U+0000): no program can receive it';

export interface UnsafeValue {
  path: Array<string | number>;
  message: string;
}

export function findUnsafeValues(tree: unknown, limit = 20): UnsafeValue[] {
  const found: UnsafeValue[] = [];
  const stack: Array<{ node: unknown; path: Array<string | number> }> = [{ node: tree, path: [] }];
  while (stack.length > 0 && found.length < limit) {
    const { node, path } = stack.pop() as { node: unknown; path: Array<string | number> };
    if (typeof node === 'string') {
      if (node.includes('\0')) found.push({ path, message: NUL_MESSAGE });
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push({ node: node[i], path: [...path, i] });
    } else if (node !== null && typeof node === 'object') {
      const entries = Object.entries(node);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, value] = entries[i] as [string, unknown];
        if (FORBIDDEN_KEYS.has(key)) found.push({ path, message: `${JSON.stringify(key)} is not allowed as a key` });
        else if (key.includes('\0')) found.push({ path, message: `key ${JSON.stringify(key)} ${NUL_MESSAGE}` });
        else stack.push({ node: value, path: [...path, key] });
      }
    }
  }
  return found;
}
