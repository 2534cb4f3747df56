import type { McpServerConfig, ServiceConfig } from '../config/schema.js';

/** MCP servers in the `mcpServers` JSON shape shared by Claude Code and the Cursor agent. */
export function toMcpServersJson(mcp: Record<string, McpServerConfig> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(mcp ?? {})) {
    out[name] = 'command' in s ? { command: s.command, args: s.args, env: s.env } : { type: s.type, url: s.url, headers: s.headers };
  }
  return out;
}

/** The prompt with image files referenced by absolute path (engines without an image flag). */
export function promptWithImagePaths(prompt: string, images: readonly string[]): string {
  if (images.length === 0) return prompt;
  const list = images.map((p) => `- ${p}`).join('\n');
  return `${prompt}\n\nAttached image file(s), open them to see what the user sent:\n${list}`;
}

/** `mcp:` in the shape of ACP's session/new: env and headers as name/value lists. */
export function toAcpMcpServers(config: ServiceConfig): unknown[] {
  const pairs = (record: Record<string, string>) => Object.entries(record).map(([name, value]) => ({ name, value }));
  return Object.entries(config.mcp ?? {}).map(([name, s]) =>
    'command' in s ? { name, command: s.command, args: s.args, env: pairs(s.env) } : { type: s.type, name, url: s.url, headers: pairs(s.headers) },
  );
}
