import { z } from 'zod';
import { defineChannel } from '../types.js';
import { baseUrl, flag, required } from '../options.js';

/** channel_e: Telegram with long polling. `apiRoot` names a Bot API server (a local one, or a test server). */
export const telegram = defineChannel({
  name: 'channel_e',
  title: 'Telegram',
  sdkPackage: 'grammy',
  options: z.strictObject({
    botToken: required('the bot token from BotFather'),
    // grammy throws on a trailing slash; accept one and drop it.
    apiRoot: baseUrl().transform((u) => u?.replace(/\/+$/, '')),
    // `streaming` replies in private chats as drafts (sendMessageDraft); false: by edits, as in groups.
    drafts: flag().optional(),
  }),
  create: async (opts, deps) => (await import('./adapter.js')).createTelegramAdapter(opts, deps),
});
