import { createSilentLogger } from '../../src/core/logger.js';
import { type Gateway, startGateway } from '../../src/gateway.js';
import { startFakeLlm, type FakeLlm } from '../fakes/fake-llm.js';
import { startFakeTelegram } from '../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../fakes/platforms/types.js';
import { replies } from './channel-gateway.js';
import { createRealEngineRoot, fakeProviderYaml, type RealEngineRoot } from './real-engine.js';
import { until } from './wait.js';

/**
 * A real engine CLI behind the real gateway, with tool approvals on (`skipPermissions: false`),
 * routed to the scripted LLM and connected to a fake Telegram: one person's chat, where an
 * approval request shows up and `/allow` or `/deny` answers it.
 */
export interface ApprovalChat extends RealEngineRoot {
  llm: FakeLlm;
  tg: FakePlatform;
  gateway: Gateway;
  /** The Telegram user who writes (and so may answer). */
  user: string;
  send(text: string): Promise<void>;
  /** Replies to the user containing `text`. */
  count(text: string): number;
  /** Until `n` replies contain `text` (the deadline only catches a hang). */
  waitFor(text: string, n: number): Promise<true>;
  close(): Promise<void>;
}

export async function startApprovalChat(opts: { engine: string; prefix: string; hangMs: number; baseUrlPath?: string }): Promise<ApprovalChat> {
  const llm = await startFakeLlm();
  const tg = await startFakeTelegram();
  const root = createRealEngineRoot(opts.prefix, [
    `name: e2e-approvals-${opts.engine}`,
    `engine: ${opts.engine}`,
    'skipPermissions: false',
    'timeout: 600',
    ...fakeProviderYaml(`${llm.url}${opts.baseUrlPath ?? ''}`),
    `channels: ${JSON.stringify({ channel_e: tg.channelConfig })}`,
    'access: { dm: open, groups: open }',
  ]);
  const gateway = await startGateway({
    dir: root.dir,
    port: 0,
    token: 'e2e-token-0123456789',
    log: createSilentLogger(),
    env: { ...root.env, SERVICE_FLEET_DIR: `${root.root}/fleet` },
  });
  await gateway.channels.settled();
  await tg.waitForConnection(opts.hangMs);
  const user = '1001';
  const count = (text: string) => replies(tg, user).filter((o) => o.text.includes(text)).length;
  return {
    ...root,
    llm,
    tg,
    gateway,
    user,
    send: async (text) => void (await tg.deliver({ chatType: 'direct', userId: user, text })),
    count,
    waitFor: (text, n) => until(() => count(text) >= n, opts.hangMs, `${n}× "${text}" in the chat`, 50),
    async close() {
      await gateway.channels.idle();
      await gateway.close(0);
      await tg.close();
      await llm.close();
      root.remove();
    },
  };
}
