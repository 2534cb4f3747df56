import { z } from 'zod';
import { defineChannel } from '../types.js';
import { baseUrl, required, seconds } from '../options.js';

/** channel_a: Feishu / Lark over the SDK's long connection. `domain` also names the Lark international domain or a test server. */
export const lark = defineChannel({
  name: 'channel_a',
  title: 'Feishu / Lark',
  sdkPackage: '@larksuiteoapi/node-sdk',
  options: z.strictObject({
    appId: required('the app id, cli_…'),
    appSecret: required('the app secret'),
    domain: baseUrl(),
    pingTimeout: seconds().optional(),
  }),
  create: async (opts, deps) => (await import('./adapter.js')).createLarkAdapter(opts, deps),
});
