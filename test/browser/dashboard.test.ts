import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelHub } from '../../src/core/channel-hub.js';
import { findEngineBinary } from '../../src/core/engines/detect.js';
import { engineDefinitions } from '../../src/core/engines/registry.js';
import { collect } from '../helpers/assistant.js';
import { repoRoot } from '../helpers/cli.js';
import { ZERO_WIDTH } from '../helpers/hidden-commands.js';
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

/** A hub like a gateway's: all six built-in channels, one in each state, with their platform names. */
const hub: ChannelHub = {
  statuses: () => [
    { type: 'channel_a', title: 'Feishu / Lark', status: 'not_configured' },
    { type: 'channel_b', title: 'DingTalk', status: 'not_configured' },
    { type: 'channel_c', title: 'WeCom AI bot', status: 'not_configured' },
    { type: 'channel_d', title: 'Slack', status: 'failed', reason: 'auth.test: invalid_auth' },
    { type: 'channel_e', title: 'Telegram', status: 'connected' },
    { type: 'channel_f', title: 'Discord', status: 'not_configured' },
  ],
  list: () => [{ name: 'channel_e', canSend: true }],
  send: async () => ({ ok: true }),
};

const fleet = () => [
  { name: 'tester', engine: 'engine_b', url: 'http://127.0.0.1:1', dashboardUrl: 'http://127.0.0.1:1/', self: true },
  {
    name: 'billing-bot',
    role: 'Invoices and refunds',
    engine: 'engine_d',
    hostname: 'app-2',
    url: 'http://127.0.0.1:9',
    dashboardUrl: 'http://127.0.0.1:9/',
    self: false,
  },
];

/** The panels each view shows (router.js); every other panel is hidden in that view. */
const VIEWS: Record<string, string[]> = {
  overview: ['status', 'channels', 'metrics', 'activity', 'escalations'],
  chat: ['chat'],
  activity: ['activity', 'escalations', 'refusals', 'quick-test'],
  tasks: ['tasks'],
  access: ['refusals', 'pairings', 'allowed'],
  config: ['config'],
  skills: ['skills'],
  fleet: ['fleet'],
  api: ['samples'],
};
const PANELS = [
  'status',
  'token',
  'channels',
  'metrics',
  'activity',
  'escalations',
  'refusals',
  'quick-test',
  'chat',
  'tasks',
  'config',
  'skills',
  'fleet',
  'samples',
  'pairings',
  'allowed',
];

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

/** Open a view from the menu and wait until the page shows it. */
async function go(page: Page, view: string): Promise<void> {
  await page.click(`#menu a[data-view="${view}"]`);
  await expect.poll(() => page.getAttribute('body', 'data-view')).toBe(view);
}

async function expectPanels(page: Page, view: string): Promise<void> {
  for (const id of PANELS) expect(await page.locator(`#panel-${id}`).isVisible(), `${view}: #panel-${id}`).toBe(VIEWS[view]?.includes(id) ?? false);
}

/** Turns from several sources, one failed and one asking for a human, so every view has something to show. */
async function seed(s: TestServer): Promise<void> {
  const chat = (message: string, sessionKey: string, source?: string, sender?: string) =>
    collect(s.assistant.chat(message, { sessionKey, ...(source ? { source } : {}), ...(sender ? { sender } : {}) }));
  await chat('What is on my calendar today?', 'channel_e:dm:alice', 'channel_e', 'alice');
  await chat('SAY:[ESCALATE] The customer asks for a refund above the limit.', 'channel_e:dm:bob', 'channel_e', 'bob');
  await chat('FAIL:upstream model overloaded', 'channel_d:group:ops', 'channel_d', 'carol');
  await chat('Summarise yesterday’s deploy log', 'curl-1');
}

/**
 * The messages the chart's bars add up to. The buckets follow the clock, so the four seeded
 * messages make one bar of 4, or two bars when seeding crossed the hour (a full run once did).
 */
const chartedMessages = (page: Page): Promise<number> =>
  page.evaluate(`[...document.querySelectorAll('#timeline rect.bar')].reduce((sum, bar) => sum + Number(bar.dataset.count ?? 0), 0)`);

interface Tick {
  axis: string;
  text: string;
  left: number;
  right: number;
  height: number;
}

/** The chart's axis labels as drawn: their text and on-screen boxes. */
const chartTicks = (page: Page): Promise<Tick[]> =>
  page.evaluate(`[...document.querySelectorAll('#timeline text.tick')].map((t) => {
    const r = t.getBoundingClientRect();
    return { axis: t.classList.contains('x') ? 'x' : 'y', text: t.textContent, left: r.left, right: r.right, height: r.height };
  })`);

/** Every range of the chart is readable at this width; the other ranges' panels go to the artifacts. */
async function expectReadableRanges(page: Page, width: number): Promise<void> {
  for (const range of ['1h', '7d', '24h']) {
    await page.selectOption('#timeline-range', range);
    const perBucket = range === '1h' ? 'per 5 minutes' : range === '7d' ? 'per 6 hours' : 'per hour';
    await expect.poll(() => text(page, '#timeline-title')).toBe(`Messages ${perBucket}`);
    await expectReadableChart(page, width);
    if (range !== '24h') await page.locator('#panel-metrics').screenshot({ path: path.join(ARTIFACTS, `dashboard-${width}-chart-${range}.png`) });
  }
}

/** Readable: real-size text (not a scaled-down drawing), times on x that never overlap, whole counts on y from 0. */
async function expectReadableChart(page: Page, width: number): Promise<void> {
  const ticks = await chartTicks(page);
  const x = ticks.filter((t) => t.axis === 'x').sort((a, b) => a.left - b.left);
  const y = ticks.filter((t) => t.axis === 'y');
  expect(x.length, `x labels at ${width}px`).toBeGreaterThanOrEqual(3);
  expect(y.map((t) => t.text)).toContain('0');
  for (const t of y) expect(t.text).toMatch(/^\d+$/);
  for (const t of x) expect(t.text).toMatch(/^((Sun|Mon|Tue|Wed|Thu|Fri|Sat) )?\d\d:\d\d$/);
  for (const t of ticks) {
    expect(t.height, `"${t.text}" at ${width}px`).toBeGreaterThanOrEqual(11);
    expect(t.left).toBeGreaterThanOrEqual(0);
    expect(t.right).toBeLessThanOrEqual(width);
  }
  for (let i = 1; i < x.length; i++) expect(x[i]!.left, `"${x[i - 1]!.text}" and "${x[i]!.text}" at ${width}px`).toBeGreaterThan(x[i - 1]!.right + 4);
}

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

describe('dashboard in chromium', () => {
  it('without the token: only the status panel, no menu, a view fragment kept; a typed token opens that view, #token= in an open tab unlocks it', async () => {
    s = await startTestServer({ hub });
    const { page, requests, problems } = await open(`${s.url}/#/skills`);
    await expect.poll(() => text(page, '#f-name')).toBe('tester');
    expect(await text(page, '#f-engine')).toBe('engine_b');
    expect(await text(page, '#f-version')).toBe('0.0.0-test');
    expect(await page.locator('#panel-token').isVisible()).toBe(true);
    expect(await page.locator('#menu').isVisible()).toBe(false);
    for (const id of PANELS.filter((p) => p !== 'status' && p !== 'token')) expect(await page.locator(`#panel-${id}`).isVisible(), id).toBe(false);
    expect(await page.locator('#channels li').count()).toBe(0);
    expect(await page.locator('#config .setting').count()).toBe(0);
    expect(requests.filter((r) => r.includes('/api/'))).toEqual([]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-1280-locked.png') });
    // A view fragment is not a token.
    expect(await page.evaluate('sessionStorage.getItem("service-token")')).toBeNull();
    expect(new URL(page.url()).hash).toBe('#/skills');

    await page.fill('#token-input', 'not-the-token');
    await page.click('#token-form button');
    await expect.poll(() => text(page, '#token-error')).toContain('not accepted');
    expect(await page.locator('#panel-skills').isVisible()).toBe(false);
    expect(await page.evaluate('sessionStorage.getItem("service-token")')).toBeNull();

    await page.fill('#token-input', TEST_TOKEN);
    await page.click('#token-form button');
    await page.locator('#panel-skills').waitFor({ state: 'visible' });
    await expectPanels(page, 'skills');
    expect(await page.locator('#menu a[aria-current="page"]').getAttribute('data-view')).toBe('skills');
    expect(await page.evaluate('sessionStorage.getItem("service-token")')).toBe(TEST_TOKEN);

    await page.click('#forget-token');
    await page.locator('#panel-token').waitFor({ state: 'visible' });
    expect(await page.locator('#menu').isVisible()).toBe(false);
    expect(await page.evaluate('sessionStorage.getItem("service-token")')).toBeNull();
    // The gateway's link pasted into the open tab: the token is taken, the fragment cleared, the overview shown.
    await page.evaluate(`location.hash = '#token=${TEST_TOKEN}'`);
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    expect(new URL(page.url()).hash).toBe('');
    await expectPanels(page, 'overview');
    // The one failed request was the wrong token's; nothing else went wrong on the page.
    expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
  });

  it('1280 px: the overview fits one 1280x800 screen; the menu reaches every view; chart labels readable; screenshots of each view', async () => {
    s = await startTestServer({ hub, fleet, files: { 'skills/notes/SKILL.md': '---\nname: notes\ndescription: Keeps notes.\n---\n' } });
    await seed(s);
    const { page, problems } = await open(`${s.url}/#token=${TEST_TOKEN}`, { width: 1280, height: 800 });
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    expect(new URL(page.url()).hash).toBe(''); // the token left the address bar
    await expect.poll(() => page.locator('#activity li.activity').count()).toBe(4);
    await expect.poll(() => page.locator('#escalations li.activity').count()).toBe(2);
    await expect.poll(() => chartedMessages(page)).toBe(4);
    await expect.poll(() => text(page, '#activity-state')).toBe('live');
    await expectPanels(page, 'overview');

    // Channels by key and platform; sources in the feed and the counters likewise.
    expect(await page.locator('#channels li').count()).toBe(6);
    expect(await text(page, '[data-channel="channel_d"]')).toContain('channel_d · Slack');
    expect(await text(page, '[data-channel="channel_d"]')).toContain('auth.test: invalid_auth');
    expect(await text(page, '[data-channel="channel_e"]')).toMatch(/channel_e · Telegram\s+connected/);
    expect(await text(page, '#m-sources')).toContain('channel_e · Telegram');
    expect(await text(page, '#activity')).toContain('channel_d · Slack');
    expect(await text(page, '#m-total')).toBe('4');

    // One screen: nothing to scroll, and each overview panel ends inside the window.
    const fit = (await page.evaluate(`({
      scroll: document.documentElement.scrollHeight,
      height: innerHeight,
      bottoms: ${JSON.stringify(VIEWS.overview)}.map((id) => document.getElementById('panel-' + id).getBoundingClientRect().bottom),
      firstItem: document.querySelector('#activity li').getBoundingClientRect().bottom,
    })`)) as { scroll: number; height: number; bottoms: number[]; firstItem: number };
    expect(fit.height).toBe(800);
    expect(fit.scroll).toBeLessThanOrEqual(800);
    for (const [i, bottom] of fit.bottoms.entries()) expect(bottom, VIEWS.overview![i]).toBeLessThanOrEqual(800);
    expect(fit.firstItem).toBeLessThanOrEqual(800);
    await expectReadableRanges(page, 1280);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-1280-overview.png') });

    await go(page, 'activity');
    await expectPanels(page, 'activity');
    await shot(page, 'dashboard-1280-activity');
    await go(page, 'config');
    await expectPanels(page, 'config');
    expect(await page.locator('#config .setting').count()).toBeGreaterThan(30);
    await shot(page, 'dashboard-1280-config');
    await go(page, 'skills');
    expect(await text(page, '#skills')).toContain('Keeps notes.');
    await shot(page, 'dashboard-1280-skills');
    await go(page, 'fleet');
    await expect.poll(() => page.locator('[data-peer="billing-bot"] a').getAttribute('href')).toBe('http://127.0.0.1:9/');
    expect(await text(page, '#fleet')).toContain('this gateway');
    expect(await text(page, '[data-peer="billing-bot"]')).toContain('on app-2');
    await shot(page, 'dashboard-1280-fleet');
    await go(page, 'api');
    expect(await text(page, '[data-sample="curl-chat"]')).toContain(`"${s.url}/chat"`);
    await shot(page, 'dashboard-1280-api');
    // Back and forward walk the views like pages.
    await page.goBack();
    await expect.poll(() => page.getAttribute('body', 'data-view')).toBe('fleet');
    await go(page, 'overview');
    await expectPanels(page, 'overview');
    expect(problems).toEqual([]);
  });

  it('390 px: the menu fits the phone (two rows at most) and opens every view; nothing scrolls sideways; the menu stays on screen; screenshots of each view', async () => {
    s = await startTestServer({ hub, fleet, files: { 'skills/notes/SKILL.md': '---\nname: notes\ndescription: Keeps notes.\n---\n' } });
    await seed(s);
    const { page, problems } = await open(`${s.url}/#token=${TEST_TOKEN}`, { width: 390, height: 844 });
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    await expect.poll(() => chartedMessages(page)).toBe(4);
    await expect.poll(() => text(page, '#activity-state')).toBe('live');

    const links = (await page.evaluate(`[...document.querySelectorAll('#menu a')].map((a) => {
      const r = a.getBoundingClientRect();
      return { view: a.dataset.view, left: r.left, right: r.right, top: r.top, height: r.height };
    })`)) as Array<{ view: string; left: number; right: number; top: number; height: number }>;
    expect(links.map((l) => l.view)).toEqual(Object.keys(VIEWS));
    for (const l of links) {
      expect(l.left, l.view).toBeGreaterThanOrEqual(0);
      expect(l.right, l.view).toBeLessThanOrEqual(390);
      expect(l.height, l.view).toBeGreaterThanOrEqual(28);
    }
    // Nine entries: at most two rows on a phone, none covering another.
    expect(new Set(links.map((l) => Math.round(l.top))).size).toBeLessThanOrEqual(2);
    for (const [i, a] of links.entries()) {
      for (const b of links.slice(i + 1)) {
        const apart = a.right <= b.left || b.right <= a.left || Math.abs(a.top - b.top) >= Math.min(a.height, b.height);
        expect(apart, `${a.view} / ${b.view}`).toBe(true);
      }
    }
    await expectReadableRanges(page, 390);

    for (const view of Object.keys(VIEWS)) {
      await go(page, view);
      await expectPanels(page, view);
      expect(await page.evaluate('document.documentElement.scrollWidth'), view).toBeLessThanOrEqual(390);
      await shot(page, `dashboard-390-${view}`);
      // Scrolled to the end of the view, the menu is still at the top of the screen.
      await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
      const top = (await page.evaluate(`document.querySelector('#menu').getBoundingClientRect().top`)) as number;
      expect(top, view).toBeGreaterThanOrEqual(0);
      expect(top, view).toBeLessThan(100);
    }
    // The long configuration view: a group button brings its group just under the sticky header.
    await go(page, 'config');
    await page.click('#config-groups button:has-text("Permissions (engine_a)")');
    const jump = (await page.evaluate(`({
      group: document.querySelector('[data-group="Permissions (engine_a)"]').getBoundingClientRect().top,
      header: document.querySelector('header').getBoundingClientRect().bottom,
    })`)) as { group: number; header: number };
    expect(jump.group).toBeGreaterThanOrEqual(jump.header);
    expect(jump.group).toBeLessThan(jump.header + 60);
    expect(problems).toEqual([]);
  });

  it('quick test: an approval request shows its whole command (escapes for what would not show), and Deny answers it', async () => {
    s = await startTestServer({ hub, yaml: 'skipPermissions: false\n' });
    const { page, problems } = await open(`${s.url}/#token=${TEST_TOKEN}`);
    await go(page, 'activity');
    const command = `${ZERO_WIDTH}\ntouch HIDDEN-LINE`;
    await page.fill('#qt-message', `ASK-B64:${Buffer.from(command).toString('base64')}`);
    await page.click('#qt-send');
    await page.locator('#qt-approvals [data-approval]').waitFor({ state: 'visible' });
    expect(await text(page, '#qt-approvals .approval-detail')).toBe('ls\\u{200B}×220; touch HIDDEN-ZW\\ntouch HIDDEN-LINE');
    await page.locator('#qt-approvals button', { hasText: 'Deny' }).click();
    await expect.poll(() => text(page, '#qt-status')).toBe('completed');
    expect(await text(page, '#qt-approvals')).toContain('denied');
    expect(await text(page, '#qt-output')).toContain('DENIED: The person denied this Bash call.');
    expect(fs.existsSync(path.join(s.dir, 'HIDDEN-ZW'))).toBe(false);
    expect(problems).toEqual([]);
  });

  it('activity view: a streamed quick test, live activity, counters and chart; samples copy', async () => {
    s = await startTestServer({ hub });
    const { page, problems } = await open(`${s.url}/#token=${TEST_TOKEN}`);
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    await expect.poll(() => text(page, '#activity-state')).toBe('live');

    // Quick test: the reply streams in, the tool call is listed, the status ends at completed.
    await go(page, 'activity');
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
    await go(page, 'overview');
    await expect.poll(() => text(page, '#m-total')).toBe('2');
    await expect.poll(() => page.locator('#timeline rect.bar[data-count="2"]').count()).toBe(1);
    expect(await text(page, '#m-sources')).toContain('http');

    await go(page, 'api');
    expect(await text(page, '[data-sample="curl-send"]')).toContain('"channel":"channel_e"');
    expect(await text(page, '[data-sample="embed"]')).toContain(`createAssistant({ dir: "${s.dir}" })`);
    // How to depend on the package, as it is distributed: the tarball of this version, never the registry's `service`.
    expect(await text(page, '[data-sample="embed"]')).toContain('npm install /path/to/service/agent-service-0.0.0-test.tgz'); // the version the server reports
    expect(await text(page, '[data-sample="embed-server"]')).toContain("from 'agent-service'");
    await context?.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.url });
    await page.click('[data-copy="curl-chat"]');
    await expect.poll(() => text(page, '[data-sample="curl-chat"] .copy-note')).toBe('copied');
    expect(await page.evaluate('navigator.clipboard.readText()')).toContain('Authorization: Bearer $SERVICE_TOKEN');
    expect(problems).toEqual([]);
  });

  it('tasks view: next run and last status per task; run now streams the reply; history; disable and enable write service.yaml', async () => {
    const sent: string[] = [];
    const server = await startTestServer({
      hub: { ...hub, send: async (_channel, _chatId, text) => (sent.push(text), { ok: true }) },
      yaml: `tasks:
  - id: report
    name: "Daily <b>report</b>"
    schedule: "0 9 * * *"
    prompt: "SLEEP:300 SAY:All quiet today."
    target: { channel: channel_e, chatId: "42" }
  - id: weekly
    name: Weekly digest
    schedule: "0 8 * * 1"
    prompt: Summarise the week.
    enabled: false
`,
    });
    s = server;
    const { page, problems } = await open(`${server.url}/#token=${TEST_TOKEN}`);
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    await go(page, 'tasks');
    await expectPanels(page, 'tasks');
    const task = (id: string) => page.locator(`#tasks li.task[data-task="${id}"]`);
    await expect.poll(() => page.locator('#tasks li.task').count()).toBe(2);
    expect(await text(page, '#tasks-count')).toBe('2');
    expect(await page.locator('#tasks-unscheduled').isVisible()).toBe(true); // no scheduler behind this test server
    // Markup in a task's name is text.
    expect(await task('report').locator('strong').innerText()).toBe('Daily <b>report</b>');
    expect(await page.locator('#tasks b').count()).toBe(0);
    const report = await task('report').innerText();
    expect(report).toContain('0 9 * * *');
    expect(report).toMatch(/next /);
    expect(report).toContain('sends to channel_e 42');
    expect(report).toContain('never run');
    expect(await task('weekly').innerText()).toContain('not scheduled (disabled)');

    // Run now: the reply streams into the card, then the card shows the run as the last one, delivered.
    await task('report').locator('[data-action="run"]').click();
    await expect.poll(() => task('report').locator('.run-status').innerText()).toBe('running…');
    await expect.poll(() => task('report').locator('.run-status').innerText(), { timeout: 15_000 }).toBe('completed');
    expect(await task('report').locator('.task-run .output').innerText()).toBe('All quiet today.');
    await expect.poll(() => task('report').locator('.task-last').innerText()).toContain('completed');
    expect(await task('report').locator('.task-last').innerText()).toContain('delivered');
    expect(sent).toEqual(['All quiet today.']);
    await page.locator('#panel-tasks').screenshot({ path: path.join(ARTIFACTS, 'dashboard-1280-tasks.png') });

    await task('report').locator('[data-action="history"]').click();
    await expect.poll(() => task('report').locator('.task-history li').count()).toBe(1);
    expect(await task('report').locator('.task-history li').innerText()).toContain('All quiet today.');

    // Disable writes service.yaml; the card says so; enable brings the next run back.
    const yaml = () => fs.readFileSync(path.join(server.dir, 'service.yaml'), 'utf8');
    await task('report').locator('[data-action="toggle"]').click();
    await expect.poll(() => task('report').innerText()).toContain('not scheduled (disabled)');
    expect(yaml()).toMatch(/id: report[\s\S]*enabled: false/);
    expect(s.config.current().config.tasks[0]?.enabled).toBe(false);
    await task('weekly').locator('[data-action="toggle"]').click();
    await expect.poll(() => task('weekly').getAttribute('data-enabled')).toBe('true');
    expect(s.config.current().config.tasks[1]?.enabled).toBe(true);
    // The open history survives the list being redrawn.
    expect(await task('report').locator('.task-history li').count()).toBe(1);
    await shot(page, 'dashboard-1280-tasks-view');
    expect(problems).toEqual([]);
  });

  it('tasks view: a one-shot task (/remind, `at:`) reads as once, with its time', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    s = await startTestServer({ yaml: `tasks:\n  - id: remind-abc123\n    name: "Reminder: stand up"\n    at: ${at}\n    prompt: stand up\n` });
    const { page, problems } = await open(`${s.url}/#token=${TEST_TOKEN}`);
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    await go(page, 'tasks');
    const card = page.locator('#tasks li.task[data-task="remind-abc123"]');
    await card.waitFor();
    expect(await card.locator('.task-when').innerText()).toMatch(/^once, .+ · next .+/);
    expect(await card.locator('.task-when code').count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it('edits settings: timeout is applied and written, engine needs a restart, a masked secret is never sent back', async () => {
    const server = await startTestServer({ yaml: '# operator notes\ntimeout: 600 # ten minutes\noauthToken: sk-oauth-very-secret\n' });
    s = server;
    const { page, patches, problems } = await open(`${server.url}/#/config`);
    await page.fill('#token-input', TEST_TOKEN);
    await page.click('#token-form button');
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
    // The choices are the server's registry (GET /api/engines), each marked when its CLI is on PATH.
    const choices = await setting('engine')
      .locator('select option')
      .evaluateAll((os) => os.map((o) => [o.getAttribute('value'), o.textContent]));
    const installed = Object.values(engineDefinitions).map((e) => [e.id, `${e.id} (${e.title})${findEngineBinary(e) ? ', installed' : ''}`]);
    expect(choices).toEqual(installed);
    expect(choices.map(([id]) => id)).toEqual(expect.arrayContaining(['engine_e', 'engine_f', 'acp']));
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

  it('an engine whose program is missing: the status panel says turns cannot start, why and the fix; it goes once it is there', async () => {
    s = await startTestServer({ engine: 'engine_a' });
    const agent = path.join(s.standIn.binDir, 'agent');
    const saved = fs.readFileSync(agent);
    fs.rmSync(agent);
    const { page, problems } = await open(`${s.url}/`);
    await page.locator('#f-engine').filter({ hasText: 'engine_a' }).waitFor();
    expect(await page.locator('#engine-warning').isVisible()).toBe(false); // locked: /api/status is behind the token
    await page.fill('#token-input', TEST_TOKEN);
    await page.click('#token-form button');
    await expect.poll(() => page.locator('#engine-warning').isVisible()).toBe(true);
    expect(await text(page, '#engine-warning')).toBe(
      "Turns cannot start: engine_a (Cursor agent CLI): agent / cursor-agent not found on PATH (fix: install it with the vendor's installer)",
    );
    fs.writeFileSync(agent, saved, { mode: 0o755 });
    await page.reload();
    await page.locator('#f-turns').filter({ hasText: 'running' }).waitFor();
    expect(await page.locator('#engine-warning').isVisible()).toBe(false);
    expect(problems).toEqual([]);
  });

  it('the status panel shows the warm engine processes: how many of warm.maxProcesses run, and each one', async () => {
    s = await startTestServer({ engine: 'acp' });
    const { page, problems } = await open(`${s.url}/#token=${TEST_TOKEN}`);
    await page.locator('#f-warm').filter({ hasText: '0 of 4 running, ended after 600 s idle' }).waitFor();
    // One turn on a conversation leaves its engine process running for the next one.
    const res = await s.api('/chat', { json: { message: 'hello', sessionKey: 'warm-k' } });
    expect(await res.text()).toContain('"status":"completed"');
    const [p] = s.assistant.engine.warm.processes();
    expect(p).toBeDefined();
    await page.reload();
    await page.locator('#f-warm').filter({ hasText: '1 of 4 running, ended after 600 s idle' }).waitFor();
    expect(await text(page, `#warm-processes li[data-pid="${p!.pid}"]`)).toMatch(
      new RegExp(`^pid ${p!.pid}\\s+acp · warm-k · 1 turn\\(s\\) · \\d+ MiB\\s*idle$`),
    );
    expect(problems).toEqual([]);
  });

  it('the status panel shows the replies waiting in the outbox, and since when', async () => {
    s = await startTestServer();
    const { page, problems } = await open(`${s.url}/#token=${TEST_TOKEN}`);
    await page.locator('#f-replies').filter({ hasText: 'none' }).waitFor();
    const kept = Date.now();
    for (const text of ['one', 'two'])
      await s.store.addOutboxEntry({
        channel: 'channel_e',
        kind: 'send',
        target: '42',
        targetKey: '["channel_e","42",""]',
        chatKey: 'channel_e:42',
        text,
        createdAt: kept,
        nextAttemptAt: kept + 60_000,
      });
    await page.reload();
    await page.locator('#f-replies').filter({ hasText: '2, the oldest since' }).waitFor();
    expect(problems).toEqual([]);
  });

  it('persona boundaries read as a list, one item each, markup as text; edited one per line', async () => {
    const boundaries = ['Never promise refunds', 'No legal advice', '<b>Escalate</b> angry customers'];
    const server = await startTestServer({
      yaml: `persona:\n  role: Support\n  boundaries:\n${boundaries.map((b) => `    - ${JSON.stringify(b)}\n`).join('')}`,
    });
    s = server;
    const { page, problems } = await open(`${server.url}/#token=${TEST_TOKEN}`);
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    await go(page, 'config');
    const setting = page.locator('.setting[data-path="persona.boundaries"]');
    await expect.poll(() => setting.locator('ul.value-list li').allInnerTexts()).toEqual(boundaries);
    expect(await setting.locator('b').count()).toBe(0);

    await setting.locator('[data-action="edit"]').click();
    expect(await setting.locator('textarea').inputValue()).toBe(boundaries.join('\n'));
    await setting.locator('textarea').fill('Never promise refunds\nAnswer in English');
    await setting.locator('[data-action="save"]').click();
    await expect.poll(() => setting.locator('ul.value-list li').allInnerTexts()).toEqual(['Never promise refunds', 'Answer in English']);
    expect(s.config.current().config.persona?.boundaries).toEqual(['Never promise refunds', 'Answer in English']);
    expect(problems).toEqual([]);
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
    await page.locator('#panel-escalations').waitFor({ state: 'visible' });
    await expect.poll(() => page.locator('#escalations li.activity').count()).toBe(2);
    await expect.poll(() => page.locator('#activity li.activity').count()).toBe(2);
    expect(await page.locator('main img, main b, main script').count()).toBe(0);
    // A failing image of our own (bytes that are no image, no request) has fired its handler: one
    // injected with the records (none is in the page) would have fired by now too.
    await page.evaluate(
      "const img = document.createElement('img'); img.onerror = () => { window.__control = true; }; img.src = 'data:image/png;base64,AAAA'; document.body.append(img);",
    );
    await page.waitForFunction('window.__control === true');
    expect(await page.evaluate('window.__xss')).toBeUndefined();
    expect(problems).toEqual([]);
  });

  it("access view: approve and deny pairing codes, revoke an approval; refusals beside the escalations; today's spending and the cap", async () => {
    s = await startTestServer({ hub, yaml: 'access:\n  allow: ["channel_e:1001"]\n  admins: ["channel_e:1001"]\n  dailyBudgetUsd: 5\n' });
    const srv = s;
    const ask = (id: string, code: string, kind: 'sender' | 'chat' = 'sender') =>
      srv.store.openPairing(
        { channel: 'channel_e', kind, id, label: `<b>${id}</b>`, createdAt: Date.now() - 120_000 },
        { code, ttlMs: 3_600_000, maxPending: 3 },
      );
    await ask('1002', 'BBBBBBBB');
    await ask('-100777', 'GGGGGGGG', 'chat');
    await srv.assistant.recordRefusal({
      source: 'channel_e',
      sender: 'mallory',
      sessionKey: 'channel_e:dm:1003',
      message: '<img src=x onerror=alert(1)> let me in',
      reason: 'rate_limited',
      detail: 'over 20 messages in 60 s; not processed',
      reply: '',
    });
    await collect(srv.assistant.chat('spend a little', { sessionKey: 'k' }));

    const { page, problems } = await open(`${srv.url}/#token=${TEST_TOKEN}`);
    await page.locator('#panel-channels').waitFor({ state: 'visible' });
    await expect.poll(() => text(page, '#m-today')).toBe('$0.0123 today of a $5.00 cap');
    await go(page, 'activity');
    await expectPanels(page, 'activity');
    await expect.poll(() => page.locator('#refusals li.activity').count()).toBe(1);
    expect(await text(page, '#refusals li.activity')).toContain('<img src=x onerror=alert(1)> let me in');
    expect(await text(page, '#refusals li.activity .kind-refused')).toBe('rate limited');
    await go(page, 'access');
    await expectPanels(page, 'access');
    await expect.poll(() => page.locator('#pairings li[data-code]').count()).toBe(2);
    expect(await text(page, '#pairings li[data-code="BBBBBBBB"]')).toMatch(/BBBBBBBB sender channel_e:1002 <b>1002<\/b> · 2 min ago/);
    expect(await text(page, '#access-policy')).toBe('Direct messages: pairing codes. Groups: pairing codes.');
    expect(await text(page, '#allowed-senders')).toContain('channel_e:1001 · service.yaml');
    expect(await text(page, '#access-admins')).toContain('channel_e:1001');
    await shot(page, 'dashboard-1280-access');

    await page.click('#pairings li[data-code="BBBBBBBB"] button[data-action="approve"]');
    await expect.poll(() => page.locator('#pairings li[data-code]').count()).toBe(1);
    expect(await srv.store.isGranted('channel_e', 'sender', '1002')).toBe(true);
    await expect.poll(() => text(page, '#access-note')).toContain('Approved channel_e:1002');
    await expect.poll(() => page.locator('#allowed-senders li[data-id="channel_e:1002"]').count()).toBe(1);
    await page.click('#pairings li[data-code="GGGGGGGG"] button[data-action="deny"]');
    await expect.poll(() => text(page, '#pairings')).toBe('no pairing codes are waiting');
    expect(await srv.store.pairingRequests(Date.now())).toEqual([]);
    await page.click('#allowed-senders li[data-id="channel_e:1002"] button[data-action="revoke"]');
    await expect.poll(() => page.locator('#allowed-senders li[data-id="channel_e:1002"]').count()).toBe(0);
    expect(await srv.store.isGranted('channel_e', 'sender', '1002')).toBe(false);
    // Configured entries are edited in service.yaml: no revoke button.
    expect(await page.locator('#allowed-senders li[data-id="channel_e:1001"] button').count()).toBe(0);
    expect(problems).toEqual([]);
  });
});
