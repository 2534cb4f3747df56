import { describe, expect, it } from 'vitest';
import { decideAccess } from '../../../src/channels/access/policy.js';
import { createRateLimiter } from '../../../src/channels/access/rate-limit.js';
import type { InboundMessage } from '../../../src/channels/types.js';
import type { AccessConfig } from '../../../src/core/config/schema.js';

const access = (over: Partial<AccessConfig> = {}): AccessConfig => ({
  dm: 'pairing',
  groups: 'pairing',
  allow: [],
  chats: [],
  admins: [],
  rateLimit: { messages: 20, perSeconds: 60 },
  dailyBudgetUsd: 0,
  reservePerTurnUsd: 0,
  ...over,
});

const msg = (over: Partial<InboundMessage> = {}): InboundMessage => ({
  channel: 'chat',
  messageId: 'm',
  chatId: 'dm-1',
  chatType: 'direct',
  senderId: 'u1',
  text: 'hi',
  mentioned: true,
  ts: 0,
  replyTarget: { chatId: 'dm-1', chatType: 'direct' },
  ...over,
});
const group = (over: Partial<InboundMessage> = {}) => msg({ chatType: 'group', chatId: 'g1', mentioned: false, ...over });
const none = () => false;

describe('decideAccess', () => {
  it('direct messages: pairing by default, allowlist refuses, open admits; known senders always pass', () => {
    expect(decideAccess(msg(), access(), none)).toEqual({ verdict: 'pair', kind: 'sender', id: 'u1' });
    expect(decideAccess(msg(), access({ dm: 'allowlist' }), none)).toEqual({ verdict: 'refuse' });
    expect(decideAccess(msg(), access({ dm: 'open' }), none)).toEqual({ verdict: 'admit', admin: false });
    expect(decideAccess(msg(), access({ dm: 'allowlist', allow: ['chat:u1'] }), none)).toEqual({ verdict: 'admit', admin: false });
    expect(decideAccess(msg(), access({ dm: 'allowlist', allow: ['chat:*'] }), none)).toEqual({ verdict: 'admit', admin: false });
    expect(decideAccess(msg(), access({ dm: 'allowlist', allow: ['other:*', 'other:u1'] }), none)).toEqual({ verdict: 'refuse' });
    expect(decideAccess(msg(), access({ admins: ['chat:u1'] }), none)).toEqual({ verdict: 'admit', admin: true });
    expect(decideAccess(msg(), access(), (kind, id) => kind === 'sender' && id === 'u1')).toEqual({ verdict: 'admit', admin: false });
    // Listed as a user elsewhere is not an admin here.
    expect(decideAccess(msg(), access({ dm: 'open', admins: ['other:u1'] }), none)).toEqual({ verdict: 'admit', admin: false });
    expect(decideAccess(msg({ fromBot: true }), access(), none)).toMatchObject({ verdict: 'ignore' });
  });

  it('groups: paired as a whole; unaddressed messages of an unpaired group are ignored, never answered', () => {
    expect(decideAccess(group(), access(), none)).toMatchObject({ verdict: 'ignore' });
    expect(decideAccess(group({ mentioned: true }), access(), none)).toEqual({ verdict: 'pair', kind: 'chat', id: 'g1' });
    expect(decideAccess(group({ mentioned: true }), access({ groups: 'allowlist' }), none)).toEqual({ verdict: 'refuse' });
    expect(decideAccess(group({ mentioned: true, fromBot: true }), access(), none)).toMatchObject({ verdict: 'ignore' });
    expect(decideAccess(group(), access({ groups: 'open' }), none)).toEqual({ verdict: 'admit', admin: false });
    expect(decideAccess(group(), access({ chats: ['chat:g1'] }), none)).toEqual({ verdict: 'admit', admin: false });
    expect(decideAccess(group(), access(), (kind, id) => kind === 'chat' && id === 'g1')).toEqual({ verdict: 'admit', admin: false });
    // A known sender is known in groups too; the dm policy does not open groups.
    expect(decideAccess(group(), access({ allow: ['chat:u1'] }), none)).toEqual({ verdict: 'admit', admin: false });
    expect(decideAccess(group({ mentioned: true }), access({ dm: 'open' }), none)).toEqual({ verdict: 'pair', kind: 'chat', id: 'g1' });
  });
});

describe('rate limiter (injected clock)', () => {
  const limit = { messages: 20, perSeconds: 60 };

  it('a burst of 25: 20 pass, 5 refused, told once; a slot frees up when the oldest leaves the window', () => {
    const clock = { now: 100_000 };
    const rl = createRateLimiter(() => clock.now);
    const out = Array.from({ length: 25 }, () => rl.hit('u', limit));
    expect(out.filter((d) => d.ok)).toHaveLength(20);
    const refused = out.filter((d) => !d.ok);
    expect(refused.map((d) => !d.ok && d.notify)).toEqual([true, false, false, false, false]);
    expect(refused[0]).toEqual({ ok: false, retryInSeconds: 60, notify: true });
    expect(rl.hit('someone else', limit).ok).toBe(true);
    clock.now += 59_999;
    expect(rl.hit('u', limit)).toEqual({ ok: false, retryInSeconds: 1, notify: false });
    clock.now += 1; // the whole burst has left the window
    for (let i = 0; i < 20; i++) expect(rl.hit('u', limit).ok).toBe(true);
    // The next stretch of refusals is told again.
    expect(rl.hit('u', limit)).toMatchObject({ ok: false, notify: true });
  });

  it('counts a message when it arrived, not when it was processed; 0 messages = no limit', () => {
    const clock = { now: 2_000 };
    const rl = createRateLimiter(() => clock.now);
    for (let i = 0; i < 20; i++) expect(rl.hit('u', limit, 1_000 + i).ok).toBe(true);
    clock.now = 120_000; // processed much later, arrived within the same minute
    expect(rl.hit('u', limit, 1_020)).toMatchObject({ ok: false });
    expect(rl.hit('u', limit, 70_000).ok).toBe(true);
    expect(rl.hit('u', limit, Number.NaN).ok).toBe(true);
    for (let i = 0; i < 100; i++) expect(rl.hit('v', { messages: 0, perSeconds: 60 }).ok).toBe(true);
  });
});
