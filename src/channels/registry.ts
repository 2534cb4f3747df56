import type { z } from 'zod';
import { dingtalk } from './dingtalk/index.js';
import { discord } from './discord/index.js';
import { lark } from './lark/index.js';
import { slack } from './slack/index.js';
import { telegram } from './telegram/index.js';
import type { ChannelDefinition } from './types.js';
import { wecom } from './wecom/index.js';

/** The one table of built-in channels: key → definition. The only place channel keys meet. */
export const channelDefinitions: Readonly<Record<string, ChannelDefinition>> = Object.fromEntries(
  [lark, dingtalk, wecom, slack, telegram, discord].map((d) => [d.name, d as unknown as ChannelDefinition]),
);

export function channelOptionSchemas(): Record<string, z.ZodType<Record<string, unknown>>> {
  return Object.fromEntries(Object.entries(channelDefinitions).map(([k, d]) => [k, d.options]));
}
