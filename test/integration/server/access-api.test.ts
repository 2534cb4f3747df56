import { afterEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/core/events.js';
import { collect } from '../../helpers/assistant.js';
import { parseSseStrict, startTestServer, type TestServer } from '../../helpers/server.js';

/**
 * The owner's HTTP side of access control (token required, zod-validated bodies), and the daily
 * budget on the HTTP path: a refused turn is an in-stream error with HTTP 200, like every failure.
 */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const ACCESS = `access:
  allow: ["chat:alice", "chat:*"]
  chats: ["chat:g1"]
  admins: ["chat:alice"]
  rateLimit: { messages: 5, perSeconds: 10 }
  dailyBudgetUsd: 2.5
`;

const ask = (srv: TestServer, id: string, code: string, kind: 'sender' | 'chat' = 'sender') =>
  srv.store.openPairing({ channel: 'chat', kind, id, label: `name ${id}`, createdAt: Date.now() - 90_000 }, { code, ttlMs: 3_600_000, maxPending: 3 });

describe('GET /api/access, POST /api/access/approve|deny|revoke', () => {
  it('need the token, like every /api/ route', async () => {
    s = await startTestServer();
    for (const [method, path] of [
      ['GET', '/api/access'],
      ['GET', '/api/access/refusals'],
      ['POST', '/api/access/approve'],
      ['POST', '/api/access/deny'],
      ['POST', '/api/access/revoke'],
    ] as const) {
      expect((await fetch(`${s.url}${path}`, { method })).status, `${method} ${path}`).toBe(401);
    }
  });

  it('list the configured and approved senders and chats, admins, pending codes with their age, the budget', async () => {
    s = await startTestServer({ yaml: ACCESS });
    await ask(s, 'bob', 'BBBBBBBB');
    await ask(s, 'g2', 'GGGGGGGG', 'chat');
    const body = (await (await s.api('/api/access')).json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      dm: 'pairing',
      groups: 'pairing',
      senders: [
        { id: 'chat:alice', source: 'config' },
        { id: 'chat:*', source: 'config' },
      ],
      chats: [{ id: 'chat:g1', source: 'config' }],
      admins: ['chat:alice'],
      rateLimit: { messages: 5, perSeconds: 10 },
      dailyBudgetUsd: 2.5,
      todayCostUsd: 0,
      pending: [
        { code: 'BBBBBBBB', channel: 'chat', kind: 'sender', id: 'bob', subject: 'chat:bob', label: 'name bob', createdAt: expect.stringMatching(/Z$/) },
        { code: 'GGGGGGGG', kind: 'chat', subject: 'chat:g2' },
      ],
    });
    const [first] = body.pending as Array<{ ageSeconds: number; expiresAt: string }>;
    expect(first?.ageSeconds).toBeGreaterThanOrEqual(90);
    expect(Date.parse(first?.expiresAt ?? '')).toBeGreaterThan(Date.now());
  });

  it('approve, deny and revoke with validated bodies; unknown codes 404, configured entries 409', async () => {
    s = await startTestServer({ yaml: ACCESS });
    await ask(s, 'bob', 'BBBBBBBB');
    await ask(s, 'carol', 'CCCCCCCC');
    for (const bad of [{}, { code: 7 }, { code: 'BBBBBBBB', extra: true }]) {
      const res = await s.api('/api/access/approve', { json: bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    expect(await (await s.api('/api/access/approve', { json: { code: 'not a code' } })).json()).toMatchObject({ reason: 'invalid' });
    const approved = await s.api('/api/access/approve', { json: { code: 'bbbb-bbbb' } });
    expect(approved.status).toBe(200);
    expect(await approved.json()).toMatchObject({
      ok: true,
      approved: { channel: 'chat', kind: 'sender', id: 'bob', approvedBy: 'http', approvedAt: expect.stringMatching(/Z$/) },
      text: expect.stringContaining('Approved chat:bob (name bob)'),
    });
    expect(await s.store.isGranted('chat', 'sender', 'bob')).toBe(true);
    expect((await s.api('/api/access/approve', { json: { code: 'BBBBBBBB' } })).status).toBe(404);

    expect(await (await s.api('/api/access/deny', { json: { code: 'CCCCCCCC' } })).json()).toMatchObject({ ok: true, denied: { id: 'carol' } });
    expect((await s.api('/api/access/deny', { json: { code: 'CCCCCCCC' } })).status).toBe(404);

    const listed = (await (await s.api('/api/access')).json()) as { senders: Array<{ id: string; source: string }>; pending: unknown[] };
    expect(listed.senders.map((e) => `${e.id} ${e.source}`)).toEqual(['chat:alice config', 'chat:* config', 'chat:bob approved']);
    expect(listed.pending).toEqual([]);

    const revoked = await s.api('/api/access/revoke', { json: { id: 'chat:bob' } });
    expect(await revoked.json()).toMatchObject({ ok: true, revoked: [{ id: 'bob', kind: 'sender' }] });
    expect(await s.store.isGranted('chat', 'sender', 'bob')).toBe(false);
    expect((await s.api('/api/access/revoke', { json: { id: 'chat:bob' } })).status).toBe(404);
    const inConfig = await s.api('/api/access/revoke', { json: { id: 'chat:alice' } });
    expect(inConfig.status).toBe(409);
    expect(await inConfig.json()).toMatchObject({ error: expect.stringContaining('access.allow, access.admins'), reason: 'in_config' });
    expect((await s.api('/api/access/revoke', { json: { id: 'no-colon' } })).status).toBe(400);
  });

  it('PATCH /api/config changes access at once, without a restart; a bad entry is refused with its path', async () => {
    s = await startTestServer({ yaml: ACCESS });
    const res = await s.api('/api/config', { method: 'PATCH', json: { access: { dm: 'open', allow: ['chat:zoe'] } } });
    expect(await res.json()).toMatchObject({ ok: true, needsRestart: false });
    expect(await (await s.api('/api/access')).json()).toMatchObject({ dm: 'open', senders: [{ id: 'chat:zoe', source: 'config' }] });
    const bad = await s.api('/api/config', { method: 'PATCH', json: { access: { admins: ['chat:*'] } } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ issues: [{ path: 'access.admins[0]', message: expect.stringContaining('only for access.allow') }] });
  });
});

describe('the daily budget on the HTTP path', () => {
  it('a spent budget refuses /chat in-stream (HTTP 200, error, done, completion failed); commands, the terminal and tasks still run', async () => {
    s = await startTestServer({ yaml: 'access: { dailyBudgetUsd: 0.01 }\n' });
    const first = await s.api('/chat', { json: { message: 'spend it', sessionKey: 'k' } });
    expect(parseSseStrict(await first.text()).at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    const status = (await (await s.api('/api/status')).json()) as { budget: Record<string, unknown> };
    expect(status.budget).toMatchObject({ todayCostUsd: 0.0123, dailyBudgetUsd: 0.01, reached: true, resetsAt: expect.stringMatching(/Z$/) });

    const refused = await s.api('/chat', { json: { message: 'one more', sessionKey: 'k' } });
    expect(refused.status).toBe(200);
    const events = parseSseStrict(await refused.text()) as StreamEvent[];
    expect(events.map((e) => e.type)).toEqual(['error', 'done', 'completion']);
    expect(events[0]).toEqual({
      type: 'error',
      message: expect.stringMatching(/^The daily budget is spent \(\$0\.0123 of \$0\.01 today\)\. New turns are refused until midnight/),
    });
    expect(events[2]).toMatchObject({ status: 'failed' });
    expect(s.standIn.runs()).toHaveLength(1);

    // Slash commands are not turns; the owner's terminal and scheduled tasks are not capped.
    expect(await (await s.api('/chat', { json: { message: '/status', sessionKey: 'k' } })).json()).toMatchObject({ type: 'command' });
    for (const source of ['terminal', 'cron']) {
      expect((await collect(s.assistant.chat(`from ${source}`, { source }))).at(-1)).toMatchObject({ status: 'completed' });
    }
    const refusals = (await (await s.api('/api/access/refusals')).json()) as { refusals: Array<Record<string, unknown>> };
    expect(refusals.refusals).toEqual([expect.objectContaining({ source: 'http', status: 'refused', refused: 'over_budget', messagePreview: 'one more' })]);
    // Not an escalation: the escalation panel lists failures and [ESCALATE] replies only.
    expect(((await (await s.api('/api/escalations')).json()) as { escalations: unknown[] }).escalations).toEqual([]);
  });

  it('/approve works over the HTTP API (the token holder is the owner)', async () => {
    s = await startTestServer({ yaml: 'access: {}\n' });
    await ask(s, 'dave', 'DDDDDDDD');
    const res = await s.api('/chat', { json: { message: '/approve DDDDDDDD' } });
    expect(await res.json()).toMatchObject({ type: 'command', approved: 'chat:dave', text: expect.stringContaining('Approved chat:dave') });
    expect(await s.store.accessGrants()).toEqual([expect.objectContaining({ id: 'dave', approvedBy: 'command' })]);
  });
});
