import { z } from 'zod';
import { defineChannel } from '../types.js';
import { baseUrl, required } from '../options.js';

/**
 * channel_b: DingTalk in stream mode. `apiBaseUrl` redirects the gateway connection and the OpenAPI calls,
 * `oapiBaseUrl` the older API (media upload); `approvalCardTemplateId` turns on approval buttons.
 */
export const dingtalk = defineChannel({
  name: 'channel_b',
  title: 'DingTalk',
  sdkPackage: 'dingtalk-stream',
  options: z.strictObject({
    clientId: required('the app key / client id'),
    clientSecret: required('the app secret / client secret'),
    apiBaseUrl: baseUrl(),
    oapiBaseUrl: baseUrl(),
    approvalCardTemplateId: z.string().min(1, 'must not be empty (a card template id from the card builder)').optional(),
  }),
  create: async (opts, deps) => (await import('./adapter.js')).createDingtalkAdapter(opts, deps),
});
