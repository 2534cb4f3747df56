import { afterEach } from 'vitest';
import type { ChannelRuntime } from '../../src/channels/channel-runtime.js';
import { createLogger } from '../../src/core/logger.js';
import type { Clock } from '../../src/core/scheduler/clock.js';
import { launchGateway } from '../../src/gateway.js';
import type { FakeOutbound, FakePlatform } from '../fakes/platforms/types.js';
import { startFakeLark } from '../fakes/platforms/channel-a-lark.js';
import { startFakeDingtalk } from '../fakes/platforms/channel-b-dingtalk.js';
import { startFakeWecom } from '../fakes/platforms/channel-c-wecom.js';
import { startFakeSlack } from '../fakes/platforms/channel-d-slack.js';
import { startFakeTelegram } from '../fakes/platforms/channel-e-telegram.js';
import { startFakeDiscord } from '../fakes/platforms/channel-f-discord.js';
import { type TestAssistant, writeTestAssistant } from './assistant.js';
import { TEST_TOKEN } from './server.js';
import { testdir } from './testdir.js';
import { HANG_MS, until } from './wait.js';

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
  /** The fake models incoming images. */
  images: boolean;
  /** Files both ways (documents in, uploads out): the adapter has downloadFile and sendFile. */
  files: boolean;
  /** The largest upload the platform takes from a bot, in bytes (files: true). */
  maxUpload?: number;
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
    files: true,
    maxUpload: 30 * 1024 * 1024,
  },
  channel_b: {
    key: 'channel_b',
    start: () => startFakeDingtalk(),
    users: ['staff-alice', 'staff-bob', 'staff-carol'],
    group: () => 'cidGroupOne==',
    deliversUnmentioned: false,
    botSenders: false,
    longChars: 16_000,
    images: true,
    files: true,
    maxUpload: 20 * 1024 * 1024,
  },
  channel_c: {
    key: 'channel_c',
    start: () => startFakeWecom(),
    users: ['alice', 'bob', 'carol'],
    group: () => 'wrgroupone',
    deliversUnmentioned: false,
    botSenders: false,
    longChars: 45_000,
    images: true,
    files: true,
    maxUpload: 20 * 1024 * 1024,
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
    files: true,
    maxUpload: 1024 * 1024 * 1024,
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
    files: true,
    maxUpload: 50 * 1024 * 1024,
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
    files: true,
    maxUpload: 10 * 1024 * 1024,
  },
};

export interface ChannelGateway extends Omit<TestAssistant, 'tasks'> {
  channels: ChannelRuntime;
  url: string;
  api(pathname: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  /** Messages the channels have handed to the bridge so far (the hub's debug line for each). */
  takenIn(): number;
  /**
   * Resolves once the channels have handed `count` messages to the bridge in all and the bridge has
   * processed every message it took: the positive signal before checking that a message had no effect.
   */
  processed(count: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A gateway with one channel on its fake platform, for one test: returns the function that starts
 * both (`base` YAML first, then the test's own), and stops them after each test, the gateway first.
 */
export function usePlatformGateway(spec: PlatformSpec, base = ''): (yaml?: string) => Promise<{ fake: FakePlatform; gw: ChannelGateway }> {
  let fake: FakePlatform | undefined;
  let gw: ChannelGateway | undefined;
  afterEach(async () => {
    await gw?.stop();
    await fake?.close();
    gw = undefined;
    fake = undefined;
  });
  return async (yaml = '') => {
    fake = await spec.start();
    gw = await startChannelGateway({ [spec.key]: fake.channelConfig }, `${base}${yaml}`);
    await fake.waitForConnection(HANG_MS);
    return { fake, gw };
  };
}

export const OPEN_ACCESS = 'access: { dm: open, groups: open }\n';

/**
 * The real gateway (its composition root) with the given channel blocks (from the fakes' channelConfig), a stand-in engine, a free port.
 * Unless `yaml` has an `access:` block, access is open (OPEN_ACCESS). With `clock`, scheduled tasks run on it (a fake clock the test moves).
 */
export async function startChannelGateway(
  channels: Record<string, Record<string, unknown>>,
  yaml = '',
  files: Record<string, string> = {},
  env: NodeJS.ProcessEnv = {},
  opts: { clock?: Clock } = {},
): Promise<ChannelGateway> {
  const access = /^access:/m.test(yaml) ? '' : OPEN_ACCESS;
  // JSON is YAML: the channel blocks go in as one flow mapping.
  const { dir, standIn } = writeTestAssistant({ yaml: `channels: ${JSON.stringify(channels)}\n${access}${yaml}`, files });
  let takenIn = 0;
  // Only the hub's line for each message it hands to the bridge is kept (counted); the rest is dropped.
  const log = createLogger({ level: 'debug', write: (line) => void (TAKEN_IN.test(line) && takenIn++) });
  const gateway = await launchGateway({
    dir,
    port: 0,
    token: TEST_TOKEN,
    log,
    env: {
      ...process.env,
      ...standIn.env,
      SERVICE_FLEET_DIR: testdir({}, 'service-fleet-'),
      SERVICE_CHANNEL_RETRY_MS: '400',
      SERVICE_CHANNEL_CONNECT_TIMEOUT_MS: '8000',
      ...env,
    },
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  await gateway.channels.settled();
  return {
    ...gateway.directory,
    standIn,
    channels: gateway.channels,
    url: gateway.url,
    api(pathname, init = {}) {
      const { json, ...rest } = init;
      const headers = new Headers(rest.headers);
      headers.set('authorization', `Bearer ${TEST_TOKEN}`);
      if (json !== undefined) headers.set('content-type', 'application/json');
      return fetch(`${gateway.url}${pathname}`, {
        ...rest,
        headers,
        ...(json !== undefined ? { body: JSON.stringify(json), method: rest.method ?? 'POST' } : {}),
      });
    },
    takenIn: () => takenIn,
    async processed(count) {
      await until(() => takenIn >= count, HANG_MS, `the gateway to take in ${count} message(s) (${takenIn} so far)`);
      await gateway.channels.bridge.idle();
    },
    async stop() {
      await gateway.channels.idle();
      await gateway.close(0);
    },
  };
}

/** The hub's debug line for a message it hands to the bridge (src/channels/hub.ts). */
const TAKEN_IN = /\[channels\] debug: [\w-]+: took in message /;

/** Outbound messages that carry reply text (typing frames and empty stream openers excluded). */
export const replies = (fake: FakePlatform, chatId?: string): FakeOutbound[] =>
  fake.outbound.filter((o) => o.kind !== 'typing' && o.text.trim() !== '' && (chatId === undefined || o.chatId === chatId));
