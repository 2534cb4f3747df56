import type { ServiceConfig } from '../config/schema.js';
import { formatCliCommand } from '../invocation.js';

/**
 * What the gateway says about access when it starts, for an owner who never read the docs: that
 * an old service.yaml without `access:` now gets pairing, and every channel anyone can drive
 * while the engine runs without permission prompts.
 */
export function formatAccessNotices(opts: { raw: Record<string, unknown>; config: ServiceConfig; dir: string }): string[] {
  const { access, skipPermissions } = opts.config;
  const channels = Object.keys(opts.config.channels).filter((key) => opts.config.channels[key] !== undefined);
  if (channels.length === 0) return [];
  const lines: string[] = [];
  if (!('access' in opts.raw)) {
    lines.push(
      `service.yaml has no \`access:\` block, so the channels use the defaults (dm: pairing, groups: pairing): people and groups you have not approved get a pairing code, which you approve with \`${formatCliCommand('access approve <CODE>')}\`. See the Access section of docs/channels.md.`,
    );
  }
  if (!skipPermissions) return lines;
  for (const channel of channels) {
    const open = [
      ...(access.dm === 'open' ? ['access.dm: open'] : []),
      ...(access.groups === 'open' ? ['access.groups: open'] : []),
      ...(access.allow.includes(`${channel}:*`) ? [`access.allow: ${channel}:*`] : []),
    ];
    if (open.length > 0) {
      lines.push(
        `${channel} is open to everyone (${open.join(', ')}) while skipPermissions is true: anyone who can message the bot can make the engine run commands in ${opts.dir}.`,
      );
    }
  }
  return lines;
}
