import { z } from 'zod';
import { defineChannel } from '../types.js';
import { required, seconds } from '../options.js';

/** The SDK's two domains (its `Domain.Feishu` / `Domain.Lark`), by the names people use for them. */
const NAMED_DOMAINS: Record<string, string> = {
  feishu: 'https://open.feishu.cn',
  lark: 'https://open.larksuite.com',
};
const DOMAIN_ERROR = 'expected feishu, lark or an http(s) URL';

/** channel_a: Feishu / Lark over the SDK's long connection. */
export const lark = defineChannel({
  name: 'channel_a',
  title: 'Feishu / Lark',
  sdkPackage: '@larksuiteoapi/node-sdk',
  options: z.strictObject({
    appId: required('the app id, cli_…'),
    appSecret: required('the app secret'),
    domain: larkDomain().optional(),
    pingTimeout: seconds().optional(),
  }),
  create: async (opts, deps) => (await import('./adapter.js')).createLarkAdapter(opts, deps),
});

// --- internal ---

/**
 * `domain` as users write it: `feishu`, `lark` (any case), or the open platform's base URL (a
 * private deployment, a test server); always a URL without a trailing slash once parsed.
 */
function larkDomain() {
  return z.string({ error: DOMAIN_ERROR }).transform((raw, ctx) => {
    const value = raw.trim();
    const named = NAMED_DOMAINS[value.toLowerCase()];
    if (named) return named;
    if (/^https?:\/\/[^/\s]+/i.test(value) && URL.canParse(value)) return value.replace(/\/+$/, '');
    ctx.addIssue({ code: 'custom', message: DOMAIN_ERROR });
    return z.NEVER;
  });
}
