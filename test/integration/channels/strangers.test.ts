import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createAccessGate } from '../../../src/channels/access/gate.js';
import { STRANGER_LIMITS } from '../../../src/channels/access/strangers.js';
import { createBridge } from '../../../src/channels/bridge.js';
import { createHistoryFetcher } from '../../../src/channels/history-fetch.js';
import { createRunningAdapters } from '../../../src/channels/running-adapters.js';
import { createSentLedger } from '../../../src/channels/sent-ledger.js';
import type { ChannelAdapter, InboundMessage } from '../../../src/channels/types.js';
import { createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';

/**
 * Issue 29, medium 4 and the low item on strangers' chats: what a stranger (a sender or group
 * neither allowed nor approved) can cause through the real bridge, gate and SQLite store. A
 * flood gets one reply per pairing code; nothing of a stranger's messages is written beyond the
 * pairing request and its record; records of approved people and escalations stay.
 */
let t: TestAssistant | undefined;
afterEach(() => {
  t?.close();
  t = undefined;
});

const CHANNEL = 'fakechat';
let seq = 0;

const dm = (senderId: string, text = 'hello?'): InboundMessage => ({
  channel: CHANNEL,
  messageId: `m${++seq}`,
  chatId: `dm-${senderId}`,
  chatType: 'direct',
  senderId,
  senderName: `name ${senderId}`,
  text,
  mentioned: true,
  ts: Date.now(),
  replyTarget: { chatId: `dm-${senderId}`, chatType: 'direct' },
});

const inGroup = (chatId: string, senderId: string, text: string, mentioned: boolean): InboundMessage => ({
  ...dm(senderId, text),
  chatId,
  chatType: 'group',
  mentioned,
  replyTarget: { chatId, chatType: 'group' },
});

function setup(history: InboundMessage[] = []) {
  t = createTestAssistant({ yaml: 'access: {}\nhistoryFetch: { enabled: true }\n' });
  const replies: string[] = [];
  const adapter: ChannelAdapter = {
    name: CHANNEL,
    limit: { max: 10_000, unit: 'chars' },
    render: (md) => md,
    start: async () => undefined,
    stop: async () => undefined,
    async reply(_to, markdown) {
      replies.push(markdown);
      return { chatId: 'c', messageId: `r${replies.length}` };
    },
    readHistory: async () => history,
  };
  const adapters = createRunningAdapters();
  adapters.set(CHANNEL, adapter);
  const clock = { now: Date.now() };
  const access = createAccessGate({ config: t.config, store: t.store, assistant: t.assistant, log: t.log, now: () => clock.now });
  const bridge = createBridge({
    assistant: t.assistant,
    config: t.config,
    store: t.store,
    log: t.log,
    adapters,
    sent: createSentLedger(),
    runId: 'run',
    access,
  });
  const db = new Database(path.join(t.dir, '.service', 'state.db'), { readonly: true });
  const rows = (table: string) => Number((db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n);
  const fetcher = createHistoryFetcher({ config: t.config, store: t.store, accept: (m) => bridge.accept(m), log: t.log, adapters });
  return { t, bridge, replies, clock, rows, fetcher, close: () => db.close() };
}

describe('strangers cannot flood the bot or the activity log', () => {
  it('one stranger sending 500 messages gets one reply, and leaves one pairing request and one record: nothing else is written', async () => {
    const s = setup();
    for (let i = 0; i < 500; i++) await s.bridge.accept(dm('eve', `spam ${i}`));
    await s.bridge.idle();
    expect(s.replies).toHaveLength(1);
    expect(s.replies[0]).toMatch(/Your pairing code: [A-Z2-9]{8} .*`service access approve [A-Z2-9]{8}`/);
    expect(s.replies[0]).not.toMatch(/bin\/service|\.js/);
    expect((await s.t.store.pairingRequests(s.clock.now)).map((r) => r.id)).toEqual(['eve']);
    expect(await s.t.store.recentActivity(10)).toEqual([expect.objectContaining({ status: 'refused', refused: 'not_paired', messagePreview: 'spam 0' })]);
    expect([s.rows('inbox'), s.rows('chats'), s.rows('group_messages'), s.rows('history')]).toEqual([0, 0, 0, 0]);
    expect(s.t.standIn.runs()).toEqual([]);
    s.close();
  });

  it("a thousand made-up accounts: replies and records stay within the strangers' limits; an escalation and approved records stay", async () => {
    const s = setup();
    await s.t.store.recordActivity({
      ts: new Date().toISOString(),
      source: CHANNEL,
      sender: 'alice',
      messagePreview: 'I need a human',
      responsePreview: '[ESCALATE]',
      durationMs: 5,
      costUsd: 0.01,
      status: 'completed',
      sessionKey: 'k',
      escalated: true,
    });
    for (let i = 0; i < 1000; i++) await s.bridge.accept(dm(`sybil${i}`));
    await s.bridge.idle();
    const looked = STRANGER_LIMITS.perChannel.messages;
    // Three get a code, the others looked at are told once that the codes are full; the rest are dropped unread.
    expect(s.replies.filter((r) => r.includes('pairing code'))).toHaveLength(3);
    expect(s.replies).toHaveLength(looked);
    expect((await s.t.store.recentActivity(5000, { statuses: ['refused'] })).length).toBe(looked);
    expect(await s.t.store.recentActivity(5, { escalated: true })).toEqual([expect.objectContaining({ messagePreview: 'I need a human' })]);
    // A minute later the channel's strangers are looked at again (within the same limits).
    s.clock.now += STRANGER_LIMITS.perChannel.perSeconds * 1000;
    await s.bridge.accept(dm('latecomer'));
    await s.bridge.idle();
    expect(s.replies.at(-1)).toContain('too many pairing requests are waiting');
    expect(s.rows('inbox')).toBe(0);
    s.close();
  });

  it("an unpaired group's chatter is not kept; a mention gets one pairing reply and nothing is stored from it", async () => {
    const s = setup();
    await s.bridge.accept(inGroup('g1', 'bob', 'just chatting', false));
    await s.bridge.accept(inGroup('g1', 'carol', 'secret plans', false));
    await s.bridge.accept(inGroup('g1', 'bob', '@bot help', true));
    await s.bridge.accept(inGroup('g1', 'carol', '@bot hello?', true));
    await s.bridge.idle();
    expect(s.replies).toEqual([expect.stringContaining('This group is not approved')]);
    expect([s.rows('inbox'), s.rows('chats'), s.rows('group_messages')]).toEqual([0, 0, 0]);
    expect(await s.t.store.recentGroupMessages(`${CHANNEL}:g1`, 50)).toEqual([]);
    s.close();
  });

  it('history catch-up of a chat an earlier version noted keeps nothing from a stranger beyond the pairing request', async () => {
    const history = [dm('mallory', 'first'), dm('mallory', 'second'), dm('mallory', 'third')];
    const s = setup(history);
    await s.t.store.noteChat({ channel: CHANNEL, chatId: 'dm-mallory', chatType: 'direct', lastSeen: 1 });
    await s.fetcher.catchUp();
    await s.bridge.idle();
    expect(s.replies).toEqual([expect.stringContaining('Your pairing code')]);
    expect(s.rows('inbox')).toBe(0);
    expect((await s.t.store.pairingRequests(s.clock.now)).map((r) => r.id)).toEqual(['mallory']);
    expect(s.t.standIn.runs()).toEqual([]);
    s.close();
  });

  it('an approved sender is taken in as before: claimed once, noted, answered', async () => {
    const s = setup();
    await s.bridge.accept(dm('eve', 'let me in'));
    await s.bridge.idle();
    const [request] = await s.t.store.pairingRequests(s.clock.now);
    await s.t.store.approvePairing(request?.code ?? '', s.clock.now, 'test');
    const msg = dm('eve', 'thanks');
    await s.bridge.accept(msg);
    await s.bridge.accept(msg); // a redelivery
    await s.bridge.idle();
    expect(s.replies.filter((r) => r.includes('ECHO: thanks'))).toHaveLength(1);
    expect([s.rows('inbox'), s.rows('chats')]).toEqual([1, 1]);
    s.close();
  });
});
