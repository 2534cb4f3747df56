import { afterEach, describe, expect, it } from 'vitest';
import { findEngineBinary } from '../../../src/core/engines/detect.js';
import { getEngine } from '../../../src/core/engines/registry.js';
import { buildTimeline } from '../../../src/server/routes/dashboard-data.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { HANG_MS, until } from '../../helpers/wait.js';

let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const drain = async (res: Response) => void (await res.text());

describe('dashboard data endpoints (real sockets)', () => {
  it('need the token like every /api/ route', async () => {
    s = await startTestServer();
    for (const p of ['/api/config/effective', '/api/metrics/timeline', '/api/escalations', '/api/fleet', '/api/engines']) {
      expect((await fetch(`${s.url}${p}`)).status, p).toBe(401);
      expect((await s.api(p)).status, p).toBe(200);
    }
  });

  it('GET /api/config/effective: every default filled in, secrets masked', async () => {
    s = await startTestServer({ yaml: 'timeout: 42\noauthToken: sk-oauth-very-secret\n' });
    const { config } = (await (await s.api('/api/config/effective')).json()) as { config: Record<string, unknown> };
    expect(config).toMatchObject({
      name: 'tester',
      timeout: 42,
      maxConcurrent: 10,
      streaming: { mode: 'buffered' },
      groupChat: { groupPolicy: 'mention-only' },
      gateway: { port: 3000 },
      oauthToken: '********',
    });
    expect(JSON.stringify(config)).not.toContain('sk-oauth-very-secret');
  });

  it('GET /api/engines: every registered engine, marked installed when its CLI is on PATH', async () => {
    s = await startTestServer();
    const { engines } = (await (await s.api('/api/engines')).json()) as { engines: Array<{ id: string; title: string; installed: boolean }> };
    expect(engines.map((e) => e.id)).toEqual(['engine_a', 'engine_b', 'engine_c', 'engine_d', 'engine_e', 'engine_f', 'acp']);
    expect(engines.find((e) => e.id === 'engine_e')).toEqual({
      id: 'engine_e',
      title: 'Gemini CLI',
      installed: findEngineBinary(getEngine('engine_e')) !== undefined,
    });
  });

  it('GET /api/metrics/timeline: zero-filled buckets ending now, counting the turns just made', async () => {
    s = await startTestServer();
    await drain(await s.api('/chat', { json: { message: 'one' } }));
    await drain(await s.api('/chat', { json: { message: 'FAIL:two' } }));
    const t = (await (await s.api('/api/metrics/timeline?range=1h')).json()) as {
      range: string;
      bucketMs: number;
      since: number;
      until: number;
      buckets: Array<{ start: number; count: number; costUsd: number }>;
    };
    expect(t).toMatchObject({ range: '1h', bucketMs: 300_000 });
    expect(t.buckets).toHaveLength(12);
    expect(t.until - t.since).toBe(3_600_000);
    expect(t.buckets.reduce((n, b) => n + b.count, 0)).toBe(2);
    expect(t.buckets.at(-1)?.count).toBeGreaterThanOrEqual(1);
    expect((await s.api('/api/metrics/timeline')).status).toBe(200); // 24h by default
    const bad = await s.api('/api/metrics/timeline?range=1y');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'unknown range "1y"', ranges: ['1h', '24h', '7d'] });
  });

  it('buildTimeline aligns buckets to their size and fills the gaps', async () => {
    const calls: Array<[number, number]> = [];
    const t = await buildTimeline((since, size) => (calls.push([since, size]), [{ start: since + size, count: 3, costUsd: 1 }]), 10_500, 1_000, 4);
    expect(t).toEqual({
      bucketMs: 1_000,
      since: 7_000,
      until: 11_000,
      buckets: [
        { start: 7_000, count: 0, costUsd: 0 },
        { start: 8_000, count: 3, costUsd: 1 },
        { start: 9_000, count: 0, costUsd: 0 },
        { start: 10_000, count: 0, costUsd: 0 },
      ],
    });
    expect(calls).toEqual([[7_000, 1_000]]);
  });

  it('GET /api/escalations: failed, aborted and [ESCALATE] replies, newest first, with source and chat', async () => {
    s = await startTestServer();
    await drain(await s.api('/chat', { json: { message: 'fine', sessionKey: 'a' } }));
    await drain(await s.api('/chat', { json: { message: 'FAIL:engine broke', sessionKey: 'b' } }));
    await drain(await s.api('/chat', { json: { message: 'SAY:[ESCALATE] refund above limit', sessionKey: 'c' } }));
    const running = s.api('/chat', { json: { message: 'HANG', sessionKey: 'd' } });
    const server = s;
    await until(() => server.standIn.runs().some((r) => String(r.prompt ?? '').includes('HANG')), HANG_MS, 'the hanging turn to start');
    await s.api('/abort', { json: { sessionKey: 'd' } });
    await drain(await running);
    const { escalations } = (await (await s.api('/api/escalations')).json()) as { escalations: Array<Record<string, unknown>> };
    expect(escalations.map((e) => [e.kind, e.sessionKey, e.source])).toEqual([
      ['aborted', 'd', 'http'],
      ['escalated', 'c', 'http'],
      ['failed', 'b', 'http'],
    ]);
    expect(escalations[1]).toMatchObject({
      responsePreview: '[ESCALATE] refund above limit',
      ts: expect.any(String),
      messagePreview: 'SAY:[ESCALATE] refund above limit',
    });
    expect(escalations[2]).toMatchObject({ error: expect.stringContaining('engine broke') });
    expect(((await (await s.api('/api/escalations?limit=1')).json()) as { escalations: unknown[] }).escalations).toHaveLength(1);
    expect((await s.api('/api/escalations?limit=abc')).status).toBe(400);
  });

  it('GET /api/fleet: the registry rows, peers probed for /health, this gateway not probed', async () => {
    s = await startTestServer({
      fleet: () => [
        { name: 'tester', url: 'http://127.0.0.1:1', self: true },
        { name: 'live', url: s?.url ?? '', self: false },
        { name: 'gone', url: 'http://127.0.0.1:1', self: false },
      ],
    });
    const { peers } = (await (await s.api('/api/fleet')).json()) as { peers: Array<Record<string, unknown>> };
    expect(peers).toEqual([
      { name: 'tester', url: 'http://127.0.0.1:1', self: true, healthy: true },
      { name: 'live', url: s.url, self: false, healthy: true },
      { name: 'gone', url: 'http://127.0.0.1:1', self: false, healthy: false, healthError: expect.any(String) },
    ]);
  });

  it('GET /api/status carries the directory, each channel’s platform name and why a channel failed', async () => {
    s = await startTestServer({
      hub: {
        statuses: () => [
          { type: 'channel_d', title: 'Slack', status: 'failed', reason: 'invalid_auth' },
          { type: 'channel_x', status: 'connected' },
        ],
        list: () => [],
        send: async () => ({ ok: true }),
      },
    });
    const status = (await (await s.api('/api/status')).json()) as Record<string, unknown>;
    expect(status).toMatchObject({ dir: s.dir });
    expect(status.channels).toEqual([
      { type: 'channel_d', title: 'Slack', status: 'failed', reason: 'invalid_auth' },
      { type: 'channel_x', status: 'connected' },
    ]);
  });

  it('GET /api/events opens at once, before any activity, and its first bytes are the first event (no opening comment)', async () => {
    s = await startTestServer();
    const ctl = new AbortController();
    const res = await s.api('/api/events', { signal: ctl.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body?.getReader();
    if (!reader) throw new Error('no body');
    await drain(await s.api('/chat', { json: { message: 'first activity' } }));
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toMatch(/^data: \{.*"messagePreview":"first activity"/);
    ctl.abort();
  });
});
