import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { parseSseStrict } from '../../helpers/server.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { minimalYaml } from '../../helpers/testdir.js';

/**
 * Issue 12, items 1, 5 and 6, against one real `service gateway` process: NUL values, prototype
 * keys and deeply nested JSON get a 400 with a JSON error on every body route, service.yaml is
 * byte-identical afterwards, and the process (and the next turn) go on.
 */
const TOKEN = 'tok-bad-input-1234567890';
let g: GatewayProcess;
let dir: string;
let yamlFile: string;

beforeAll(async () => {
  // Not testdir(): that one is removed after each test, and this gateway serves the whole file.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'service-bad-input-'));
  const standIn = createStandIn(path.join(dir, 'stand-in'));
  dir = path.join(dir, 'assistant');
  yamlFile = path.join(dir, 'service.yaml');
  fs.mkdirSync(dir);
  fs.writeFileSync(yamlFile, minimalYaml('engine_b', `# keep this comment\ngateway:\n  token: ${TOKEN}\n`));
  g = await startGatewayProcess(dir, [], { ...standIn.env, SERVICE_TOKEN: '' });
});

afterAll(async () => {
  await g?.stop();
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
});

const send = (method: string, route: string, body: string) =>
  fetch(`${g.url}${route}`, { method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body });

const BODY_ROUTES: Array<[string, string]> = [
  ['POST', '/chat'],
  ['POST', '/command'],
  ['POST', '/reset'],
  ['POST', '/abort'],
  ['POST', '/api/send'],
  ['PATCH', '/api/config'],
];

async function expectRejected(method: string, route: string, body: string, mentions?: string): Promise<void> {
  const before = fs.readFileSync(yamlFile);
  const res = await send(method, route, body);
  expect(res.status, `${method} ${route} ${body.slice(0, 80)}`).toBe(400);
  expect(res.headers.get('content-type')).toContain('application/json');
  const json = (await res.json()) as { error: string };
  expect(typeof json.error).toBe('string');
  if (mentions) expect(json.error).toContain(mentions);
  expect(fs.readFileSync(yamlFile).equals(before)).toBe(true);
  expect(g.child.exitCode).toBeNull();
}

async function expectChatWorks(): Promise<void> {
  const res = await send('POST', '/chat', JSON.stringify({ message: 'still here?', sessionKey: `k${Date.now()}` }));
  const events = parseSseStrict(await res.text()) as Array<Record<string, unknown>>;
  expect(events.at(-1), JSON.stringify(events)).toMatchObject({
    type: 'completion',
    status: 'completed',
    finalText: expect.stringContaining('ECHO: still here?'),
  });
}

describe('NUL values (item 1)', () => {
  it('PATCH {"model":"x\\u0000y"} is a 400 naming model, the file is untouched, and the next /chat completes', async () => {
    await expectRejected('PATCH', '/api/config', '{"model":"x\\u0000y"}', 'model');
    await expectChatWorks();
    expect((await fetch(`${g.url}/health`)).status).toBe(200);
  });

  it('every string field of every body route rejects NUL with its path', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/chat', { message: 'a\u0000b' }, 'message'],
      ['POST', '/chat', { message: 'hi', sessionKey: 'k\u0000' }, 'sessionKey'],
      ['POST', '/chat', { images: [{ data: 'iVBORw0KGgo=', fileName: 'a\u0000.png' }] }, 'images[0].fileName'],
      ['POST', '/chat', { images: [{ data: 'iVBORw0KGgo=', mimeType: 'image/png\u0000' }] }, 'images[0].mimeType'],
      ['POST', '/command', { command: 'x\u0000' }, 'command'],
      ['POST', '/command', { command: 'review', arguments: 'a\u0000' }, 'arguments'],
      ['POST', '/reset', { sessionKey: '\u0000' }, 'sessionKey'],
      ['POST', '/abort', { sessionKey: '\u0000' }, 'sessionKey'],
      ['POST', '/api/send', { channel: 'channel_e', chatId: '1\u0000', text: 'hi' }, 'chatId'],
      ['PATCH', '/api/config', { mcp: { files: { command: 'node', args: ['ok', 'b\u0000'] } } }, 'mcp.files.args[1]'],
      ['PATCH', '/api/config', { 'x-note': { 'a\u0000b': 1 } }, 'x-note'],
    ];
    for (const [method, route, body, where] of cases) await expectRejected(method, route, JSON.stringify(body), where);
    await expectChatWorks();
  });
});

describe('prototype keys (item 5)', () => {
  it('__proto__ / constructor / prototype anywhere in any body: 400, service.yaml untouched', async () => {
    const bodies = [
      '{"channels":{"__proto__":{"channel_e":{"token":"x"}}}}',
      '{"mcp":{"__proto__":{"command":"node"}}}',
      '{"mcp":{"constructor":{"command":"node"}}}',
      '{"x-ext":{"prototype":1}}',
      '{"__proto__":{"timeout":5}}',
      '{"groupChat":{"constructor":{"prototype":{}}}}',
    ];
    for (const body of bodies) await expectRejected('PATCH', '/api/config', body, 'is not allowed as a key');
    for (const [method, route] of BODY_ROUTES) await expectRejected(method, route, '{"__proto__":{"x":1}}', 'is not allowed as a key');
    expect(fs.readFileSync(yamlFile, 'utf8')).not.toMatch(/__proto__|constructor|prototype/);
  });
});

describe('deep JSON (item 6)', () => {
  const nest = (levels: number, leaf: string) => `${'{"a":'.repeat(levels)}${leaf}${'}'.repeat(levels)}`;

  it('1,000 nested levels: every body route answers 400 with a JSON error, never 500', async () => {
    for (const [method, route] of BODY_ROUTES) await expectRejected(method, route, nest(1000, '1'), 'nested');
    const deepValues = [
      `{"x-ext":${nest(1000, '1')}}`,
      `{"persona":${nest(1000, '1')}}`,
      `{"channels":${nest(1000, '1')}}`,
      `{"x-a":${'['.repeat(5000)}${']'.repeat(5000)}}`,
    ];
    for (const body of deepValues) await expectRejected('PATCH', '/api/config', body, 'nested');
    expect(g.output()).not.toContain('Maximum call stack');
    await expectChatWorks();
  });

  it('a body at the documented depth limit is still read (32 levels)', async () => {
    const res = await send('PATCH', '/api/config', `{"x-ext":${nest(31, '1')}}`);
    expect(res.status).toBe(200);
    expect(fs.readFileSync(yamlFile, 'utf8')).toContain('# keep this comment');
    const undo = await send('PATCH', '/api/config', '{"x-ext":null}');
    expect(undo.status).toBe(200);
  });
});

describe('requests Node itself refuses', () => {
  it('an unknown method gets a 400 with a JSON error like every other answer', async () => {
    const { port } = new URL(g.url);
    const answer = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'FROB', path: '/chat' }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(400);
    expect(answer.type).toContain('application/json');
    expect(JSON.parse(answer.body)).toEqual({ error: expect.stringMatching(/^malformed HTTP request/) });
    expect(g.child.exitCode).toBeNull();
  });
});
