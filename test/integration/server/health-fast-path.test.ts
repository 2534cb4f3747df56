import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmptyHub } from '../../../src/core/channel-hub.js';
import { templatesDir } from '../../../src/core/paths.js';
import { createTaskControl } from '../../../src/core/scheduler/task-control.js';
import { createTaskRunner } from '../../../src/core/scheduler/task-runner.js';
import { createServerApp } from '../../../src/server/app.js';
import { createHealthAnswer } from '../../../src/server/health.js';
import { listenApp, type RunningServer } from '../../../src/server/listen.js';
import { createTestAssistant, type TestAssistant } from '../../helpers/assistant.js';

/**
 * The gateway's listener answers a plain GET/HEAD /health itself (server/health.ts); the app's
 * route answers it everywhere else. The two must not drift apart: same status, same headers
 * (but the framing ones), same body, secrets masked alike.
 */
const TOKEN = 'health-token-0123456789';
let t: TestAssistant;
let viaApp: RunningServer;
let viaListener: RunningServer;

beforeAll(async () => {
  // A placeholder in the name: its resolved value is a secret, masked in every answer.
  process.env.HEALTH_FAST_PATH_SECRET = 'resolved-secret-value';
  t = createTestAssistant({ files: { 'service.yaml': 'name: bot-${HEALTH_FAST_PATH_SECRET}\nengine: engine_b\n' } });
  const channels = createEmptyHub([]);
  const runner = createTaskRunner({ assistant: t.assistant, config: t.config, store: t.store, log: t.log, channels });
  const deps = {
    assistant: t.assistant,
    commands: t.commands,
    config: t.config,
    tasks: createTaskControl({ config: t.config, runner, scheduled: false, log: t.log }),
    channels,
    activity: t.store,
    access: t.access,
    metrics: t.metrics,
    token: TOKEN,
    log: t.log,
    version: '0.0.0-test',
    dashboardDir: path.join(templatesDir(), 'dashboard'),
  };
  const { app } = createServerApp(deps);
  viaApp = await listenApp(app, { host: '127.0.0.1', port: 0 });
  viaListener = await listenApp(app, { host: '127.0.0.1', port: 0, answerFirst: createHealthAnswer(deps) });
});

afterAll(async () => {
  await viaApp?.close();
  await viaListener?.close();
  t?.close();
  delete process.env.HEALTH_FAST_PATH_SECRET;
});

/** Headers that describe the message rather than the answer (framing, the clock). */
const FRAMING = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length']);
const answerOf = async (res: Response) => ({
  status: res.status,
  headers: Object.fromEntries([...res.headers].filter(([k]) => !FRAMING.has(k))),
  body: (await res.text()) || undefined,
});
const stable = (body: string | undefined) => {
  const { timestamp, uptime, ...rest } = JSON.parse(body ?? '{}') as Record<string, unknown>;
  expect(new Date(String(timestamp)).toISOString()).toBe(timestamp);
  expect(typeof uptime).toBe('number');
  return rest;
};

describe('GET /health answered by the listener', () => {
  it('is the answer the app gives: status, headers and body (secrets masked, also once no longer secret), with and without an Origin', async () => {
    for (const headers of [{}, { origin: 'http://elsewhere.example' }] as Record<string, string>[]) {
      const a = await answerOf(await fetch(`${viaApp.url}/health`, { headers }));
      const b = await answerOf(await fetch(`${viaListener.url}/health`, { headers }));
      expect(b.status).toBe(a.status);
      expect(b.headers).toEqual(a.headers);
      expect(stable(b.body)).toEqual(stable(a.body));
      expect(b.body).not.toContain('resolved-secret-value');
      expect(stable(b.body)).toMatchObject({ status: 'ok', name: 'bot-********', engine: 'engine_b', version: '0.0.0-test' });
    }
    // A value that stopped being a secret (the file now names it literally) stays masked on both.
    fs.writeFileSync(path.join(t.dir, 'service.yaml'), 'name: bot-resolved-secret-value\nengine: engine_b\n');
    t.config.reload();
    expect(t.config.current().config.name).toBe('bot-resolved-secret-value');
    const a = await answerOf(await fetch(`${viaApp.url}/health`));
    const b = await answerOf(await fetch(`${viaListener.url}/health`));
    expect(stable(b.body)).toEqual(stable(a.body));
    expect(stable(b.body)).toMatchObject({ name: 'bot-********' });
  });

  it('anything else about the request goes to the app: a query, a preflight, HEAD, another method', async () => {
    for (const [pathname, init] of [
      ['/health', { method: 'HEAD' }],
      ['/health?verbose=1', {}],
      ['/health', { method: 'OPTIONS', headers: { origin: 'http://x.example', 'access-control-request-method': 'GET' } }],
      ['/health', { method: 'POST' }],
      ['/health/', {}],
    ] as const) {
      const a = await answerOf(await fetch(`${viaApp.url}${pathname}`, init));
      const b = await answerOf(await fetch(`${viaListener.url}${pathname}`, init));
      expect({ pathname, ...b, body: b.status === 200 && b.body ? stable(b.body) : b.body }).toEqual({
        pathname,
        ...a,
        body: a.status === 200 && a.body ? stable(a.body) : a.body,
      });
    }
  });

  it('HEAD /health is GET /health without the body (a load balancer may check with HEAD)', async () => {
    const get = await answerOf(await fetch(`${viaListener.url}/health`));
    const head = await answerOf(await fetch(`${viaListener.url}/health`, { method: 'HEAD' }));
    expect(head).toEqual({ status: 200, headers: get.headers, body: undefined });
  });
});
