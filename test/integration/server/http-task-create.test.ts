import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/server.js';

/** POST /api/tasks and DELETE /api/tasks/:id over a real socket: validation, and service.yaml edited in place. */
let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

type Json = Record<string, any>;
const YAML = `# keep this comment
channels:
  channel_e: { botToken: "\${UNSET_TG_TOKEN}" } # the bot
tasks:
  - id: daily # first task
    name: Daily
    schedule: "0 9 * * *"
    prompt: summarize
`;

describe('creating and removing tasks over HTTP', () => {
  it('POST /api/tasks writes a task (schedule or at, prompt, target) into service.yaml, comments and placeholders kept; DELETE removes it', async () => {
    s = await startTestServer({ yaml: YAML });
    const file = path.join(s.dir, 'service.yaml');
    const res = await s.api('/api/tasks', { json: { schedule: '*/30 * * * *', prompt: 'check the queue', target: { channel: 'channel_e', chatId: '42' } } });
    expect(res.status).toBe(201);
    const made = ((await res.json()) as Json).task;
    expect(made).toMatchObject({ schedule: '*/30 * * * *', enabled: true, target: { channel: 'channel_e', chatId: '42' }, running: false, lastRun: null });
    expect(made.id).toMatch(/^task-[0-9a-z]{6}$/);
    expect(made.name).toBe('check the queue');
    expect(typeof made.nextRun).toBe('string');
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const once = ((await (await s.api('/api/tasks', { json: { id: 'later', name: 'Later', at, prompt: 'remind me' } })).json()) as Json).task;
    expect(once).toMatchObject({ id: 'later', at, nextRun: at });

    const text = fs.readFileSync(file, 'utf8');
    expect(text).toContain('# keep this comment');
    expect(text).toContain('channel_e: { botToken: "${UNSET_TG_TOKEN}" } # the bot');
    expect(text).toContain('  - id: daily # first task');
    expect(text).toContain(
      `  - id: ${made.id}\n    name: check the queue\n    schedule: "*/30 * * * *"\n    prompt: check the queue\n    target:\n      channel: channel_e\n      chatId: "42"\n`,
    );
    expect(text).toContain(`  - id: later\n    name: Later\n    at: ${at}\n`);
    expect(s.config.current().config.tasks.map((t) => t.id)).toEqual(['daily', made.id, 'later']);
    expect(((await (await s.api('/api/tasks')).json()) as Json).tasks.map((t: Json) => t.id)).toEqual(['daily', made.id, 'later']);

    const del = await s.api(`/api/tasks/${made.id}`, { method: 'DELETE' });
    expect(await del.json()).toEqual({ ok: true, id: made.id });
    expect(fs.readFileSync(file, 'utf8')).not.toContain(made.id);
    expect(fs.readFileSync(file, 'utf8')).toContain('# keep this comment');
    const again = await s.api(`/api/tasks/${made.id}`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect(((await again.json()) as Json).tasks).toEqual(['daily', 'later']);
  });

  it('refuses what cannot be a task with 400 naming the field, and leaves service.yaml as it was', async () => {
    s = await startTestServer({ yaml: 'channels:\n  channel_e: { botToken: "1:x" }\n' });
    const file = path.join(s.dir, 'service.yaml');
    const before = fs.readFileSync(file, 'utf8');
    const past = new Date(Date.now() - 60_000).toISOString();
    const cases: Array<[Json, string, RegExp]> = [
      [{ prompt: 'p' }, 'schedule', /one of the two/],
      [{ prompt: 'p', schedule: '* * * * *', at: '2099-01-01T00:00:00Z' }, 'schedule', /one of the two/],
      [{ prompt: 'p', schedule: 'every day' }, 'schedule', /cron expression/],
      [{ prompt: 'p', at: 'tomorrow' }, 'at', /ISO 8601/],
      [{ prompt: 'p', at: past }, 'at', /has passed/],
      [
        { prompt: 'p', schedule: '* * * * *', target: { channel: 'channel_x', chatId: '1' } },
        'target.channel',
        /no channel "channel_x" is configured \(configured: channel_e\)/,
      ],
      [{ prompt: '   ', schedule: '* * * * *' }, 'prompt', /./],
      [{ prompt: 'p', schedule: '* * * * *', id: 'bad id' }, 'id', /letters/],
      [{ prompt: 'p', schedule: '* * * * *', colour: 'red' }, '', /colour/],
    ];
    for (const [body, field, message] of cases) {
      const res = await s.api('/api/tasks', { json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const err = (await res.json()) as Json;
      expect(err.error, JSON.stringify(body)).toMatch(message);
      if (field) expect(err.issues[0].path, JSON.stringify(body)).toBe(field);
    }
    await s.api('/api/tasks', { json: { id: 'one', prompt: 'p', schedule: '* * * * *' } });
    const dup = await s.api('/api/tasks', { json: { id: 'one', prompt: 'p', schedule: '* * * * *' } });
    expect(dup.status).toBe(400);
    expect(((await dup.json()) as Json).error).toMatch(/exists/);
    expect(fs.readFileSync(file, 'utf8')).toBe(`${before}tasks:\n  - id: one\n    name: p\n    schedule: "* * * * *"\n    prompt: p\n`);
  });
});
