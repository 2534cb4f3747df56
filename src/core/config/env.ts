/**
 * `${VAR}` placeholders in string values, resolved from the environment at load time.
 * The raw file is never rewritten with resolved values; write-back works on the YAML document.
 */
const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export interface MissingVariable {
  /** YAML path of the field, e.g. ['channels', 'channel_d', 'botToken']. */
  path: Array<string | number>;
  variable: string;
}

export interface ResolvedEnv<T> {
  value: T;
  missing: MissingVariable[];
  /** Dotted paths whose value came (wholly or partly) from a placeholder. */
  placeholderPaths: Set<string>;
  /** Every value a placeholder was replaced with: masked wherever it would be shown (secrets.ts). */
  substituted: Set<string>;
}

/** One test per string of every load and PATCH: no RegExp made per call, and most strings hold no `${`. */
const HAS_PLACEHOLDER = new RegExp(PLACEHOLDER.source);

export function hasPlaceholder(value: string): boolean {
  return value.includes('${') && HAS_PLACEHOLDER.test(value);
}

/** The variable names a string refers to. */
export function placeholderNames(value: string): string[] {
  if (!value.includes('${')) return [];
  return [...value.matchAll(new RegExp(PLACEHOLDER.source, 'g'))].map((m) => m[1] as string);
}

/** Replace placeholders in every string of a plain JSON-like tree; unknown variables are reported, left empty. */
export function resolvePlaceholders<T>(tree: T, env: NodeJS.ProcessEnv): ResolvedEnv<T> {
  const missing: MissingVariable[] = [];
  const placeholderPaths = new Set<string>();
  const substituted = new Set<string>();

  const walk = (node: unknown, path: Array<string | number>): unknown => {
    if (typeof node === 'string') {
      if (!hasPlaceholder(node)) return node;
      placeholderPaths.add(path.join('.'));
      return node.replace(PLACEHOLDER, (_m, name: string) => {
        const v = env[name];
        if (v === undefined || v === '') {
          missing.push({ path, variable: name });
          return '';
        }
        substituted.add(v);
        return v;
      });
    }
    if (Array.isArray(node)) return node.map((item, i) => walk(item, [...path, i]));
    if (node !== null && typeof node === 'object') {
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, [...path, k])]));
    }
    return node;
  };

  return { value: walk(tree, []) as T, missing, placeholderPaths, substituted };
}

export function formatMissing(m: MissingVariable): string {
  return `${m.path.join('.')}: environment variable ${m.variable} is not set`;
}
