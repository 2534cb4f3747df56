import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createAccessGate } from '../../../src/channels/access/gate.js';
import type { InboundMessage } from '../../../src/channels/types.js';
import { createAccessAdmin } from '../../../src/core/access/access-admin.js';
import { generatePairingCode, PAIRING_ALPHABET, parsePairingCode } from '../../../src/core/access/pairing-code.js';
import { packageRoot } from '../../../src/core/paths.js';
import { createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';

/**
 * Pairing codes with an injected clock and random source: expiry after an hour, at most three
 * waiting per channel and one per requester, one reply per code, no lookalike characters.
 */
const LOOKALIKES = ['0', 'O', '1', 'I', 'L'];
const HOUR = 3_600_000;

describe('pairing codes', () => {
  it('are 8 characters from an alphabet without lookalikes, whatever the random source gives', () => {
    for (const ch of LOOKALIKES) expect(PAIRING_ALPHABET).not.toContain(ch);
    expect(new Set(PAIRING_ALPHABET).size).toBe(PAIRING_ALPHABET.length);
    fc.assert(
      fc.property(fc.array(fc.nat(), { minLength: 8, maxLength: 8 }), (draws) => {
        let i = 0;
        const code = generatePairingCode((n) => (draws[i++] ?? 0) % n);
        expect(code).toHaveLength(8);
        for (const ch of code) expect(PAIRING_ALPHABET).toContain(ch);
        for (const ch of LOOKALIKES) expect(code).not.toContain(ch);
      }),
    );
    // Every symbol is reachable (the draw covers the whole alphabet).
    const seen = new Set(Array.from({ length: PAIRING_ALPHABET.length }, (_, k) => generatePairingCode(() => k)[0]));
    expect(seen.size).toBe(PAIRING_ALPHABET.length);
  });

  it('are read back from what a person types: any case, spaces or dashes; anything else is not a code', () => {
    expect(parsePairingCode('abcd-2345')).toBe('ABCD2345');
    expect(parsePairingCode(' AbCd 2345 ')).toBe('ABCD2345');
    for (const bad of ['ABCD234', 'ABCD23456', 'ABCD2340', 'ABCDO345', 'ABCD!345', '']) expect(parsePairingCode(bad)).toBeUndefined();
  });
});

describe('pairing at the channel gate (injected clock)', () => {
  let t: TestAssistant | undefined;
  afterEach(() => {
    t?.close();
    t = undefined;
  });

  const dm = (channel: string, senderId: string, text = 'hi'): InboundMessage => ({
    channel,
    messageId: `${senderId}-${Math.random()}`,
    chatId: `dm-${senderId}`,
    chatType: 'direct',
    senderId,
    text,
    mentioned: true,
    ts: 0,
    replyTarget: { chatId: `dm-${senderId}`, chatType: 'direct' },
  });

  const setup = () => {
    t = createTestAssistant({ yaml: 'access: {}\n' });
    const clock = { now: 1_000_000 };
    let seq = 0;
    // A deterministic random source: a new code every call.
    const random = (n: number) => seq++ % n;
    const gate = createAccessGate({ config: t.config, store: t.store, assistant: t.assistant, log: t.log, now: () => clock.now, random });
    const admin = createAccessAdmin({ store: t.store, access: () => (t as TestAssistant).config.current().config.access, now: () => clock.now });
    const said: string[] = [];
    const ask = async (msg: InboundMessage) => {
      const before = said.length;
      const admission = await gate.admit(msg, async (text) => void said.push(text));
      return { admission, replies: said.slice(before) };
    };
    return { clock, ask, admin, t };
  };
  const codeOf = (text: string | undefined) => /code: ([A-Z2-9]{8})/.exec(text ?? '')?.[1];

  it('a code is answered once: asking again within the hour gets nothing; a new code (and reply) once it expired (issue 29)', async () => {
    const { clock, ask, t } = setup();
    const first = await ask(dm('chat', 'u1'));
    expect(first.admission).toEqual({ admitted: false });
    expect(first.replies).toHaveLength(1);
    const code = codeOf(first.replies[0]);
    expect(code).toBeDefined();
    expect(first.replies[0]).toContain(`\`service access approve ${code}\``);
    clock.now += HOUR - 1;
    expect(await ask(dm('chat', 'u1'))).toEqual({ admission: { admitted: false }, replies: [] });
    clock.now += 1; // exactly one hour after it was made: expired
    const renewed = codeOf((await ask(dm('chat', 'u1'))).replies[0]);
    expect(renewed).toBeDefined();
    expect(renewed).not.toBe(code);
    // One record per code, not per message.
    expect((await t.store.recentActivity(10, { statuses: ['refused'] })).map((r) => r.refused)).toEqual(['not_paired', 'not_paired']);
  });

  it("the reply names `service access approve CODE`, never this host's path to the CLI, however the gateway was started (issue 29)", async () => {
    const { ask } = setup();
    const argv1 = process.argv[1];
    const envPath = process.env.PATH;
    // As started by its full path, with no `service` on PATH: hints for the owner would print the path.
    process.argv[1] = path.join(packageRoot(), 'bin', 'service.js');
    process.env.PATH = '/nonexistent';
    try {
      const [text] = (await ask(dm('chat', 'u1'))).replies;
      const code = codeOf(text);
      expect(text).toContain(`\`service access approve ${code}\``);
      expect(text).not.toContain(packageRoot());
      expect(text).not.toContain('service.js');
    } finally {
      process.argv[1] = argv1 ?? '';
      process.env.PATH = envPath;
    }
  });

  it('at most 3 codes wait per channel: the 4th sender is told to try later once, without a code, until one expires', async () => {
    const { clock, ask, t } = setup();
    const codes = [];
    for (const u of ['a', 'b', 'c']) {
      codes.push(codeOf((await ask(dm('chat', u))).replies[0]));
      clock.now += 60_000;
    }
    expect(new Set(codes).size).toBe(3);
    const full = await ask(dm('chat', 'd'));
    expect(full.replies).toEqual([expect.stringContaining('try again later')]);
    expect(codeOf(full.replies[0])).toBeUndefined();
    expect((await ask(dm('chat', 'd'))).replies).toEqual([]); // told once per 10 minutes
    // A waiting sender asking again gets nothing more; another channel has its own three.
    expect((await ask(dm('chat', 'b'))).replies).toEqual([]);
    expect(codeOf((await ask(dm('other', 'd'))).replies[0])).toBeDefined();
    clock.now = 1_000_000 + HOUR; // a's code (the oldest) has expired
    expect(codeOf((await ask(dm('chat', 'd'))).replies[0])).toBeDefined();
    const waiting = (await t.store.pairingRequests(clock.now)).map((r) => `${r.channel}:${r.id}`);
    expect(waiting.sort()).toEqual(['chat:b', 'chat:c', 'chat:d', 'other:d']);
  });

  it('one account cannot fill the channel: its DM and two groups take one slot; a real newcomer still gets a code (issue 29)', async () => {
    const { ask } = setup();
    const group = (chatId: string, senderId: string): InboundMessage => ({
      ...dm('chat', senderId),
      chatId,
      chatType: 'group',
      replyTarget: { chatId, chatType: 'group' },
    });
    expect(codeOf((await ask(dm('chat', 'eve'))).replies[0])).toBeDefined();
    const second = await ask(group('g1', 'eve'));
    expect(second.replies).toEqual([expect.stringContaining('You already have a pairing request waiting')]);
    expect((await ask(group('g2', 'eve'))).replies).toEqual([]); // told once
    expect(codeOf((await ask(dm('chat', 'newcomer'))).replies[0])).toBeDefined();
  });

  it('an approved code lets the sender in from the next message; an expired code cannot be approved', async () => {
    const { clock, ask, admin } = setup();
    const code = codeOf((await ask(dm('chat', 'u1'))).replies[0]) ?? '';
    const late = codeOf((await ask(dm('chat', 'u2'))).replies[0]) ?? '';
    expect(await admin.approve(code, 'test')).toMatchObject({ ok: true, value: { channel: 'chat', kind: 'sender', id: 'u1', approvedBy: 'test' } });
    expect(await ask(dm('chat', 'u1'))).toEqual({ admission: { admitted: true, admin: false }, replies: [] });
    clock.now += HOUR;
    expect(await admin.approve(late, 'test')).toMatchObject({ ok: false, reason: 'not_found' });
    expect(await admin.approve('nonsense', 'test')).toMatchObject({ ok: false, reason: 'invalid' });
  });
});
