import { afterEach, describe, expect, it } from 'vitest';
import type { AccessGate } from '../../../src/channels/access/gate.js';
import { createBridge } from '../../../src/channels/bridge.js';
import { createRunningAdapters } from '../../../src/channels/running-adapters.js';
import { createSentLedger } from '../../../src/channels/sent-ledger.js';
import type { ChannelAdapter, InboundMessage } from '../../../src/channels/types.js';
import { createAssistantCore } from '../../../src/core/assistant/assistant.js';
import { createCommandTable } from '../../../src/core/commands/command-table.js';
import type { Store } from '../../../src/core/store/types.js';
import { createKeyedOrder } from '../../../src/core/util/keyed-order.js';
import { collect, completionOf, createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';
import { sleep } from '../../helpers/wait.js';

/**
 * A store on a server answers in any order: a later call may finish first. These tests slow the
 * first calls of one method down (later ones answer at once) and check that the order callers
 * rely on still holds: one chat's messages are answered in arrival order, one key's turns are
 * admitted in call order.
 */
let t: TestAssistant | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** The store, with `method` answering its calls slowest first (each call `stepMs` faster than the one before). */
function withSlowFirstCalls(store: Store, method: keyof Store, calls: number, stepMs: number): Store {
  let n = 0;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== method || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await sleep(Math.max(0, calls - n++) * stepMs);
        return (value as (...a: unknown[]) => Promise<unknown>)(...args);
      };
    },
  });
}

describe('store answers out of order', () => {
  it("the bridge answers one chat's messages in arrival order", async () => {
    t = createTestAssistant();
    const replies: string[] = [];
    const adapter: ChannelAdapter = {
      name: 'fakechat',
      limit: { max: 10_000, unit: 'chars' },
      render: (md) => md,
      start: async () => undefined,
      stop: async () => undefined,
      async reply(_to, markdown) {
        replies.push(markdown);
        return { chatId: 'c', messageId: `r${replies.length}` };
      },
    };
    const adapters = createRunningAdapters();
    adapters.set('fakechat', adapter);
    const everyone: AccessGate = { screen: async () => 'known', admit: async () => ({ admitted: true, admin: false }), throttle: async () => true };
    const bridge = createBridge({
      assistant: t.assistant,
      config: t.config,
      store: withSlowFirstCalls(t.store, 'claimMessage', 4, 60),
      log: t.log,
      adapters,
      sent: createSentLedger(),
      runId: 'run',
      access: everyone,
    });
    const message = (i: number): InboundMessage => ({
      channel: 'fakechat',
      messageId: `m${i}`,
      chatId: 'one-chat',
      chatType: 'direct',
      senderId: 'u1',
      text: `message ${i}`,
      mentioned: true,
      ts: Date.now(),
      replyTarget: { chatId: 'one-chat', chatType: 'direct', messageId: `m${i}` },
    });
    await Promise.all([1, 2, 3, 4].map((i) => bridge.accept(message(i))));
    await bridge.idle();
    expect(replies.map((r) => r.split('\n')[0])).toEqual(['ECHO: message 1', 'ECHO: message 2', 'ECHO: message 3', 'ECHO: message 4']);
  });

  it("the assistant admits one key's turns in call order, though its budget reads finish in reverse", async () => {
    t = createTestAssistant({ yaml: 'access:\n  dailyBudgetUsd: 100\n' });
    const assistant = createAssistantCore({
      dir: t.dir,
      config: t.config,
      store: withSlowFirstCalls(t.store, 'dailyCost', 3, 80),
      log: t.log,
      version: 'test',
      commands: createCommandTable(),
      env: { ...process.env, ...t.standIn.env },
    });
    const turns = await Promise.all(['first', 'second', 'third'].map((text) => collect(assistant.chat(text, { sessionKey: 'k' }))));
    expect(turns.map((events) => completionOf(events).finalText)).toEqual(['ECHO: first\nTURN: 1', 'ECHO: second\nTURN: 2', 'ECHO: third\nTURN: 3']);
    await assistant.drain(0);
  });

  it('createKeyedOrder runs steps one at a time per key, in call order, also after a failure', async () => {
    const inOrder = createKeyedOrder();
    const seen: string[] = [];
    const step =
      (name: string, ms: number, fail = false) =>
      async () => {
        await sleep(ms);
        seen.push(name);
        if (fail) throw new Error(name);
        return name;
      };
    const results = await Promise.allSettled([
      inOrder('a', step('a1', 60, true)),
      inOrder('a', step('a2', 0)),
      inOrder('b', step('b1', 20)),
      inOrder('a', step('a3', 0)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(seen).toEqual(['b1', 'a1', 'a2', 'a3']);
  });
});
