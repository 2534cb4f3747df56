import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { type Family, parsePrometheusText, valueOf } from '../../helpers/prometheus-text.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { poll } from '../../helpers/wait.js';

/**
 * Issue 35, item 3: GET /metrics in the Prometheus text format, read by a strict parser of the
 * exposition format, its counters moving after real turns (stand-in engine), and reading the
 * same counters as the dashboard's GET /api/status.
 */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

async function scrape(server: TestServer): Promise<Map<string, Family>> {
  const res = await server.api('/metrics');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheusText(await res.text());
}

/** Prometheus's own reader of the text format, where it is installed (.ci/run takes it out of Debian's prometheus package). */
const promtool = !spawnSync('promtool', ['--version']).error;
if (!promtool) console.warn("metrics.test.ts: promtool is not on PATH, so Prometheus's own reader is not run (the strict parser of test/helpers is)");

const chat = async (server: TestServer, message: string, sessionKey = 'm1') => (await server.api('/chat', { json: { message, sessionKey } })).text();
const http = (outcome: string) => ({ engine: 'engine_b', source: 'http', outcome });

describe('GET /metrics', () => {
  it('needs the token; every family the issue lists is there, typed, before any turn', async () => {
    s = await startTestServer();
    expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${s.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
    const m = await scrape(s);
    const types = Object.fromEntries([...m.values()].map((f) => [f.name, f.type]));
    expect(types).toMatchObject({
      service_turns_total: 'counter',
      service_turn_duration_seconds: 'histogram',
      service_turn_first_text_seconds: 'histogram',
      service_turns_running: 'gauge',
      service_turns_queued: 'gauge',
      service_engine_processes: 'gauge',
      service_channel_connected: 'gauge',
      service_channel_messages_total: 'counter',
      service_approvals_waiting: 'gauge',
      service_pairings_pending: 'gauge',
      service_turn_cost_usd_total: 'counter',
      service_recorded_cost_usd: 'gauge',
      service_store_errors_total: 'counter',
      process_cpu_seconds_total: 'counter',
      process_resident_memory_bytes: 'gauge',
    });
    expect(valueOf(m, 'service_turns_running')).toBe(0);
    expect(valueOf(m, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(valueOf(m, 'service_info', { version: '0.0.0-test', engine: 'engine_b' })).toBe(1);
  });

  it('counters move after a turn, and /api/status reports the same numbers', async () => {
    s = await startTestServer();
    await chat(s, 'SAY:first');
    const one = await scrape(s);
    expect(valueOf(one, 'service_turns_total', http('completed'))).toBe(1);
    await chat(s, 'SAY:second');
    await chat(s, 'FAIL:the model is down');
    const m = await scrape(s);
    expect(valueOf(m, 'service_turns_total', http('completed'))).toBe(2);
    expect(valueOf(m, 'service_turns_total', http('failed'))).toBe(1);
    const count = (name: string) => valueOf(m, name, { engine: 'engine_b' }, `${name}_count`);
    expect(count('service_turn_duration_seconds')).toBe(3);
    expect(count('service_turn_first_text_seconds')).toBe(2); // the failed turn wrote no text
    expect(valueOf(m, 'service_turn_duration_seconds', { engine: 'engine_b', le: '+Inf' }, 'service_turn_duration_seconds_bucket')).toBe(3);
    // The stand-in reports 0.0123 USD per answered turn, as Claude Code's result line does.
    expect(valueOf(m, 'service_turn_cost_usd_total', { engine: 'engine_b', source: 'http' })).toBeCloseTo(0.0246, 6);
    expect(valueOf(m, 'service_recorded_messages_total', { source: 'http' })).toBe(3);
    expect(valueOf(m, 'service_recorded_cost_usd')).toBeCloseTo(0.0246, 6);
    expect(valueOf(m, 'service_cost_today_usd')).toBeCloseTo(0.0246, 6);

    const status = (await (await s.api('/api/status')).json()) as {
      metrics: { totalMessages: number; totalCostUsd: number };
      live: { turns: Array<{ outcome: string; count: number; costUsd: number }>; engineProcesses: number; approvalsWaiting: number };
    };
    const byOutcome = Object.fromEntries(status.live.turns.map((t) => [t.outcome, t.count]));
    expect(byOutcome).toEqual({ completed: valueOf(m, 'service_turns_total', http('completed')), failed: valueOf(m, 'service_turns_total', http('failed')) });
    expect(status.metrics.totalMessages).toBe(valueOf(m, 'service_recorded_messages_total', { source: 'http' }));
    expect(status.metrics.totalCostUsd).toBe(valueOf(m, 'service_recorded_cost_usd'));
    expect(status.live.engineProcesses).toBe(0);
    expect(status.live.approvalsWaiting).toBe(0);
  });

  it.skipIf(!promtool)(
    "Prometheus's own reader (promtool check metrics) reads a scrape after turns, and finds nothing to say about the service's families",
    async () => {
      s = await startTestServer();
      await chat(s, 'SAY:first');
      await chat(s, 'FAIL:the model is down');
      const text = await (await s.api('/metrics')).text();
      expect(valueOf(parsePrometheusText(text), 'service_turns_total', http('failed'))).toBe(1);
      const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      // 1: the text could not be read; 3: read, with naming advice (only about prom-client's own
      // nodejs_active_*_total gauges, which it names so); 0: nothing to say.
      expect([0, 3], r.stderr).toContain(r.status);
      const said = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() !== '');
      expect(said.filter((l) => !/^nodejs_active_\w+_total non-counter metrics should not have "_total" suffix$/.test(l))).toEqual([]);
    },
  );

  it("a scheduled task's turn is counted with source cron", async () => {
    s = await startTestServer({ yaml: 'tasks:\n  - id: daily\n    name: Daily\n    schedule: "0 9 * * *"\n    prompt: SAY:all quiet\n' });
    expect(await (await s.api('/api/tasks/daily/run', { method: 'POST' })).text()).toContain('"finalText":"all quiet"');
    const m = await poll(async () => {
      const now = await scrape(s as TestServer);
      return valueOf(now, 'service_turns_total', { engine: 'engine_b', source: 'cron', outcome: 'completed' }) === 1 ? now : undefined;
    });
    expect(valueOf(m, 'service_turns_total', http('completed'))).toBeUndefined();
    expect(valueOf(m, 'service_turn_duration_seconds', { engine: 'engine_b' }, 'service_turn_duration_seconds_count')).toBe(1);
  });

  it('running and queued turns, live engine processes, a refused turn, an aborted one', async () => {
    s = await startTestServer({ yaml: 'maxQueuePerSession: 1\n' });
    const server = s;
    const hanging = chat(server, 'HANG', 'k');
    const queued = chat(server, 'SAY:after', 'k');
    const m = await poll(
      async () => {
        const now = await scrape(server);
        return valueOf(now, 'service_turns_queued') === 1 && (valueOf(now, 'service_engine_processes') ?? 0) >= 1 ? now : undefined;
      },
      undefined,
      'a running turn with its engine, and one queued behind it',
    );
    expect(valueOf(m, 'service_turns_running')).toBe(1);
    expect(await chat(server, 'SAY:too many', 'k')).toMatch(/too many/i);
    await server.api('/abort', { json: { sessionKey: 'k' } });
    await hanging;
    await queued;
    const after = await scrape(server);
    expect(valueOf(after, 'service_turns_total', http('refused'))).toBe(1);
    expect(valueOf(after, 'service_turns_total', http('aborted'))).toBe(1);
    expect(valueOf(after, 'service_turns_total', http('completed'))).toBe(1);
    expect(valueOf(after, 'service_turns_running')).toBe(0);
    expect(valueOf(after, 'service_engine_processes')).toBe(0);
  });

  it('a failed store operation is counted by operation', async () => {
    s = await startTestServer({ yaml: 'tasks:\n  - { id: daily, name: Daily, schedule: "0 9 * * *", prompt: hi }\n' });
    const m0 = await scrape(s);
    expect(m0.get('service_store_errors_total')?.samples).toEqual([]);
    // A real failure of the SQLite store: the table a task's history is read from is gone.
    (s.store as unknown as { db: { exec(sql: string): void } }).db.exec('DROP TABLE task_runs');
    expect((await s.api('/api/tasks/daily/history')).status).toBe(500);
    const m = await scrape(s);
    expect(valueOf(m, 'service_store_errors_total', { operation: 'taskRuns' })).toBe(1);
    const status = (await (await s.api('/api/status')).json()) as { live: { storeErrors: Record<string, number> } };
    expect(status.live.storeErrors).toEqual({ taskRuns: 1 });
  });

  it('metrics.public opens GET /metrics, and nothing else, without the token', async () => {
    s = await startTestServer({ yaml: 'metrics:\n  public: true\n' });
    const open = await fetch(`${s.url}/metrics`);
    expect(open.status).toBe(200);
    expect(parsePrometheusText(await open.text()).has('service_turns_total')).toBe(true);
    expect((await fetch(`${s.url}/api/status`)).status).toBe(401);
    expect((await fetch(`${s.url}/metrics`, { method: 'POST' })).status).toBe(401);
  });
});
