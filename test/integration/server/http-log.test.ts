import { describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../../helpers/gateway-process.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';
import { until } from '../../helpers/wait.js';

/**
 * Issue 12, item 8 (a client cannot forge log lines) and issue 15 (HTTP log lines carry the
 * reason phrase), read from a real gateway's stderr.
 */
const TOKEN = 'tok-http-log-1234567890';

describe('the gateway log (spawned for real)', () => {
  it('a control character a client sends in a path or a body is escaped: one request, one line', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', `gateway:\n  token: ${TOKEN}\n`) });
    const g = await startGatewayProcess(dir, [], { SERVICE_TOKEN: '' });
    expect((await fetch(`${g.url}/dashboard/x%0aFORGED%0d%1b[31mred`)).status).toBe(404);
    const send = await fetch(`${g.url}/api/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'chan\nFORGED too', chatId: '1', text: 'hi' }),
    });
    expect(send.status).toBe(503); // no channel runs here
    await until(() => g.output().includes('/api/send'), 5_000, 'the /api/send log line');
    await g.stop();
    const lines = g.output().split('\n');
    expect(lines.filter((l) => /^\s*FORGED/.test(l))).toEqual([]);
    expect(g.output()).not.toContain('\u001b');
    expect(lines.find((l) => l.includes('/dashboard/x'))).toBe(
      '[http] 404 Not Found GET /dashboard/x%0aFORGED%0d%1b[31mred: no file x\\nFORGED\\r\\x1b[31mred',
    );
    expect(lines.find((l) => l.includes('POST /api/send'))).toMatch(/^\[http\] 503 Service Unavailable POST \/api\/send to chan\\nFORGED too: /);
  });

  it('HTTP log lines name the status with its reason phrase', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', `gateway:\n  token: ${TOKEN}\n`) });
    const g = await startGatewayProcess(dir, [], { SERVICE_TOKEN: '' });
    const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    await fetch(`${g.url}/nope`, { headers: auth });
    await fetch(`${g.url}/api/status`);
    await fetch(`${g.url}/chat`, { method: 'GET', headers: auth });
    await fetch(`${g.url}/chat`, { method: 'POST', headers: auth, body: '{' });
    await fetch(`${g.url}/api/config`, { method: 'PATCH', headers: auth, body: '{"timeout":"soon"}' });
    await until(() => g.output().includes('PATCH /api/config'), 5_000, 'the PATCH log line');
    await g.stop();
    const out = g.output();
    expect(out).toContain('[http] 404 Not Found GET /nope');
    expect(out).toContain('[http] 401 Unauthorized GET /api/status: no token');
    expect(out).toContain('[http] 405 Method Not Allowed GET /chat');
    expect(out).toContain('[http] 400 Bad Request POST /chat: request body is not valid JSON');
    expect(out).toContain('[http] 400 Bad Request PATCH /api/config: invalid configuration change: timeout:');
  });
});
