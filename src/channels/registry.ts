import { z } from 'zod';
import { defineChannel, type ChannelDefinition } from './types.js';
import { baseUrl, required, seconds } from './options.js';

/**
 * The one table of built-in channels: key → definition. The only place channel keys are named.
 * Base-URL fields default to the platform's own servers; they exist for self-hosted servers and tests.
 */
export const channelDefinitions: Readonly<Record<string, ChannelDefinition>> = {
  channel_a: defineChannel({
    name: 'channel_a',
    title: 'Feishu / Lark',
    sdkPackage: '@larksuiteoapi/node-sdk',
    options: z.strictObject({
      appId: required('the app id, cli_…'),
      appSecret: required('the app secret'),
      domain: baseUrl(),
      pingTimeout: seconds().optional(),
    }),
  }),
  channel_b: defineChannel({
    name: 'channel_b',
    title: 'DingTalk',
    sdkPackage: 'dingtalk-stream',
    options: z.strictObject({
      clientId: required('the app key / client id'),
      clientSecret: required('the app secret / client secret'),
      apiBaseUrl: baseUrl(),
    }),
  }),
  channel_c: defineChannel({
    name: 'channel_c',
    title: 'WeCom AI bot',
    sdkPackage: '@wecom/aibot-node-sdk',
    options: z.strictObject({
      botId: required('the AI bot id'),
      secret: required('the AI bot secret'),
      websocketUrl: baseUrl(),
    }),
  }),
  channel_d: defineChannel({
    name: 'channel_d',
    title: 'Slack',
    sdkPackage: '@slack/bolt',
    options: z.strictObject({
      botToken: required('the bot token, xoxb-…'),
      appToken: required('the app-level token for Socket Mode, xapp-…'),
      apiUrl: baseUrl(),
    }),
  }),
  channel_e: defineChannel({
    name: 'channel_e',
    title: 'Telegram',
    sdkPackage: 'grammy',
    options: z.strictObject({
      botToken: required('the bot token from BotFather'),
      apiRoot: baseUrl(),
    }),
  }),
  channel_f: defineChannel({
    name: 'channel_f',
    title: 'Discord',
    sdkPackage: 'discord.js',
    options: z.strictObject({
      botToken: required('the bot token'),
      botName: z.string().min(1).optional(),
      apiUrl: baseUrl(),
    }),
  }),
};

export const channelNames = Object.keys(channelDefinitions);

export function channelOptionSchemas(): Record<string, z.ZodType<Record<string, unknown>>> {
  return Object.fromEntries(Object.entries(channelDefinitions).map(([k, d]) => [k, d.options]));
}
