import { z } from 'zod';
import { defineChannel } from '../types.js';
import { baseUrl, required } from '../options.js';

/** channel_d: Slack in Socket Mode. `apiUrl` is the Web API base (the socket URL is discovered from it). */
export const slack = defineChannel({
  name: 'channel_d',
  title: 'Slack',
  sdkPackage: '@slack/bolt',
  options: z.strictObject({
    botToken: required('the bot token, xoxb-…'),
    appToken: required('the app-level token for Socket Mode, xapp-…'),
    apiUrl: baseUrl(),
  }),
  create: async (opts, deps) => (await import('./adapter.js')).createSlackAdapter(opts, deps),
});
