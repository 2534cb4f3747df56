/**
 * What one service.yaml may hold (docs/api.md, "Limits"; README, "Configuration"). Far past any
 * real assistant (our templates are 1-3 KB), and low enough that reading, validating and
 * rewriting the largest allowed file stays cheap: every PATCH re-validates and rewrites the whole
 * file, and without bounds a list of 5,000 boundaries made one change block the gateway for
 * seconds (issue 36). The per-field bounds live in the schema (schema.ts), so a file and a PATCH
 * body get the same message naming the field; the file's size and nesting are checked here.
 */
export const CONFIG_LIMITS = {
  /** The whole file, in bytes (1 MiB). */
  fileBytes: 1024 * 1024,
  /** Levels of nesting, counted as in request bodies (the file's mapping is level 1). */
  depth: 32,
  /** Characters in any string setting (a system prompt, a task's prompt, a URL). */
  text: 100_000,
  tasks: 1_000,
  boundaries: 100,
  /** Items of any other list: permissions paths and commands, MCP server arguments. */
  listItems: 1_000,
  /** Entries of access.allow, access.chats, access.admins (one per person or chat). */
  accessEntries: 10_000,
  mcpServers: 100,
  /** Entries of an MCP server's env or headers. */
  mapEntries: 1_000,
  /** A PATCH /api/config body, in bytes: twice the file, as JSON is wordier than YAML. */
  patchBodyBytes: 2 * 1024 * 1024,
} as const;

/** The problem line for a file over the size limit (`<path>: <what>`, as every config problem), or undefined. */
export function fileSizeProblem(text: string, when: 'is' | 'would be'): string | undefined {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= CONFIG_LIMITS.fileBytes) return undefined;
  return `(root): the file ${when} ${bytes.toLocaleString('en-US')} bytes; at most ${CONFIG_LIMITS.fileBytes.toLocaleString('en-US')} bytes (1 MiB)`;
}

/**
 * The first mapping or list nested deeper than the limit, with its path, or undefined. Our own
 * settings are at most 4 levels down; only `x-` extensions and custom channel blocks go further.
 * Its own stack, so any depth is safe to walk.
 */
export function findTooDeep(tree: unknown, limit: number = CONFIG_LIMITS.depth): { path: Array<string | number>; message: string } | undefined {
  const stack: Array<{ node: unknown; path: Array<string | number> }> = [{ node: tree, path: [] }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const { node, path } = next;
    if (node === null || typeof node !== 'object') continue;
    if (path.length >= limit) return { path, message: `nested deeper than ${limit} levels` };
    const entries: Array<[string | number, unknown]> = Array.isArray(node) ? node.map((v, i) => [i, v]) : Object.entries(node);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, value] = entries[i] as [string | number, unknown];
      if (value !== null && typeof value === 'object') stack.push({ node: value, path: [...path, key] });
    }
  }
  return undefined;
}
