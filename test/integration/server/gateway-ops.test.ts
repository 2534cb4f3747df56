import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { startGatewayProcess } from '../../helpers/gateway-process.js';
import { parsePrometheusText, valueOf } from '../../helpers/prometheus-text.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';
import { poll, until } from '../../helpers/wait.js';

/**
 * Issue 35, items 3 and 4, on a real `service gateway` process: JSON logs (every line of a run
 * parses, secrets masked, controls escaped, the fields of HTTP lines and turns), the format
 * chosen by flag, variable or service.yaml, and prom-client loaded by the first GET /metrics only.
 */
const TOKEN = 'ops-token-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}` };
const LEVELS = new Set(['debug', 'info', 'warn', 'error']);

interface Record {
  time: string;
  level: string;
  component: string;
  message: string;
  [field: string]: unknown;
}

/** Every line parses as one JSON object with the four keys every record has. */
function records(text: string): Record[] {
  expect(text.endsWith('\n') || text === '').toBe(true);
  return text
    .split('\n')
    .slice(0, -1)
    .map((line) => {
      const r = JSON.parse(line) as Record;
      expect(Object.keys(r).slice(0, 4)).toEqual(['time', 'level', 'component', 'message']);
      expect(new Date(r.time).toISOString()).toBe(r.time);
      expect(LEVELS.has(r.level)).toBe(true);
      expect(typeof r.component).toBe('string');
      expect(typeof r.message).toBe('string');
      return r;
    });
}

describe('the gateway for months (spawned for real)', () => {
  it('--log-format json: every line of a run is one JSON object, secrets masked, controls escaped, fields on HTTP lines and turns', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', `gateway:\n  token: ${TOKEN}\n`).replace('test-bot', 'bot-${OPS_NAME_SECRET}') });
    const g = await startGatewayProcess(dir, ['--log-format', 'json'], { ...standIn.env, SERVICE_TOKEN: '', OPS_NAME_SECRET: 'name-secret-4242' });
    const reply = await (
      await fetch(`${g.url}/chat`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"message":"SAY:hi","sessionKey":"s1"}' })
    ).text();
    expect(reply).toContain('"status":"completed"');
    expect((await fetch(`${g.url}/dashboard/x%0aFORGED%0d%1b[31m%E2%80%A8${TOKEN}`)).status).toBe(404);
    expect((await fetch(`${g.url}/api/status`)).status).toBe(401);
    await until(() => g.stderr().includes('401 Unauthorized'), undefined, 'the 401 line');
    expect(await g.stop()).toBe(0);

    const out = [...records(g.stdout()), ...records(g.stderr())];
    const all = g.stdout() + g.stderr();
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain('name-secret-4242');
    expect(all).not.toContain('\u001b');
    expect(out.find((r) => r.message.includes('is serving on'))).toMatchObject({ level: 'info', component: 'gateway' });
    expect(out.find((r) => r.component === 'turns')).toMatchObject({ level: 'info', session: 's1', source: 'http', engine: 'engine_b', outcome: 'completed' });
    expect(out.find((r) => r.component === 'turns')?.turn).toMatch(/^[0-9a-f]{8}$/);
    const notFound = out.find((r) => r.status === 404);
    expect(notFound).toMatchObject({ component: 'http', method: 'GET', level: 'info' });
    expect(notFound?.message).toContain('FORGED\r\u001b[31m\u2028***');
    expect(out.find((r) => r.status === 401)).toMatchObject({ component: 'http', method: 'GET', path: '/api/status' });
    expect(out.find((r) => r.message.startsWith('SIGTERM'))).toMatchObject({ component: 'gateway' });
  });

  it('SERVICE_LOG_FORMAT=json and gateway.logFormat: json choose the format too; a bad value is refused with its source', async () => {
    const fromEnv = testdir({ 'service.yaml': minimalYaml('engine_b', `gateway:\n  token: ${TOKEN}\n`) });
    const a = await startGatewayProcess(fromEnv, [], { SERVICE_TOKEN: '', SERVICE_LOG_FORMAT: 'json' });
    await a.stop();
    expect(records(a.stdout() + a.stderr()).length).toBeGreaterThan(3);
    const fromFile = testdir({ 'service.yaml': minimalYaml('engine_b', `gateway:\n  token: ${TOKEN}\n  logFormat: json\n`) });
    const b = await startGatewayProcess(fromFile, [], { SERVICE_TOKEN: '', SERVICE_LOG_FORMAT: '' });
    await b.stop();
    expect(records(b.stdout() + b.stderr()).length).toBeGreaterThan(3);
    // The flag wins over the file.
    const c = await startGatewayProcess(fromFile, ['--log-format', 'text'], { SERVICE_TOKEN: '', SERVICE_LOG_FORMAT: '' });
    await c.stop();
    expect(c.stdout()).toMatch(/^test-bot \(engine_b\) is serving on http/);

    const flag = await runCli(['gateway', '-d', fromEnv, '--port', '0', '--log-format', 'xml']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--log-format: expected text or json, got "xml"');
    const env = await runCli(['gateway', '-d', fromEnv, '--port', '0'], { env: { SERVICE_LOG_FORMAT: 'yaml' } });
    expect(env.stderr).toContain('SERVICE_LOG_FORMAT: expected text or json, got "yaml"');
    const file = testdir({ 'service.yaml': minimalYaml('engine_b', 'gateway:\n  logFormat: xml\n') });
    const bad = await runCli(['gateway', '-d', file, '--port', '0'], { env: { SERVICE_LOG_FORMAT: '' } });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('gateway.logFormat');
  });

  it('prom-client is loaded by the first GET /metrics, never before; metrics.public warns at start', async () => {
    const standIn = createStandIn();
    const root = testdir({ 'loaded.cjs': DUMP_LOADED });
    const dump = path.join(root, 'loaded.txt');
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'metrics:\n  public: true\n') });
    const env = { ...standIn.env, SERVICE_TOKEN: TOKEN, NODE_OPTIONS: `--require ${path.join(root, 'loaded.cjs')}`, LOADED_DUMP: dump };
    const g = await startGatewayProcess(dir, [], env);
    const loaded = async () => {
      fs.rmSync(dump, { force: true });
      g.child.kill('SIGUSR2');
      return poll(() => fs.existsSync(dump) && fs.readFileSync(dump, 'utf8'), undefined, 'the list of loaded modules');
    };
    await (await fetch(`${g.url}/chat`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"message":"SAY:hi"}' })).text();
    await fetch(`${g.url}/api/status`, { headers: auth });
    const before = await loaded();
    expect(before).toContain('better-sqlite3'); // the list is real: a module every gateway loads
    expect(before).not.toContain(`${path.sep}prom-client${path.sep}`);
    const scrape = await fetch(`${g.url}/metrics`); // public: no token
    expect(scrape.status).toBe(200);
    expect(valueOf(parsePrometheusText(await scrape.text()), 'service_turns_total', { engine: 'engine_b', source: 'http', outcome: 'completed' })).toBe(1);
    expect(await loaded()).toContain(`${path.sep}prom-client${path.sep}`);
    await g.stop();
    expect(g.stderr()).toContain('warn: metrics.public is on: GET /metrics answers without the token');
  });
});

/** Preloaded into the gateway (NODE_OPTIONS=--require): on SIGUSR2, the modules loaded so far (prom-client and better-sqlite3 are CommonJS). */
const DUMP_LOADED = `
const fs = require('node:fs');
// Written whole, then renamed: the test never reads a file the dump is still writing.
process.on('SIGUSR2', () => {
  fs.writeFileSync(process.env.LOADED_DUMP + '.part', Object.keys(require.cache).join('\\n'));
  fs.renameSync(process.env.LOADED_DUMP + '.part', process.env.LOADED_DUMP);
});
`;
