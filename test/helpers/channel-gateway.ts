import path from 'node:path';
import { createGatewayChannels, type GatewayChannels } from '../../src/gateway-channels.js';
import { templatesDir } from '../../src/core/paths.js';
import { createServerApp } from '../../src/server/app.js';
import { listenApp, type RunningServer } from '../../src/server/listen.js';
import type { FakeOutbound, FakePlatform } from '../fakes/platforms/types.js';
import { startFakeLark } from '../fakes/platforms/channel-a-lark.js';
import { startFakeDingtalk } from '../fakes/platforms/channel-b-dingtalk.js';
import { startFakeWecom } from '../fakes/platforms/channel-c-wecom.js';
import { startFakeSlack } from '../fakes/platforms/channel-d-slack.js';
import { startFakeTelegram } from '../fakes/platforms/channel-e-telegram.js';
import { startFakeDiscord } from '../fakes/platforms/channel-f-discord.js';
import { createTestAssistant, type TestAssistant } from './assistant.js';
import { TEST_TOKEN } from './server.js';

/** What the generic channel tests need to know about each platform and its fake. */
export interface PlatformSpec {
  key: string;
  start(): Promise<FakePlatform>;
  users: [string, string, string];
  group(fake: FakePlatform): string;
  /** The platform delivers group messages that do not mention the bot (DingTalk and WeCom do not). */
  deliversUnmentioned: boolean;
  /** The fake can send messages from another bot. */
  botSenders: boolean;
  /** Characters of reply that surely need several messages on this platform. */
  longChars: number;
  /** The fake models incoming images (DingTalk's and WeCom's do not). */
  images: boolean;
}

export const PLATFORMS: Record<string, PlatformSpec> = {
  channel_a: {
    key: 'channel_a',
    start: () => startFakeLark(),
    users: ['ou_alice', 'ou_bob', 'ou_carol'],
    group: () => 'oc_group_one',
    deliversUnmentioned: true,
    botSenders: true,
    longChars: 32_000,
    images: true,
  },
  channel_b: {
    key: 'channel_b',
    start: () => startFakeDingtalk(),
    users: ['staff-alice', 'staff-bob', 'staff-carol'],
    group: () => 'cidGroupOne==',
    deliversUnmentioned: false,
    botSenders: false,
    longChars: 16_000,
    images: false,
  },
  channel_c: {
    key: 'channel_c',
    start: () => startFakeWecom(),
    users: ['alice', 'bob', 'carol'],
    group: () => 'wrgroupone',
    deliversUnmentioned: false,
    botSenders: false,
    longChars: 45_000,
    images: false,
  },
  channel_d: {
    key: 'channel_d',
    start: () => startFakeSlack(),
    users: ['U0ALICE', 'U0BOB', 'U0CAROL'],
    group: () => 'C0GROUP',
    deliversUnmentioned: true,
    botSenders: true,
    longChars: 9_000,
    images: true,
  },
  channel_e: {
    key: 'channel_e',
    start: () => startFakeTelegram(),
    users: ['1001', '1002', '1003'],
    group: () => '-1001234567890',
    deliversUnmentioned: true,
    botSenders: true,
    longChars: 9_000,
    images: true,
  },
  channel_f: {
    key: 'channel_f',
    start: () => startFakeDiscord(),
    users: ['100000000000000001', '100000000000000002', '100000000000000003'],
    group: (f) => (f as unknown as { defaultChannelId: string }).defaultChannelId,
    deliversUnmentioned: true,
    botSenders: true,
    longChars: 4_500,
    images: true,
  },
};

export interface ChannelGateway extends TestAssistant {
  channels: GatewayChannels;
  server: RunningServer;
  url: string;
  api(pathname: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  stop(): Promise<void>;
}

/** A gateway with the given channel blocks (from the fakes' channelConfig), a stand-in engine, a real port. */
export async function startChannelGateway(
  channels: Record<string, Record<string, unknown>>,
  yaml = '',
  files: Record<string, string> = {},
): Promise<ChannelGateway> {
  // JSON is YAML: the channel blocks go in as one flow mapping.
  const t = createTestAssistant({ yaml: `channels: ${JSON.stringify(channels)}\n${yaml}`, files });
  const gc = createGatewayChannels(t, t.dir, { SERVICE_CHANNEL_RETRY_MS: '400', SERVICE_CHANNEL_CONNECT_TIMEOUT_MS: '8000' });
  const { app } = createServerApp({
    assistant: t.assistant,
    config: t.config,
    channels: gc.hub,
    activity: t.store,
    token: TEST_TOKEN,
    log: t.log,
    version: '0.0.0-test',
    dashboardDir: path.join(templatesDir(), 'dashboard'),
  });
  const server = await listenApp(app, { host: '127.0.0.1', port: 0 });
  gc.start();
  await gc.hub.settled();
  return {
    ...t,
    channels: gc,
    server,
    url: server.url,
    api(pathname, init = {}) {
      const { json, ...rest } = init;
      const headers = new Headers(rest.headers);
      headers.set('authorization', `Bearer ${TEST_TOKEN}`);
      if (json !== undefined) headers.set('content-type', 'application/json');
      return fetch(`${server.url}${pathname}`, {
        ...rest,
        headers,
        ...(json !== undefined ? { body: JSON.stringify(json), method: rest.method ?? 'POST' } : {}),
      });
    },
    async stop() {
      await gc.bridge.idle();
      await gc.stop();
      await t.assistant.drain(0);
      await server.close();
      t.close();
    },
  };
}

/** Outbound messages that carry reply text (typing frames and empty stream openers excluded). */
export const replies = (fake: FakePlatform, chatId?: string): FakeOutbound[] =>
  fake.outbound.filter((o) => o.kind !== 'typing' && o.text.trim() !== '' && (chatId === undefined || o.chatId === chatId));
