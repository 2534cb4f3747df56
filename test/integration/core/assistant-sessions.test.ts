import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../../src/core/store/sqlite-store.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { openAssistantDirectory } from '../../../src/assistant-directory.js';
import { assertEnding, collect, completionOf, createTestAssistant, imagesDirOf } from '../../helpers/assistant.js';
import { runCli } from '../../helpers/cli.js';
import { HANG_MS, until } from '../../helpers/wait.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex').toString('base64');

describe('chat core: sessions', () => {
  it("no lost sessions: 50 keys × 4 turns, 10 in flight, every later turn resumes its own key's session", async () => {
    const t = createTestAssistant({ yaml: 'maxConcurrent: 10\n' });
    const keys = Array.from({ length: 50 }, (_, i) => `user-${i}`);
    const jobs = keys.flatMap((k) => [1, 2, 3, 4].map((n) => ({ k, n })));
    // a pool of 10 workers: each key's turns are issued in order by whichever worker takes them
    const nextTurn = new Map(keys.map((k) => [k, 1]));
    const results: Array<{ k: string; n: number; text: string }> = [];
    const cursor = 0;
    const worker = async () => {
      for (;;) {
        const i = jobs.findIndex((j, idx) => idx >= cursor && nextTurn.get(j.k) === j.n && !(j as { taken?: boolean }).taken);
        if (i < 0) {
          if (jobs.every((j) => (j as { taken?: boolean }).taken)) return;
          await new Promise((r) => setTimeout(r, 5));
          continue;
        }
        const job = jobs[i] as { k: string; n: number; taken?: boolean };
        job.taken = true;
        const events = await collect(t.assistant.chat(`turn ${job.n} of ${job.k}`, { sessionKey: job.k }));
        const done = completionOf(events);
        // A turn that did not complete shows why, where its text would be.
        results.push({ k: job.k, n: job.n, text: done.status === 'completed' ? (done.finalText ?? '') : `${done.status}: ${done.message ?? ''}` });
        nextTurn.set(job.k, job.n + 1);
      }
    };
    await Promise.all(Array.from({ length: 10 }, worker));
    void cursor;
    expect(results).toHaveLength(200);
    for (const r of results) expect(r.text).toBe(`ECHO: turn ${r.n} of ${r.k}\nTURN: ${r.n}`);
    const runs = t.standIn.runs() as Array<{ prompt: string; sessionIn: string | null; sessionOut: string }>;
    const firstSession = new Map(runs.filter((r) => / 1 of /.test(r.prompt)).map((r) => [r.prompt.split(' of ')[1], r.sessionOut]));
    const later = runs.filter((r) => !/ 1 of /.test(r.prompt));
    expect(later).toHaveLength(150);
    for (const r of later) expect(r.sessionIn).toBe(firstSession.get(r.prompt.split(' of ')[1]));
    t.close();
  });

  it('a session keeps the time it was created across turns; each turn counts and moves updatedAt', async () => {
    const t = createTestAssistant();
    await collect(t.assistant.chat('one', { sessionKey: 'k' }));
    const first = await t.store.getSession('k');
    expect(first).toMatchObject({ engine: 'engine_b', turns: 1 });
    await new Promise((r) => setTimeout(r, 5)); // a later millisecond for the second turn
    await collect(t.assistant.chat('two', { sessionKey: 'k' }));
    const second = await t.store.getSession('k');
    expect(second).toMatchObject({ sessionId: first?.sessionId, createdAt: first?.createdAt, turns: 2 });
    expect(second?.updatedAt).toBeGreaterThan(first?.updatedAt ?? Number.POSITIVE_INFINITY);
    t.close();
  });

  it('a session saved by another engine is not resumed', async () => {
    const t = createTestAssistant();
    await t.store.saveSession({ key: 'k', engine: 'engine_d', sessionId: 'codex-thread', createdAt: Date.now(), updatedAt: Date.now() });
    const events = await collect(t.assistant.chat('hello', { sessionKey: 'k' }));
    expect(completionOf(events).finalText).toBe('ECHO: hello\nTURN: 1');
    expect((t.standIn.runs()[0] as { sessionIn: string | null }).sessionIn).toBeNull();
    expect((await t.store.getSession('k'))?.engine).toBe('engine_b');
    t.close();
  });

  it('idle sessions are pruned at start-up, before any chat', async () => {
    const t = createTestAssistant({ yaml: 'sessionTtlDays: 2\n' });
    t.close();
    const store = createSqliteStore(path.join(t.dir, '.service', 'state.db'));
    const day = 86_400_000;
    await store.saveSession({ key: 'stale', engine: 'engine_b', sessionId: 's', createdAt: Date.now() - 10 * day, updatedAt: Date.now() - 3 * day });
    await store.saveSession({ key: 'fresh', engine: 'engine_b', sessionId: 'f', createdAt: Date.now(), updatedAt: Date.now() - day });
    await store.close();
    const reopened = openAssistantDirectory({ dir: t.dir, log: createSilentLogger(), env: { ...process.env, ...t.standIn.env } });
    expect(await reopened.store.getSession('stale')).toBeUndefined();
    expect((await reopened.store.getSession('fresh'))?.sessionId).toBe('f');
    reopened.close();
  });

  it('metrics and activity survive a restart', async () => {
    const t = createTestAssistant();
    await collect(t.assistant.chat('hi', { source: 'channel_e', sender: 'alice' }));
    t.close();
    const again = openAssistantDirectory({ dir: t.dir, log: createSilentLogger(), env: { ...process.env, ...t.standIn.env } });
    expect(await again.assistant.metrics()).toMatchObject({ totalMessages: 1, messagesBySource: { channel_e: 1 } });
    expect((await again.assistant.recentActivity(5))[0]).toMatchObject({ source: 'channel_e', sender: 'alice', messagePreview: 'hi', status: 'completed' });
    again.close();
  });

  it('two processes use one assistant directory at once', async () => {
    const t = createTestAssistant();
    const other = Promise.all(
      [1, 2, 3].map((i) => runCli(['chat', '-d', t.dir, '-s', `cli-${i}`, '-m', `from the other process ${i}`], { env: t.standIn.env })),
    );
    const here = Promise.all([1, 2, 3].map((i) => collect(t.assistant.chat(`from this process ${i}`, { sessionKey: `in-${i}` }))));
    const [cli, local] = await Promise.all([other, here]);
    for (const r of cli) {
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
    }
    for (const events of local) expect(completionOf(events).status).toBe('completed');
    expect((await t.store.listSessions()).map((s) => s.key).sort()).toEqual(['cli-1', 'cli-2', 'cli-3', 'in-1', 'in-2', 'in-3']);
    expect((await t.assistant.metrics()).totalMessages).toBe(6);
    t.close();
  });
});

describe('chat core: images', () => {
  const listOutside = (dir: string) => fs.readdirSync(dir).sort();

  it.each([
    ['success', 'look at this', 'completed'],
    ['failure', 'FAIL: cannot see', 'failed'],
  ])('the file exists during the turn and is gone after it (%s)', async (_name, prompt, status) => {
    const t = createTestAssistant();
    const events = await collect(t.assistant.chat(prompt, { images: [{ data: PNG, mimeType: 'image/png', fileName: 'cat.png' }] }));
    expect(completionOf(events).status).toBe(status);
    const [run] = t.standIn.runs() as Array<{ images: Array<{ path: string; exists: boolean; bytes: number }> }>;
    expect(run?.images).toEqual([{ path: expect.stringMatching(new RegExp(`^${imagesDirOf(t.dir)}/[0-9a-f-]{36}\\.png$`)), exists: true, bytes: 29 }]);
    expect(fs.readdirSync(imagesDirOf(t.dir))).toEqual([]);
    t.close();
  });

  it('is gone after an abort, and an image without a message becomes "(image)"', async () => {
    const t = createTestAssistant();
    const turn = collect(t.assistant.chat('HANG', { images: [{ data: PNG }] }));
    await until(() => t.standIn.runs().length > 0, HANG_MS, 'the engine to start');
    expect(fs.readdirSync(imagesDirOf(t.dir))).toHaveLength(1);
    t.assistant.abort('default');
    expect(completionOf(await turn).status).toBe('aborted');
    expect(fs.readdirSync(imagesDirOf(t.dir))).toEqual([]);
    const only = await collect(t.assistant.chat('', { sessionKey: 'img', images: [{ data: PNG }] }));
    expect(completionOf(only).finalText).toMatch(/^ECHO: \(image\)/);
    t.close();
  });

  it('a fileName with ../ writes nothing outside .service/images/', async () => {
    const t = createTestAssistant();
    await collect(t.assistant.chat('warm up: writes the context files'));
    const before = { root: listOutside(t.dir), parent: listOutside(path.dirname(t.dir)) };
    const events = await collect(
      t.assistant.chat('x', {
        images: [
          { data: PNG, fileName: '../../x' },
          { data: PNG, fileName: '/etc/passwd' },
        ],
      }),
    );
    expect(completionOf(events).status).toBe('completed');
    expect(listOutside(t.dir)).toEqual(before.root);
    expect(listOutside(path.dirname(t.dir))).toEqual(before.parent);
    t.close();
  });

  it('rejects bad images with clear errors before running anything', async () => {
    const t = createTestAssistant();
    const cases: Array<[object[], string]> = [
      [[{ data: 'not base64!!' }], 'images[0]: data is not valid base64'],
      [[{ data: PNG, mimeType: 'application/pdf' }], 'images[0]: unsupported type "application/pdf"'],
      [Array.from({ length: 6 }, () => ({ data: PNG })), 'Too many images: 6 (limit: 5 per message)'],
      [[{ data: Buffer.alloc(5 * 1024 * 1024 + 1).toString('base64') }], 'images[0]: 5242881 bytes is over the limit of 5242880 bytes'],
    ];
    for (const [images, message] of cases) {
      const events = await collect(t.assistant.chat('x', { images: images as never }));
      assertEnding(events);
      expect(completionOf(events)).toMatchObject({ status: 'failed', message: expect.stringContaining(message) });
    }
    expect(t.standIn.runs()).toEqual([]);
    t.close();
  });
});

describe('slash commands', () => {
  it('answers /help, /status, /skill, /model list exactly, and unknown commands helpfully', async () => {
    const t = createTestAssistant({ files: { 'skills/notes/SKILL.md': '---\nname: notes\ndescription: Keep notes.\n---\n' } });
    expect((await t.assistant.runCommand('/help')).text).toContain('/model [list|name]');
    expect((await t.assistant.runCommand('/status')).text).toContain('tester on engine_b');
    expect(await t.assistant.runCommand('/skill')).toMatchObject({ type: 'command', skills: [{ name: 'notes', description: 'Keep notes.' }] });
    const list = await t.assistant.runCommand('/model list');
    expect(Object.keys(list).sort()).toEqual(['engine', 'models', 'text', 'type']);
    expect(list).toMatchObject({ type: 'command', engine: 'engine_b', models: expect.arrayContaining(['sonnet']) });
    expect((await t.assistant.runCommand('/frobnicate')).text).toContain('Unknown command "/frobnicate". Try /help');
    t.close();
  });

  it('/engine and /model persist through write-back; channels may not change config', async () => {
    const t = createTestAssistant({ yaml: '# keep me\ntimeout: 60 # seconds\n' });
    const refused = await t.assistant.runCommand('/engine engine_d', { allowConfigChanges: false });
    expect(refused.error).toBe('not_allowed_here');
    expect((await t.assistant.runCommand('/model opus')).text).toBe('Model switched to opus.');
    expect((await t.assistant.runCommand('/engine engine_d')).engine).toBe('engine_d');
    const text = fs.readFileSync(path.join(t.dir, 'service.yaml'), 'utf8');
    expect(text).toContain('engine: engine_d\n');
    expect(text).toContain('model: opus');
    expect(text).toContain('# keep me\ntimeout: 60 # seconds\n');
    expect(t.config.current().config.engine).toBe('engine_d');
    t.close();
  });

  it('/engine lists every engine; switching to acp needs its acp block, and a refused switch changes nothing', async () => {
    const t = createTestAssistant();
    expect((await t.assistant.runCommand('/engine')).text).toBe(
      'Engine: engine_b (Claude Code)\nAvailable: engine_a (Cursor agent CLI, alias cursor), engine_b (Claude Code, alias claude), engine_c (OpenCode, alias opencode), engine_d (Codex CLI, alias codex), engine_e (Gemini CLI, alias gemini), engine_f (Qwen Code, alias qwen), acp (ACP agent)',
    );
    // The program's name is taken and the id written; a name that is no engine (not even an Object key) changes nothing.
    expect(await t.assistant.runCommand('/engine qwen')).toMatchObject({
      engine: 'engine_f',
      text: expect.stringContaining('switched to engine_f (Qwen Code)'),
    });
    expect(fs.readFileSync(path.join(t.dir, 'service.yaml'), 'utf8')).toContain('engine: engine_f\n');
    for (const name of ['claud', 'constructor']) {
      expect(await t.assistant.runCommand(`/engine ${name}`)).toMatchObject({
        error: 'unknown_engine',
        text: expect.stringContaining('engine_b (Claude Code, alias claude)'),
      });
    }
    expect(t.config.current().config.engine).toBe('engine_f');
    expect((await t.assistant.runCommand('/engine engine_e')).engine).toBe('engine_e');
    expect(await t.assistant.runCommand('/engine acp')).toMatchObject({
      error: 'command_failed',
      text: expect.stringContaining('acp.command: engine acp needs acp.command: the program that speaks ACP on stdio'),
    });
    expect(fs.readFileSync(path.join(t.dir, 'service.yaml'), 'utf8')).toContain('engine: engine_e\n');
    expect(t.config.current().config.engine).toBe('engine_e');
    t.close();
  });

  it('/stop aborts the running turn of the key; /reset clears it', async () => {
    const t = createTestAssistant();
    const turn = collect(t.assistant.chat('HANG', { sessionKey: 'k' }));
    await until(() => t.standIn.runs().length > 0, HANG_MS, 'the engine to start');
    expect(await t.assistant.runCommand('/stop', { sessionKey: 'k' })).toMatchObject({ aborted: true });
    expect(completionOf(await turn).status).toBe('aborted');
    expect((await t.assistant.runCommand('/reset', { sessionKey: 'k' })).text).toContain('Session reset');
    expect(await t.store.getSession('k')).toBeUndefined();
    t.close();
  });

  it('a /reset while a turn runs wins: the aborted turn saves neither its session nor its reply, and the next turn starts afresh', async () => {
    const t = createTestAssistant();
    const turn = collect(t.assistant.chat('HANG', { sessionKey: 'k' }));
    // The engine named its session at the start of the turn, and it was saved then.
    await until(async () => (await t.store.getSession('k'))?.sessionId != null, undefined, 'the running turn to save its session');
    expect((await t.assistant.runCommand('/reset', { sessionKey: 'k' })).text).toContain('Session reset');
    expect(completionOf(await turn).status).toBe('aborted');
    expect(await t.store.getSession('k')).toBeUndefined();
    expect(await t.store.readHistory('k')).toEqual([]);
    const next = await collect(t.assistant.chat('hello again', { sessionKey: 'k' }));
    expect(completionOf(next).status).toBe('completed');
    const runs = t.standIn.runs() as Array<{ prompt: string; sessionIn: string | null }>;
    expect(runs.find((r) => r.prompt.startsWith('hello again'))).toMatchObject({ sessionIn: null });
    t.close();
  });

  it('/cron enable, disable and del change service.yaml; list shows tasks', async () => {
    const t = createTestAssistant({ yaml: 'tasks:\n  - id: daily\n    name: Daily\n    schedule: "0 9 * * *"\n    prompt: hi\n' });
    expect((await t.assistant.runCommand('/cron list')).text).toMatch(/daily\s+yes\s/);
    await t.assistant.runCommand('/cron disable daily');
    expect(t.config.current().config.tasks[0]?.enabled).toBe(false);
    expect((await t.assistant.runCommand('/cron del nope')).error).toBe('task_not_found');
    await t.assistant.runCommand('/cron del daily');
    expect(t.config.current().config.tasks).toEqual([]);
    t.close();
  });

  it("/cron history is for the owner and admins only: a task delivered to the owner's DM is not read out in a chat (issue 29)", async () => {
    const t = createTestAssistant({
      yaml: 'tasks:\n  - id: report\n    name: Report\n    schedule: "0 9 * * *"\n    prompt: "private figures"\n',
    });
    await t.assistant.runCommand('/cron run report');
    const member = await t.assistant.runCommand('/cron history report', { allowConfigChanges: false, source: 'channel_e', caller: 'channel_e:2' });
    expect(member).toMatchObject({ error: 'not_allowed_here' });
    expect(member.text).not.toContain('private figures');
    expect(member.runs).toBeUndefined();
    const admin = await t.assistant.runCommand('/cron history report', { allowConfigChanges: true, source: 'channel_e', caller: 'channel_e:1' });
    expect(admin.text).toContain('Last runs of report');
    expect(admin.runs).toHaveLength(1);
    // The list (names, schedules, last status) stays open to everyone allowed.
    expect((await t.assistant.runCommand('/cron list', { allowConfigChanges: false })).text).toMatch(/report\s+yes\s/);
    t.close();
  });

  it('/cron run while a run of the same task is going is refused: the task runs once', async () => {
    const t = createTestAssistant({ yaml: 'tasks:\n  - id: slow\n    name: Slow\n    schedule: "0 9 * * *"\n    prompt: "SLEEP:1500 report"\n' });
    const first = t.assistant.runCommand('/cron run slow');
    await until(() => t.standIn.runs().length > 0, HANG_MS, 'the engine to start');
    expect(await t.assistant.runCommand('/cron run slow')).toMatchObject({ error: 'running', text: expect.stringContaining('task slow is running') });
    expect(await first).toMatchObject({ status: 'completed' });
    expect(t.standIn.runs()).toHaveLength(1);
    expect(await t.tasks.history('slow', 10)).toHaveLength(1);
    t.close();
  });
});
