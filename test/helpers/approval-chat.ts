import type { ApprovalDecision } from '../../src/core/approvals/approvals.js';
import type { Assistant } from '../../src/core/assistant/assistant.js';
import type { StreamEvent } from '../../src/core/events.js';
import { createSilentLogger } from '../../src/core/logger.js';
import { type Gateway, launchGateway } from '../../src/gateway.js';
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
  /**
   * One turn whose model asks for the file-writing command: `ASK-TOOL <label>` is sent, the chat's
   * `nth` approval prompt is answered with `answer` (`/allow` or `/deny`), and the agent's reply to
   * the turn arrives. Returns the prompt's text.
   */
  askTool(label: string, answer: '/allow' | '/deny', nth: number): Promise<string>;
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
  const gateway = await launchGateway({
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
  const waitFor = (text: string, n: number) => until(() => count(text) >= n, opts.hangMs, `${n}× "${text}" in the chat`, 50);
  const send = async (text: string) => void (await tg.deliver({ chatType: 'direct', userId: user, text }));
  return {
    ...root,
    llm,
    tg,
    gateway,
    user,
    send,
    count,
    waitFor,
    async askTool(label, answer, nth) {
      await send(`ASK-TOOL ${label}: please write a file`);
      await waitFor('Approval needed', nth);
      const prompt = replies(tg, user).filter((o) => o.text.includes('Approval needed'))[nth - 1]?.text ?? '';
      await send(answer);
      await waitFor(`FAKE-LLM-REPLY: ASK-TOOL ${label}`, 1);
      return prompt;
    },
    async close() {
      await gateway.channels.idle();
      await gateway.close(0);
      await tg.close();
      await llm.close();
      root.remove();
    },
  };
}

/** One turn through the assistant itself (no chat), answering every approval request with `decision`. */
export async function runAnsweringApprovals(assistant: Assistant, prompt: string, key: string, decision: ApprovalDecision) {
  const events: StreamEvent[] = [];
  for await (const e of assistant.chat(prompt, { sessionKey: key, source: 'api', sender: 'e2e' })) {
    events.push(e);
    if (e.type === 'approval_request') assistant.answerApproval({ sessionKey: key, id: e.id, decision, privileged: true });
  }
  const requests = events.filter((e): e is Extract<StreamEvent, { type: 'approval_request' }> => e.type === 'approval_request');
  const completion = events.find((e): e is Extract<StreamEvent, { type: 'completion' }> => e.type === 'completion');
  return { events, requests, completion };
}
