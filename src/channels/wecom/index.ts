import { z } from 'zod';
import { defineChannel } from '../types.js';
import { baseUrl, required } from '../options.js';

/** channel_c: WeCom AI bot over its websocket. `websocketUrl` is passed to the SDK's `wsUrl`. */
export const wecom = defineChannel({
  name: 'channel_c',
  title: 'WeCom AI bot',
  sdkPackage: '@wecom/aibot-node-sdk',
  options: z.strictObject({
    botId: required('the AI bot id'),
    secret: required('the AI bot secret'),
    websocketUrl: baseUrl(),
  }),
  create: async (opts, deps) => (await import('./adapter.js')).createWecomAdapter(opts, deps),
});
