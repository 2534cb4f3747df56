import fs from 'node:fs';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { repoRoot } from './cli.js';
import { startTestServer, TEST_TOKEN, type TestServer } from './server.js';

/**
 * The dashboard's Chat view in a real browser (Debian's chromium through playwright-core), as
 * test/browser/dashboard.test.ts drives the other views: console errors, page errors (a CSP
 * violation shows up there) and dialogs (an injected `alert` would) are collected for the test
 * to assert none happened.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = path.join(repoRoot, 'test-artifacts');

export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does)`);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

/**
 * A Chat-view test file's fixture: one Chromium for the file; `open` starts a server and opens the
 * view on it, and both are closed after each test (the page first).
 */
export function useChatView(): { open(server?: Parameters<typeof startTestServer>[0], viewport?: Viewport): Promise<{ s: TestServer; w: ChatPage }> } {
  let browser: Browser | undefined;
  const opened: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    for (const close of opened.splice(0).reverse()) await close();
  });
  return {
    async open(server, viewport) {
      if (!browser) throw new Error('useChatView: open() is for tests, after beforeAll');
      const s = await startTestServer(server);
      opened.push(() => s.stop());
      const w = await openChat(browser, s.url, viewport);
      opened.push(() => w.context.close());
      return { s, w };
    },
  };
}

type Viewport = { width: number; height: number };

export interface ChatPage {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught page errors. */
  problems: string[];
  /** alert/confirm/prompt dialogs the page opened (dismissed at once). */
  dialogs: string[];
  /** `METHOD url` of every request the page made. */
  requests: string[];
}

/** Open the Chat view with the token in the fragment, as the gateway's link does. */
export async function openChat(browser: Browser, url: string, viewport = { width: 1280, height: 800 }): Promise<ChatPage> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const page = await context.newPage();
  const w: ChatPage = { context, page, problems: [], dialogs: [], requests: [] };
  page.on('console', (m) => {
    // Chromium fails requests in flight with ERR_NETWORK_CHANGED when the machine's network
    // interfaces change (containers starting beside the tests): the machine's doing, not the page's.
    if (m.type() === 'error' && !m.text().includes('net::ERR_NETWORK_CHANGED')) w.problems.push(`console: ${m.text()} ${m.location().url}`);
  });
  page.on('pageerror', (e) => w.problems.push(`pageerror: ${e.message}`));
  page.on('dialog', (d) => {
    w.dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  page.on('request', (r) => w.requests.push(`${r.method()} ${r.url()}`));
  await page.goto(`${url}/#token=${TEST_TOKEN}`);
  await page.locator('#panel-status').waitFor({ state: 'visible' });
  await page.click('#menu a[data-view="chat"]');
  await waitForChat(page);
  return w;
}

/** The Chat view is shown and its conversation is open (its history loaded). */
export async function waitForChat(page: Page): Promise<void> {
  await page.locator('#panel-chat').waitFor({ state: 'visible' });
  await expect.poll(() => page.locator('#chat-key').innerText()).toMatch(/^session \S/);
}

/** Type a message into the box and send it with the button. */
export async function send(page: Page, message: string): Promise<void> {
  await page.fill('#chat-input', message);
  await page.click('#chat-send');
}

/** The assistant's side of the n-th turn shown (0-based; -1: the last). */
export function turn(page: Page, n = -1): Locator {
  const all = page.locator('#chat-transcript .msg.assistant');
  return n < 0 ? all.last() : all.nth(n);
}

/** Wait until the turn's bubble is in `state` (running, completed, aborted, failed…). */
export async function turnState(t: Locator, state: string): Promise<void> {
  await expect.poll(() => t.getAttribute('data-state')).toBe(state);
}

/** The key of the open conversation. */
export async function currentKey(page: Page): Promise<string> {
  return (await page.locator('#chat-key').innerText()).replace(/^session /, '');
}

export const shot = (page: Page, name: string) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
