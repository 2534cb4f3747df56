import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { minimalYaml } from '../../helpers/testdir.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * Issue 36, part 2, against one real `service gateway` process (whose PATCH does its YAML work on
 * a worker thread): every bound on what service.yaml may hold is a 400 naming the field and the
 * limit, the file is untouched, a change at the limits is applied, and a configuration that used
 * to cost minutes of the event loop is answered.
 */
const TOKEN = 'tok-config-limits-1234567890';
let g: GatewayProcess;
let root: string;
let yamlFile: string;

beforeAll(async () => {
  // Not testdir(): that one is removed after each test, and this gateway serves the whole file.
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-config-limits-'));
  const dir = path.join(root, 'assistant');
  yamlFile = path.join(dir, 'service.yaml');
  fs.mkdirSync(dir);
  fs.writeFileSync(yamlFile, minimalYaml('engine_b', `# keep this comment\ngateway:\n  token: ${TOKEN}\n`));
  g = await startGatewayProcess(dir, [], { SERVICE_TOKEN: '', TEAM: 'platform' });
});

afterAll(async () => {
  await g?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

const patch = (body: unknown, signal?: AbortSignal) =>
  fetch(`${g.url}/api/config`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });

const items = <T>(n: number, item: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => item(i));
const aTask = (i: number) => ({ id: `t${i}`, name: `Task ${i}`, schedule: `${i % 60} 9 * * *`, prompt: 'Summarise the day' });

describe('PATCH /api/config over a limit', () => {
  it.each([
    ['persona.boundaries', { persona: { boundaries: items(101, (i) => `b${i}`) } }, 'must be at most 100 items'],
    ['tasks', { tasks: items(1001, aTask) }, 'must be at most 1000 items'],
    ['systemPrompt', { systemPrompt: 'x'.repeat(100_001) }, 'must be at most 100000 characters'],
    ['access.allow', { access: { allow: items(10_001, (i) => `tg:${i}`) } }, 'must be at most 10000 items'],
    ['mcp', { mcp: Object.fromEntries(items(101, (i) => [`s${i}`, { command: 'node' }] as const)) }, 'must have at most 100 servers'],
    [
      'mcp.files.headers',
      { mcp: { files: { url: 'https://example.com/mcp', headers: Object.fromEntries(items(1001, (i) => [`h${i}`, 'v'] as const)) } } },
      'must have at most 1000 headers',
    ],
  ])('%s: a 400 naming the field and the limit; service.yaml untouched', async (field, body, message) => {
    const before = fs.readFileSync(yamlFile);
    const res = await patch(body);
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: string; issues: Array<{ path: string; message: string }> };
    expect(json.issues).toEqual([{ path: field, message }]);
    expect(json.error).toBe(`invalid configuration change: ${field}: ${message}`);
    expect(fs.readFileSync(yamlFile).equals(before)).toBe(true);
  });

  it('a change that would make service.yaml larger than 1 MiB: a 400 with the size and the limit', async () => {
    const before = fs.readFileSync(yamlFile);
    const res = await patch({ 'x-notes': 'n'.repeat(1024 * 1024) });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { issues: Array<{ path: string; message: string }> };
    expect(json.issues).toEqual([
      { path: '(root)', message: expect.stringMatching(/^the file would be 1,048,\d{3} bytes; at most 1,048,576 bytes \(1 MiB\)$/) },
    ]);
    expect(fs.readFileSync(yamlFile).equals(before)).toBe(true);
  });

  it('a body larger than 2 MiB is a 413 with the limit, before it is parsed', async () => {
    const res = await patch({ 'x-notes': 'n'.repeat(2 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ limit: 2 * 1024 * 1024 });
    expect((await fetch(`${g.url}/health`)).status).toBe(200);
  });
});

describe('PATCH /api/config at the limits', () => {
  it('100 boundaries and 1,000 tasks are applied, comments kept; concurrent PATCHes all land', async () => {
    const res = await patch({ persona: { boundaries: items(100, (i) => `b${i}`) }, tasks: items(1000, aTask) });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { config: { tasks: unknown[]; persona: { boundaries: string[] } } };
    expect(json.config.tasks).toHaveLength(1000);
    expect(json.config.persona.boundaries).toHaveLength(100);
    const answers = await Promise.all([patch({ timeout: 30 }), patch({ maxConcurrent: 2 }), patch({ tasks: items(3, aTask) }), patch({ persona: null })]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    const text = fs.readFileSync(yamlFile, 'utf8');
    expect(text).toContain('# keep this comment');
    expect(text).toMatch(/^timeout: 30$/m);
    expect(text).toMatch(/^maxConcurrent: 2$/m);
    expect(text).not.toContain('persona');
    expect(text.match(/- id: t\d+/g)).toEqual(['- id: t0', '- id: t1', '- id: t2']);
  });

  it('30,000 list items that each send back a placeholder of their list are answered (the check was quadratic: minutes)', async () => {
    const list = items(30_000, (i) => `\${TEAM}-${i}`);
    fs.appendFileSync(yamlFile, `x-list:\n${list.map((i) => `  - ${i}\n`).join('')}`);
    await until(() => g.output().includes('service.yaml changed'), HANG_MS, 'the gateway to reload service.yaml');
    const res = await patch({ 'x-list': list.map((i) => `${i}b`) }, AbortSignal.timeout(HANG_MS));
    expect(res.status).toBe(200);
    expect(fs.readFileSync(yamlFile, 'utf8')).toContain('  - ${TEAM}-29999b\n');
    expect((await patch({ 'x-list': null })).status).toBe(200);
  });
});

describe('PATCH /api/config while service.yaml is broken on disk', () => {
  it("the worker thread's YAML error comes back as a 400 naming the line; the file is left as it is", async () => {
    const good = fs.readFileSync(yamlFile, 'utf8');
    const broken = `${good}x-oops: [unclosed\n`;
    fs.writeFileSync(yamlFile, broken);
    try {
      const res = await patch({ timeout: 31 });
      expect(res.status).toBe(400);
      const json = (await res.json()) as { issues: Array<{ path: string; message: string }> };
      expect(json.issues[0]?.path).toMatch(/^line \d+, column \d+$/);
      expect(fs.readFileSync(yamlFile, 'utf8')).toBe(broken);
    } finally {
      fs.writeFileSync(yamlFile, good);
    }
    expect((await patch({ timeout: 31 })).status).toBe(200);
  });
});

describe('service.yaml over a limit at start', () => {
  it('the gateway does not start: the config error names the file, the field and the limit', async () => {
    const dir = path.join(root, 'over');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'service.yaml'), minimalYaml('engine_b', `persona:\n  boundaries:\n${items(101, (i) => `    - b${i}\n`).join('')}`));
    const started = startGatewayProcess(dir, ['--token', TOKEN]);
    await expect(started).rejects.toThrow(`${path.join(dir, 'service.yaml')}: 1 problem`);
    await expect(started).rejects.toThrow('persona.boundaries: must be at most 100 items');
  });
});
