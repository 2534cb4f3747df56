import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AccessGate } from '../../../src/channels/access/gate.js';
import { createBridge } from '../../../src/channels/bridge.js';
import { createRunningAdapters } from '../../../src/channels/running-adapters.js';
import { createSentLedger } from '../../../src/channels/sent-ledger.js';
import type { ChannelAdapter, InboundMessage } from '../../../src/channels/types.js';
import { createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * Exactly once across a restart, every interleaving: an earlier run left messages pending in the
 * inbox; this run's recovery pass and the platform redelivering them live race. Each order, with
 * the second step at each point (at once, while the turns the first step started run, after they
 * ended), must run the engine once per message id and reply once.
 */
let t: TestAssistant | undefined;
afterEach(() => {
  t?.close();
  t = undefined;
});

const CHANNEL = 'fakechat';
/** Access control is not what these tests are about: everyone is let in. */
const everyone: AccessGate = { screen: async () => 'known', admit: async () => ({ admitted: true, admin: false }), throttle: async () => true };

function recordingAdapter(replies: string[]): ChannelAdapter {
  return {
    name: CHANNEL,
    limit: { max: 10_000, unit: 'chars' },
    render: (md) => md,
    start: async () => undefined,
    stop: async () => undefined,
    async reply(_to, markdown) {
      replies.push(markdown);
      return { chatId: 'c', messageId: `r${replies.length}` };
    },
  };
}

const message = (id: string, text: string): InboundMessage => ({
  channel: CHANNEL,
  messageId: id,
  chatId: `dm-${id}`,
  chatType: 'direct',
  senderId: `u${id}`,
  text,
  mentioned: true,
  ts: Date.now(),
  replyTarget: { chatId: `dm-${id}`, chatType: 'direct', messageId: id },
});

type Step = 'recover' | 'redeliver';
const orders: Step[][] = [
  ['recover', 'redeliver'],
  ['redeliver', 'recover'],
];
/** When the second step comes: the turns wait for a gate file, so "while they run" is certain. */
const points = ['at once', 'while the turns of the first step run', 'after those turns ended'] as const;

describe('bridge: recovery vs live redelivery after a restart', () => {
  for (const order of orders) {
    for (const point of points) {
      it(`${order.join(' then ')} (${point}): one turn and one reply per message`, async () => {
        t = createTestAssistant({ yaml: 'inbox:\n  enabled: true\n' });
        const gate = path.join(testdir(), 'gate-open');
        const openGate = () => fs.writeFileSync(gate, '');
        const pending = [message('m1', `GATE:${gate} first`), message('m2', 'second')];
        // What a killed earlier run left: claimed under its own run id, payload kept, not done.
        for (const m of pending) {
          await t.store.claimMessage({
            channel: CHANNEL,
            messageId: m.messageId,
            chatKey: `${CHANNEL}:${m.chatId}`,
            receivedAt: 1,
            owner: 'earlier-run',
            payload: JSON.stringify(m),
          });
        }
        const replies: string[] = [];
        const adapters = createRunningAdapters();
        adapters.set(CHANNEL, recordingAdapter(replies));
        const bridge = createBridge({
          assistant: t.assistant,
          config: t.config,
          store: t.store,
          log: t.log,
          adapters,
          sent: createSentLedger(),
          runId: 'this-run',
          access: everyone,
        });
        // The platform redelivers what it had not seen acknowledged, plus one message sent while the gateway was down.
        const sentWhileDown = message('m3', `GATE:${gate} third`);
        const steps: Record<Step, () => Promise<unknown>> = {
          recover: async () => await bridge.recover(),
          redeliver: () => Promise.all([...pending, sentWhileDown].map((m) => bridge.accept(m))),
        };
        await steps[order[0] as Step]();
        if (point === 'while the turns of the first step run') await until(() => t?.standIn.runs().length !== 0, HANG_MS, 'a turn of the first step to start');
        if (point === 'after those turns ended') {
          openGate();
          await bridge.idle();
        }
        await steps[order[1] as Step]();
        openGate();
        // Both steps have handed every message to their lanes: once these are empty, nothing more comes.
        await bridge.idle();

        const standIn = t.standIn;
        for (const text of ['first', 'second', 'third']) {
          expect(standIn.runs().filter((r) => String(r.prompt).includes(text))).toHaveLength(1);
          expect(replies.filter((r) => r.includes(text))).toHaveLength(1);
        }
        expect(await t.store.pendingMessages()).toEqual([]);
      });
    }
  }

  it('never takes over what this run received live, and a second recovery pass takes nothing', async () => {
    t = createTestAssistant({ yaml: 'inbox:\n  enabled: true\n' });
    const replies: string[] = [];
    const adapters = createRunningAdapters();
    adapters.set(CHANNEL, recordingAdapter(replies));
    const bridge = createBridge({
      assistant: t.assistant,
      config: t.config,
      store: t.store,
      log: t.log,
      adapters,
      sent: createSentLedger(),
      runId: 'this-run',
      access: everyone,
    });
    const gate = path.join(testdir(), 'gate-open');
    await bridge.accept(message('live', `GATE:${gate} live one`));
    await until(() => t?.standIn.runs().length === 1, HANG_MS, 'the live turn to start');
    expect(await bridge.recover()).toBe(0); // while its turn runs
    fs.writeFileSync(gate, '');
    await bridge.idle();
    expect(await bridge.recover()).toBe(0);
    expect(t.standIn.runs()).toHaveLength(1);
    expect(replies.filter((r) => r.includes('live one'))).toHaveLength(1);
  });

  it('a damaged stored message is dropped with an error, the others are processed', async () => {
    t = createTestAssistant({ yaml: 'inbox:\n  enabled: true\n' });
    await t.store.claimMessage({ channel: CHANNEL, messageId: 'bad', chatKey: 'k1', receivedAt: 1, owner: 'old', payload: '{not json' });
    const good = message('good', 'still here');
    await t.store.claimMessage({ channel: CHANNEL, messageId: 'good', chatKey: 'k2', receivedAt: 2, owner: 'old', payload: JSON.stringify(good) });
    const replies: string[] = [];
    const adapters = createRunningAdapters();
    adapters.set(CHANNEL, recordingAdapter(replies));
    const bridge = createBridge({
      assistant: t.assistant,
      config: t.config,
      store: t.store,
      log: t.log,
      adapters,
      sent: createSentLedger(),
      runId: 'new',
      access: everyone,
    });
    expect(await bridge.recover()).toBe(1);
    await bridge.idle();
    expect(replies.filter((r) => r.includes('still here'))).toHaveLength(1);
    expect(await t.store.pendingMessages()).toEqual([]);
  });
});
