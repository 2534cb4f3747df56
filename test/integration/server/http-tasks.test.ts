import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTaskControl } from '../../../src/core/scheduler/task-control.js';
import { collect } from '../../helpers/assistant.js';
import { createRecordingHub, parseSseStrict, startTestServer, TEST_TOKEN, type TestServer } from '../../helpers/server.js';
import { until } from '../../helpers/wait.js';

/** Scheduled tasks over HTTP (GET /api/tasks, POST /api/tasks/:id/run|enable|disable, GET /api/tasks/:id/history), real sockets. */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const TASKS = `# my tasks
tasks:
  - id: report
    name: Daily report
    schedule: "0 9 * * *" # nine o'clock
    prompt: SAY:All quiet today.
    target: { channel: channel_e, chatId: "42" }
  - id: slow
    name: Slow one
    schedule: "*/5 * * * *"
    prompt: SLEEP:1500 slowly
  - id: off
    name: Switched off
    schedule: "0 0 1 1 *"
    prompt: never
    enabled: false
`;

type Json = Record<string, unknown>;
const json = async (res: Response) => (await res.json()) as Json;

describe('scheduled tasks over HTTP', () => {
  it('GET /api/tasks lists every task with schedule, next run, running and last status; the token is required', async () => {
    s = await startTestServer({ yaml: TASKS });
    expect((await fetch(`${s.url}/api/tasks`)).status).toBe(401);
    const body = await json(await s.api('/api/tasks'));
    expect(body.scheduled).toBe(false); // no scheduler in this process (the gateway says true)
    const tasks = body.tasks as Json[];
    expect(tasks.map((t) => t.id)).toEqual(['report', 'slow', 'off']);
    expect(tasks[0]).toEqual({
      id: 'report',
      name: 'Daily report',
      schedule: '0 9 * * *',
      enabled: true,
      target: { channel: 'channel_e', chatId: '42' },
      nextRun: expect.any(String),
      running: false,
      lastRun: null,
    });
    const next = new Date(String(tasks[0]?.nextRun));
    expect(next.toISOString()).toBe(tasks[0]?.nextRun);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect(next.getHours()).toBe(9);
    expect(tasks[2]).toMatchObject({ id: 'off', enabled: false, nextRun: null });
  });

  it('POST /api/tasks/:id/run streams the run like /chat; the run is then recorded, delivered and shown as the last status', async () => {
    const hub = createRecordingHub({ channel_e: { canSend: true } });
    s = await startTestServer({ yaml: TASKS, hub });
    const res = await s.api('/api/tasks/report/run', { method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = parseSseStrict(await res.text()) as Json[];
    expect(events.slice(-2).map((e) => e.type)).toEqual(['done', 'completion']);
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: 'All quiet today.' });
    expect(
      events
        .filter((e) => e.type === 'text')
        .map((e) => e.content)
        .join(''),
    ).toBe('All quiet today.');
    // The stream ends once the run is recorded: what follows sees it.
    expect(hub.sent).toEqual([{ channel: 'channel_e', chatId: '42', text: 'All quiet today.' }]);
    const [report] = (await json(await s.api('/api/tasks'))).tasks as Json[];
    expect(report?.lastRun).toMatchObject({
      taskId: 'report',
      status: 'completed',
      delivered: true,
      preview: 'All quiet today.',
      startedAt: expect.any(String),
    });
    const history = await json(await s.api('/api/tasks/report/history'));
    expect(history).toEqual({ id: 'report', runs: [expect.objectContaining({ status: 'completed', delivered: true })] });
    // The same run log the terminal's /cron history reads.
    expect(await s.tasks.history('report', 10)).toHaveLength(1);
  });

  it('a second run of a task while one is going is refused (409); unknown ids are 404 with the known ones', async () => {
    s = await startTestServer({ yaml: TASKS });
    const first = await s.api('/api/tasks/slow/run', { method: 'POST' });
    await until(() => s?.standIn.runs().length === 1, 10_000, 'the run to start');
    expect(((await json(await s.api('/api/tasks'))).tasks as Json[])[1]).toMatchObject({ id: 'slow', running: true });
    const again = await s.api('/api/tasks/slow/run', { method: 'POST' });
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ error: 'task slow is running; wait for that run to end', reason: 'running' });
    expect((parseSseStrict(await first.text()) as Json[]).at(-1)).toMatchObject({ status: 'completed' });
    expect(((await json(await s.api('/api/tasks'))).tasks as Json[])[1]).toMatchObject({ running: false, lastRun: { status: 'completed' } });

    for (const [method, p] of [
      ['POST', '/api/tasks/nope/run'],
      ['POST', '/api/tasks/nope/enable'],
      ['POST', '/api/tasks/nope/disable'],
      ['GET', '/api/tasks/nope/history'],
    ] as const) {
      const res = await s.api(p, { method });
      expect(res.status, p).toBe(404);
      expect(await res.json()).toEqual({ error: 'no task with id "nope"', tasks: ['report', 'slow', 'off'] });
    }
    expect((await s.api('/api/tasks/report/history?limit=0')).status).toBe(400);
    expect((await s.api('/api/tasks/report/history?limit=abc')).status).toBe(400);
    expect((await fetch(`${s.url}/api/tasks/report/run`, { method: 'POST' })).status).toBe(401);
  });

  it('enable and disable write service.yaml (comments kept) and change next run; the list follows', async () => {
    s = await startTestServer({ yaml: TASKS });
    const file = path.join(s.dir, 'service.yaml');
    const off = await json(await s.api('/api/tasks/report/disable', { method: 'POST' }));
    expect(off).toMatchObject({ ok: true, task: { id: 'report', enabled: false, nextRun: null } });
    expect(fs.readFileSync(file, 'utf8')).toContain('schedule: "0 9 * * *" # nine o\'clock');
    expect(s.config.current().config.tasks[0]?.enabled).toBe(false);
    const on = await json(await s.api('/api/tasks/off/enable', { method: 'POST' }));
    expect(on).toMatchObject({ ok: true, task: { id: 'off', enabled: true, nextRun: expect.any(String) } });
    const listed = (await json(await s.api('/api/tasks'))).tasks as Json[];
    expect(listed.map((t) => [t.id, t.enabled])).toEqual([
      ['report', false],
      ['slow', true],
      ['off', true],
    ]);
    expect(fs.readFileSync(file, 'utf8')).toContain('# my tasks\n');
  });

  it('history is newest first and bounded by ?limit', async () => {
    s = await startTestServer({ yaml: TASKS });
    for (let i = 0; i < 3; i++) await (await s.api('/api/tasks/report/run', { method: 'POST' })).text();
    const runs = (await json(await s.api('/api/tasks/report/history?limit=2'))).runs as Json[];
    expect(runs).toHaveLength(2);
    expect(String(runs[0]?.startedAt) >= String(runs[1]?.startedAt)).toBe(true);
    expect(runs[0]).toMatchObject({ status: 'completed', delivered: false, error: expect.stringContaining('delivery to channel_e failed') });
  });

  it('a scheduled time that comes while a run started by hand is going is skipped and recorded', async () => {
    s = await startTestServer({ yaml: TASKS });
    const control = createTaskControl({ config: s.config, runner: s.tasks, scheduled: true, log: s.log });
    const start = control.run('slow');
    if (!start.ok) throw new Error(start.error);
    const task = s.config.current().config.tasks[1];
    if (!task) throw new Error('no task');
    await control.runScheduled(task);
    expect((await control.history('slow', 5))?.map((r) => r.status)).toEqual(['skipped']);
    expect((await collect(start.events)).at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    expect((await control.history('slow', 5))?.map((r) => r.status)).toEqual(['completed', 'skipped']);
  });

  it('?token= does not open the task routes', async () => {
    s = await startTestServer({ yaml: TASKS });
    expect((await fetch(`${s.url}/api/tasks?token=${TEST_TOKEN}`)).status).toBe(401);
  });
});
