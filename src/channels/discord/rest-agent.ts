import { createRequire } from 'node:module';
import type { RESTOptions } from 'discord.js';

export type RestAgent = NonNullable<RESTOptions['agent']>;

/**
 * The HTTP agent channel_f's REST calls go through, taken from the undici copy @discordjs/rest
 * itself depends on. Without one, discord.js sends through the process-wide undici dispatcher,
 * which belongs to whichever undici copy loaded first: when Slack's socket-mode (undici 7) loads
 * before discord.js (undici 6), that dispatcher refuses the FormData of every file upload with
 * "action is not a function". Resolved from discord.js's own location, so it is the copy
 * @discordjs/rest loads, whatever npm hoisted.
 */
export function createRestAgent(): RestAgent {
  const fromDiscord = createRequire(createRequire(import.meta.url).resolve('discord.js'));
  const fromRest = createRequire(fromDiscord.resolve('@discordjs/rest'));
  const { Agent } = fromRest('undici') as { Agent: new () => RestAgent };
  return new Agent();
}
