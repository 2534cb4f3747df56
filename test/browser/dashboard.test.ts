import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelHub } from '../../src/core/channel-hub.js';
import { repoRoot } from '../helpers/cli.js';
import { startTestServer, TEST_TOKEN, type TestServer } from '../helpers/server.js';

/**
 * The dashboard in a real browser (Debian's chromium through playwright-core) against the real
 * app on a real port with the stand-in engine. Each test gets its own gateway; the browser is shared.
 */
const ARTIFACTS = path.join(repoRoot, 'test-artifacts');
const CHROMIUM = '/usr/bin/chromium';

let browser: Browser;
let context: BrowserContext | undefined;
let s: TestServer | undefined;

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does)`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  await context?.close();
  context = undefined;
  await s?.stop();
  s = undefined;
});

/** A hub with one channel in each state, so the channel panel has something to show. */
const hub: ChannelHub = {
  statuses: () => [
    { type: 'channel_a', status: 'not_configured' },
    { type: 'channel_d', status: 'failed', reason: 'auth.test: invalid_auth' },
    { type: 'channel_e', status: 'connected' },
  ],
  list: () => [{ name: 'channel_e', canSend: true }],
  send: async () => ({ ok: true }),
};

interface Watched {
  page: Page;
  /** Console errors and uncaught page errors (CSP violations show up here). */
  problems: string[];
  requests: string[];
  patches: string[];
}

async function open(url: string, viewport = { width: 1280, height: 900 }): Promise<Watched> {
  context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const w: Watched = { page, problems: [], requests: [], patches: [] };
  page.on('console', (m) => {
    if (m.type() === 'error') w.problems.push(`console: ${m.text()} ${m.location().url}`);
  });
  page.on('pageerror', (e) => w.problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => {
    w.requests.push(`${r.method()} ${new URL(r.url()).pathname}`);
    if (r.method() === 'PATCH') w.patches.push(r.postData() ?? '');
  });
  await page.goto(url);
  return w;
}

const text = (page: Page, selector: string) => page.locator(selector).innerText();
// Page-side expressions are strings: the test project has no DOM types, and needs none.

describe('dashboard in chromium', () => {
  it('without the token only the status panel has data; a typed token opens the rest', async () => {
    s = await startTestServer({ hub });
    const { page, requests, problems } = await open(`${s.url}/`);
    await expect.poll(() => text(page, '#f-name')).toBe('tester');
    expect(await text(page, '#f-engine')).toBe('engine_b');
    expect(await text(page, '#f-version')).toBe('0.0.0-test');
    expect(await page.locator('#panel-token').isVisible()).toBe(true);
    for (const id of ['channels', 'metrics', 'fleet', 'skills', 'activity', 'escalations', 'quick-test', 'config', 'samples']) {
      expect(await page.locator(`#panel-${id}`).isVisible(), id).toBe(false);
    }
    expect(await page.locator('#channels li').count()).toBe(0);
    expect(await page.locator('#config .setting').count()).toBe(0);
    expect(requests.filter((r) => r.includes('/api/'))).toEqual([]);

    await page.fill('#token-input', 'not-the-token');
    await page.click('#token-form button');
    await expect.poll(() => text(page, '#token-error')).toContain('not accepted');
    expect(await page.locator('#panel-channels').isVisible()).toBe(false);
    expect(await page.evaluate('sessionStorage.getItem("service-token")')).toBeNull();

    await page.fill('#token-input', TEST_TOKEN);
    await page.click('#token-form button');
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    expect(await page.locator('#panel-token').isVisible()).toBe(false);
    expect(await page.evaluate('sessionStorage.getItem("service-token")')).toBe(TEST_TOKEN);
    // The one failed request was the wrong token's; nothing else went wrong on the page.
    expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
  });

  it('with #token=: status, channels, a streamed quick test, live activity, chart, fleet, samples; desktop and phone screenshots', async () => {
    const fleet = () => [
      { name: 'tester', engine: 'engine_b', url: 'http://127.0.0.1:1', dashboardUrl: 'http://127.0.0.1:1/', self: true },
      { name: 'billing-bot', role: 'Invoices and refunds', engine: 'engine_d', url: 'http://127.0.0.1:9', dashboardUrl: 'http://127.0.0.1:9/', self: false },
    ];
    s = await startTestServer({ hub, fleet, files: { 'skills/notes/SKILL.md': '---\nname: notes\ndescription: Keeps notes.\n---\n' } });
    const { page, problems } = await open(`${s.url}/#token=${TEST_TOKEN}`);
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    expect(new URL(page.url()).hash).toBe(''); // the token left the address bar
    expect(await text(page, '#f-name')).toBe('tester');
    await expect.poll(() => page.locator('#channels li').count()).toBe(3);
    expect(await text(page, '[data-channel="channel_e"]')).toContain('connected');
    expect(await text(page, '[data-channel="channel_d"]')).toContain('auth.test: invalid_auth');
    expect(await text(page, '#skills')).toContain('Keeps notes.');
    await expect.poll(() => page.locator('[data-peer="billing-bot"] a').getAttribute('href')).toBe('http://127.0.0.1:9/');
    expect(await text(page, '#fleet')).toContain('this gateway');
    await expect.poll(() => text(page, '#activity-state')).toBe('live');

    // Quick test: the reply streams in, the tool call is listed, the status ends at completed.
    await page.fill('#qt-message', 'SLEEP:400 TOOL:Bash hello from the browser');
    await page.fill('#qt-session', 'qt-1');
    await page.click('#qt-send');
    await expect.poll(() => text(page, '#qt-status')).toBe('running…');
    await expect.poll(() => text(page, '#qt-status')).toBe('completed');
    expect(await text(page, '#qt-output')).toBe('ECHO: SLEEP:400 TOOL:Bash hello from the browser\nTURN: 1');
    expect(await text(page, '#qt-tools')).toContain('Bash');

    // A chat made over HTTP by someone else shows up in the feed, and in the counters and chart.
    await (await s.api('/chat', { json: { message: 'made over HTTP with curl', sessionKey: 'curl-1' } })).text();
    await expect.poll(() => text(page, '#activity')).toContain('made over HTTP with curl');
    await expect.poll(() => text(page, '#m-total')).toBe('2');
    await expect.poll(() => page.locator('#timeline rect.bar[data-count="2"]').count()).toBe(1);
    expect(await text(page, '#m-sources')).toContain('http');

    expect(await text(page, '[data-sample="curl-chat"]')).toContain(`"${s.url}/chat"`);
    expect(await text(page, '[data-sample="curl-send"]')).toContain('"channel":"channel_e"');
    expect(await text(page, '[data-sample="embed"]')).toContain(`createAssistant({ dir: "${s.dir}" })`);
    await context?.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.url });
    await page.click('[data-copy="curl-chat"]');
    await expect.poll(() => text(page, '[data-sample="curl-chat"] .copy-note')).toBe('copied');
    expect(await page.evaluate('navigator.clipboard.readText()')).toContain('Authorization: Bearer $SERVICE_TOKEN');

    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-desktop-1280.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-phone-390.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('edits settings: timeout is applied and written, engine needs a restart, a masked secret is never sent back', async () => {
    const server = await startTestServer({ yaml: '# operator notes\ntimeout: 600 # ten minutes\noauthToken: sk-oauth-very-secret\n' });
    s = server;
    const { page, patches, problems } = await open(`${server.url}/#token=${TEST_TOKEN}`);
    const yaml = () => fs.readFileSync(path.join(server.dir, 'service.yaml'), 'utf8');
    const setting = (p: string) => page.locator(`.setting[data-path="${p}"]`);
    await setting('timeout').waitFor();
    expect(await setting('oauthToken').locator('.value').innerText()).toBe('********');
    expect(await text(page, '#config')).not.toContain('sk-oauth-very-secret');
    expect(await setting('maxConcurrent').innerText()).toContain('(default)');

    await setting('timeout').locator('[data-action="edit"]').click();
    await setting('timeout').locator('input').fill('42');
    await setting('timeout').locator('[data-action="save"]').click();
    await expect.poll(() => setting('timeout').locator('.notice').innerText()).toBe('applied');
    expect(yaml()).toContain('timeout: 42 # ten minutes');
    expect(s.config.current().config.timeout).toBe(42);

    await setting('engine').locator('[data-action="edit"]').click();
    await setting('engine').locator('select').selectOption('engine_a');
    await setting('engine').locator('[data-action="save"]').click();
    await expect.poll(() => setting('engine').locator('.notice').innerText()).toBe('restart needed');
    expect(await text(page, '#config-restart')).toContain('engine');
    expect(yaml()).toContain('engine: engine_a');

    // Opening the secret's editor and saving without typing sends nothing at all.
    await setting('oauthToken').locator('[data-action="edit"]').click();
    await setting('oauthToken').locator('[data-action="save"]').click();
    await expect.poll(() => setting('oauthToken').locator('.notice').innerText()).toBe('unchanged');
    // A rejected value shows the server's reason and leaves the file alone.
    await setting('maxConcurrent').locator('[data-action="edit"]').click();
    await setting('maxConcurrent').locator('input').fill('0');
    await setting('maxConcurrent').locator('[data-action="save"]').click();
    await expect.poll(() => setting('maxConcurrent').locator('.error').first().innerText()).toContain('maxConcurrent');
    expect(yaml()).not.toContain('maxConcurrent');

    expect(patches).toHaveLength(3);
    for (const body of patches) {
      expect(body).not.toContain('********');
      expect(body).not.toContain('sk-oauth-very-secret');
    }
    expect(yaml()).toContain('oauthToken: sk-oauth-very-secret');
    expect(problems.filter((p) => !p.includes('400'))).toEqual([]);
  });

  it('markup in messages, replies and errors is shown as text and runs nothing', async () => {
    s = await startTestServer();
    const { page, problems } = await open(`${s.url}/#token=${TEST_TOKEN}`);
    await expect.poll(() => text(page, '#activity-state')).toBe('live');
    const failing = `FAIL:<img src=x onerror="window.__xss='fail'"><script>window.__xss='script'</script>`;
    const escalating = `SAY:[ESCALATE] <img src=x onerror="window.__xss='esc'"> <script>window.__xss='s2'</script><b>bold</b>`;
    await (await s.api('/chat', { json: { message: failing, sessionKey: 'chat-<b>1</b>' } })).text();
    await (await s.api('/chat', { json: { message: escalating, sessionKey: 'chat-2' } })).text();

    await expect.poll(() => page.locator('#activity li.activity').count()).toBe(2);
    await expect.poll(() => page.locator('#escalations li.activity').count()).toBe(2);
    const escalations = await text(page, '#escalations');
    expect(escalations).toContain(`<img src=x onerror="window.__xss='esc'">`);
    expect(escalations).toContain('escalated');
    expect(escalations).toContain('failed');
    expect(escalations).toContain('chat chat-<b>1</b>');
    expect(await text(page, '#activity')).toContain(`<script>window.__xss='script'</script>`);
    for (const list of ['#activity', '#escalations']) {
      expect(await page.locator(`${list} img, ${list} script, ${list} b`).count(), list).toBe(0);
    }
    // Reload: the same records now come from /api/status and /api/escalations instead of the stream.
    await page.reload();
    await expect.poll(() => page.locator('#escalations li.activity').count()).toBe(2);
    await expect.poll(() => page.locator('#activity li.activity').count()).toBe(2);
    expect(await page.locator('main img, main b, main script').count()).toBe(0);
    await new Promise((r) => setTimeout(r, 300)); // time for any injected handler to have fired
    expect(await page.evaluate('window.__xss')).toBeUndefined();
    expect(problems).toEqual([]);
  });
});
