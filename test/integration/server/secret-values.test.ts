import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { parseSseStrict } from '../../helpers/server.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { until } from '../../helpers/wait.js';

/**
 * Issue 12, item 7, against one real gateway: no value that came from the environment (a `${VAR}`
 * placeholder, wherever it sits: an array, a URL, a name) or from a secret field is returned by
 * any endpoint, event or log line; a PATCH cannot introduce a new placeholder outside the fields
 * meant for secrets; the config views show placeholders as written, so sending them back writes
 * no plaintext.
 */
const TOKEN = 'tok-secret-values-1234567890';
const ENV = {
  PROVIDER_API_KEY: 'sk-provider-0123456789abcdef',
  BASE_URL_KEY: 'baseurl-secret-7654321',
  MCP_ARG_KEY: 'mcp-arg-secret-111111',
  MCP_URL_KEY: 'mcp-url-secret-222222',
  MCP_ENV_TOKEN: 'mcp-env-secret-333333',
  MCP_HEADER: 'mcp-header-secret-444444',
  BOT_SUFFIX: 'suffix-secret-555555',
  SUPPORT_CONTACT: 'support-contact-666666',
  GITHUB_TOKEN: 'ghp-inherited-secret-777777',
};
const SECRETS = Object.values(ENV);
const YAML = `name: bot-\${BOT_SUFFIX}
engine: engine_b
systemPrompt: "Escalate to \${SUPPORT_CONTACT}."
gateway:
  token: ${TOKEN}
provider:
  baseUrl: http://127.0.0.1:9/v1?key=\${BASE_URL_KEY}
  apiKey: \${PROVIDER_API_KEY}
mcp:
  files:
    command: node
    args: ["server.js", "--key", "\${MCP_ARG_KEY}"]
    env:
      API_TOKEN: \${MCP_ENV_TOKEN}
  remote:
    type: http
    url: http://127.0.0.1:9/mcp?key=\${MCP_URL_KEY}
    headers:
      Authorization: Bearer \${MCP_HEADER}
`;

let g: GatewayProcess;
let root: string;
let yamlFile: string;
beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'service-secret-values-'));
  const standIn = createStandIn(path.join(root, 'stand-in'));
  const dir = path.join(root, 'assistant');
  fs.mkdirSync(dir);
  yamlFile = path.join(dir, 'service.yaml');
  fs.writeFileSync(yamlFile, YAML);
  g = await startGatewayProcess(dir, [], { ...standIn.env, ...ENV, SERVICE_TOKEN: '' });
});
afterAll(async () => {
  await g?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

const api = (route: string, init: RequestInit = {}) =>
  fetch(`${g.url}${route}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...init.headers } });
const patch = (body: unknown) => api('/api/config', { method: 'PATCH', body: JSON.stringify(body) });
const expectNoSecret = (text: string, where: string) => {
  for (const secret of SECRETS) expect(text, `${where} leaks ${secret}`).not.toContain(secret);
};

describe('secrets are masked by value, wherever they sit', () => {
  it('GET /api/config/effective shows placeholders as written, in arrays and URLs too', async () => {
    const text = await (await api('/api/config/effective')).text();
    expectNoSecret(text, 'effective');
    const { config } = JSON.parse(text) as { config: Record<string, any> };
    expect(config.mcp.files.args).toEqual(['server.js', '--key', '${MCP_ARG_KEY}']);
    expect(config.mcp.remote.url).toBe('http://127.0.0.1:9/mcp?key=${MCP_URL_KEY}');
    expect(config.provider.baseUrl).toBe('http://127.0.0.1:9/v1?key=${BASE_URL_KEY}');
    expect(config.systemPrompt).toBe('Escalate to ${SUPPORT_CONTACT}.');
  });

  it('sending the effective values back is a no-op: no plaintext reaches service.yaml', async () => {
    const before = fs.readFileSync(yamlFile, 'utf8');
    const { config } = (await (await api('/api/config/effective')).json()) as { config: Record<string, any> };
    const res = await patch({ mcp: config.mcp, provider: { baseUrl: config.provider.baseUrl, apiKey: config.provider.apiKey } });
    expect(res.status).toBe(200);
    expectNoSecret(await res.text(), 'PATCH response');
    const after = fs.readFileSync(yamlFile, 'utf8');
    expectNoSecret(after, 'service.yaml');
    expect(after).toBe(before);
  });

  it('a PATCH may not add a ${VAR} outside secret fields (400, file untouched); /health never shows a resolved value', async () => {
    const before = fs.readFileSync(yamlFile, 'utf8');
    for (const body of [
      { name: 'bot-${PROVIDER_API_KEY}' },
      { systemPrompt: 'key: ${GITHUB_TOKEN}' },
      { mcp: { files: { args: ['--key', '${PROVIDER_API_KEY}'] } } },
      { mcp: { remote: { url: 'http://127.0.0.1:9/mcp?k=${PROVIDER_API_KEY}' } } },
      { 'x-note': '${PROVIDER_API_KEY}' },
    ]) {
      const res = await patch(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const text = await res.text();
      expect(text).toContain('placeholder');
      expectNoSecret(text, 'PATCH error');
    }
    expect(fs.readFileSync(yamlFile, 'utf8')).toBe(before);
    const health = (await (await fetch(`${g.url}/health`)).json()) as { name: string };
    expect(health.name).toBe('bot-********');
  });

  it('a placeholder may be added to a secret field, and is never shown resolved', async () => {
    const res = await patch({ mcp: { files: { env: { EXTRA_TOKEN: '${PROVIDER_API_KEY}' } } } });
    expect(res.status).toBe(200);
    const { config } = (await (await api('/api/config/effective')).json()) as { config: Record<string, any> };
    expect(config.mcp.files.env.EXTRA_TOKEN).toBe('${PROVIDER_API_KEY}');
    expect((await patch({ mcp: { files: { env: { EXTRA_TOKEN: null } } } })).status).toBe(200);
  });

  it('a mask sent back inside an array or a longer string is refused, never written', async () => {
    const before = fs.readFileSync(yamlFile, 'utf8');
    for (const body of [
      { mcp: { files: { args: ['server.js', '--key', '********'] } } },
      { mcp: { remote: { url: 'http://127.0.0.1:9/mcp?key=********' } } },
    ]) {
      const res = await patch(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.text()).toContain('********');
    }
    expect(fs.readFileSync(yamlFile, 'utf8')).toBe(before);
  });

  it('a reply that holds a secret is masked in the stream, the activity feed, /api/status and the log', async () => {
    const feed = new AbortController();
    const events = await fetch(`${g.url}/api/events?token=${TOKEN}`, { signal: feed.signal });
    const reader = events.body!.getReader();
    let feedText = '';
    const reading = (async () => {
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) return;
        feedText += Buffer.from(value as Uint8Array).toString();
      }
    })();
    const res = await api('/chat', { method: 'POST', body: JSON.stringify({ message: `SAY:key is ${ENV.PROVIDER_API_KEY} and ${ENV.GITHUB_TOKEN}` }) });
    const stream = await res.text();
    expectNoSecret(stream, '/chat stream');
    expect((parseSseStrict(stream) as Array<Record<string, unknown>>).at(-1)).toMatchObject({
      status: 'completed',
      finalText: 'key is ******** and ********',
    });
    await until(() => feedText.includes('responsePreview'), 5_000, 'the activity event');
    feed.abort();
    await reading;
    expectNoSecret(feedText, '/api/events');
    for (const route of [
      '/health',
      '/api/status',
      '/api/config',
      '/api/config/effective',
      '/api/channels',
      '/api/escalations',
      '/api/fleet',
      '/api/metrics/timeline',
    ]) {
      expectNoSecret(await (await api(route)).text(), route);
    }
    expectNoSecret(g.output(), 'the gateway log');
  });

  it('a value that stops being a secret (a PATCH replaced its placeholder) stays masked where it was already stored', async () => {
    const answer = (await (await api('/chat', { method: 'POST', body: JSON.stringify({ message: '/status' }) })).json()) as { text: string };
    expectNoSecret(answer.text, '/status answer');
    expect((await patch({ name: 'plain-bot' })).status).toBe(200);
    const status = await (await api('/api/status')).text();
    expect(status).toContain('"name":"plain-bot"');
    expectNoSecret(status, '/api/status after the PATCH');
  });
});
