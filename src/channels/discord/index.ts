import { z } from 'zod';
import { defineChannel } from '../types.js';
import { baseUrl, required } from '../options.js';

/** channel_f: Discord over the gateway. `apiUrl` is the REST base; the gateway URL is discovered from it. */
export const discord = defineChannel({
  name: 'channel_f',
  title: 'Discord',
  sdkPackage: 'discord.js',
  options: z.strictObject({
    botToken: required('the bot token'),
    botName: z.string().min(1).optional(),
    apiUrl: baseUrl().transform((u) => u?.replace(/\/+$/, '')),
  }),
  create: async (opts, deps) => (await import('./adapter.js')).createDiscordAdapter(opts, deps),
});
