import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { formatLocalDay } from '../../../src/core/util/local-day.js';
import { startTestServer, TEST_TOKEN, type TestServer } from '../../helpers/server.js';

type Event = { type: string } & Record<string, unknown>;

async function chat(s: TestServer, body: Record<string, unknown>): Promise<Event[]> {
  const res = await s.api('/chat', { json: body });
  expect(res.status).toBe(200);
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((b) => b.startsWith('data: '))
    .map((b) => JSON.parse(b.slice(6)) as Event);
}

describe('HTTP: files both ways, and GET /api/sessions', () => {
  let s: TestServer | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('a file the agent sends is a `file` event with a token URL (no local path); the URL downloads it with its own token', async () => {
    s = await startTestServer();
    const events = await chat(s, { message: 'MAKE-FILE:report.pdf:1500 MAKE-FILE:dot.png:10 SAY:Done.' });
    expect(events.map((e) => e.type)).toEqual(['text', 'file', 'file', 'done', 'completion']);
    const file: Record<string, unknown> = events.find((e) => e.type === 'file' && e.name === 'report.pdf') ?? {};
    expect(Object.keys(file).sort()).toEqual(['mimeType', 'name', 'size', 'type', 'url']);
    expect(file).toMatchObject({
      size: 1500,
      mimeType: 'application/pdf',
      url: expect.stringMatching(/^\/api\/files\/[A-Za-z0-9_-]+\/report\.pdf\?token=[A-Za-z0-9_-]{32}$/),
    });
    const url = String(file.url);

    // The link alone (no Authorization header): a browser or a phone can open it.
    const res = await fetch(`${s.url}${url}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await res.arrayBuffer())).toEqual(Buffer.alloc(1500, 0x61));
    // Its HEAD (a download manager asking the size first) takes the same link.
    const head = await fetch(`${s.url}${url}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('1500');

    // The gateway token as a Bearer header works too; nothing else does.
    const bare = url.split('?')[0] ?? '';
    expect((await s.api(bare)).status).toBe(200);
    expect((await fetch(`${s.url}${bare}`)).status).toBe(401);
    expect((await fetch(`${s.url}${bare}?token=${TEST_TOKEN}`)).status).toBe(401); // the gateway token never in a URL
    const other = String(events.find((e) => e.name === 'dot.png')?.url);
    const otherToken = other.split('token=')[1];
    expect((await fetch(`${s.url}${bare}?token=${otherToken}`)).status).toBe(401); // one file's token opens only that file
    expect((await s.api(bare.replace('report.pdf', 'other.pdf'))).status).toBe(404);
    expect((await s.api('/api/files/..%2F..%2Fservice.yaml/x')).status).toBe(404);
  });

  it('a file over 100 MB is a `file` event with `error` and no url; nothing is kept and the outbox is emptied', async () => {
    s = await startTestServer();
    const events = await chat(s, { message: 'MAKE-SPARSE:huge.bin:104857601 MAKE-FILE:ok.txt:3 SAY:Done.' });
    expect(events.filter((e) => e.type === 'file')).toEqual([
      {
        type: 'file',
        name: 'huge.bin',
        size: 104857601,
        mimeType: 'application/octet-stream',
        error: 'not sent: 104857601 bytes is over the limit of 104857600 bytes',
      },
      { type: 'file', name: 'ok.txt', size: 3, mimeType: 'text/plain', url: expect.stringContaining('/api/files/') },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    const service = path.join(s.dir, '.service');
    expect(fs.readdirSync(path.join(service, 'outbox'))).toEqual([]);
    const kept = fs.readdirSync(path.join(service, 'files')).flatMap((id) => fs.readdirSync(path.join(service, 'files', id)));
    expect(kept).toEqual(['ok.txt']);
  });

  it('/chat takes `files` (base64) like `images`: saved into inbox/ and named in the prompt; bad ones are 400 or refused in the stream', async () => {
    s = await startTestServer();
    const events = await chat(s, { message: 'read it', files: [{ name: 'data.csv', data: Buffer.from('a,b\n1,2\n').toString('base64') }] });
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    const day = formatLocalDay(Date.now());
    expect(fs.readFileSync(path.join(s.dir, 'inbox', day, 'data.csv'), 'utf8')).toBe('a,b\n1,2\n');
    expect((s.standIn.runs()[0] as { prompt: string }).prompt).toContain(`- inbox/${day}/data.csv (8 B, text/csv)`);

    expect((await chat(s, { files: [{ name: 'only.txt', data: Buffer.from('x').toString('base64') }] })).at(-1)).toMatchObject({ status: 'completed' });
    const missing = await s.api('/chat', { json: { files: [{ data: 'eA==' }] } });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { issues: Array<{ path: string }> }).issues[0]?.path).toBe('files[0].name');
    expect((await s.api('/chat', { json: {} })).status).toBe(400);
    const bad = await chat(s, { message: 'x', files: [{ name: 'a', data: '***' }] });
    expect(bad.at(-1)).toMatchObject({ status: 'failed', message: 'files[0]: data is not valid base64' });
  });

  it('a right-to-left override in a file name is replaced, in (saved into inbox/) and out (sent by the agent)', async () => {
    s = await startTestServer();
    const events = await chat(s, {
      message: 'MAKE-FILE:report\u202Efdp.exe:4 SAY:Done.',
      files: [{ name: 'invoice\u202Efdp.exe', data: Buffer.from('x').toString('base64') }],
    });
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    const day = formatLocalDay(Date.now());
    expect(fs.readdirSync(path.join(s.dir, 'inbox', day))).toEqual(['invoice_fdp.exe']);
    expect((s.standIn.runs()[0] as { prompt: string }).prompt).toContain(`- inbox/${day}/invoice_fdp.exe`);
    const sent = events.find((e) => e.type === 'file');
    expect(sent).toMatchObject({ name: 'report_fdp.exe', url: expect.stringContaining('/report_fdp.exe?token=') });
  });

  it('GET /api/sessions lists every key with its last activity, turns and, for named sessions of a chat, the chat and name', async () => {
    s = await startTestServer();
    await chat(s, { message: 'hi', sessionKey: 'alpha' });
    await chat(s, { message: 'again', sessionKey: 'alpha' });
    // A chat with named sessions (as a channel or the terminal makes them).
    await s.assistant.runCommand('/new ideas', { chatKey: 'channel_e:dm:1001' });
    const res = await s.api('/api/sessions');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { total: number; sessions: Array<Record<string, unknown>> };
    expect(body.total).toBe(3);
    expect(body.sessions).toEqual(
      expect.arrayContaining([
        { key: 'alpha', lastActivity: expect.any(String), createdAt: expect.any(String), turns: 2, engine: 'engine_b' },
        {
          key: 'channel_e:dm:1001',
          lastActivity: expect.any(String),
          createdAt: expect.any(String),
          turns: 0,
          chat: 'channel_e:dm:1001',
          name: 'main',
          current: false,
        },
        {
          key: 'channel_e:dm:1001#ideas',
          lastActivity: expect.any(String),
          createdAt: expect.any(String),
          turns: 0,
          chat: 'channel_e:dm:1001',
          name: 'ideas',
          current: true,
        },
      ]),
    );
    const times = body.sessions.map((x) => Date.parse(String(x.lastActivity)));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(((await (await s.api('/api/sessions?limit=1')).json()) as { sessions: unknown[] }).sessions).toHaveLength(1);
    expect((await s.api('/api/sessions?limit=0')).status).toBe(400);
    expect((await fetch(`${s.url}/api/sessions`)).status).toBe(401);
    // Over HTTP the named-session commands explain that a session is its sessionKey.
    const answer = (await (await s.api('/chat', { json: { message: '/new x', sessionKey: 'alpha' } })).json()) as { error: string };
    expect(answer.error).toBe('not_here');
  });
});
