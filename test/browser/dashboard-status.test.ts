import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, waitForChat } from '../helpers/chat-page.js';
import { startTestServer, TEST_TOKEN } from '../helpers/server.js';

/**
 * What the page takes from /api/status, in headless Chromium:
 * - the token link opened while the gateway cannot answer (it is restarting, the network dropped):
 *   the page unlocks by itself once the gateway answers, with no reload (it stayed locked until one);
 * - the commands the page names (`service access approve <CODE>`), written as this CLI is typed on
 *   the gateway's machine (`cli`): `agent-service` where a bare `service` is Debian's tool. The
 *   in-process test server is not started as the CLI, so its `cli` is `service`; the page is given
 *   the form a gateway under that clash reports (test/integration/cli/command-name.test.ts).
 */
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

/** A test server and a desktop-sized page of its own, both gone after `use`. */
async function withPage(use: (page: Page, url: string) => Promise<void>): Promise<void> {
  const s = await startTestServer();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    await use(await context.newPage(), s.url);
  } finally {
    await context.close();
    await s.stop();
  }
}

describe('dashboard: unlocking', () => {
  it('a token the gateway could not check is tried again: the menu and the Chat view come without a reload', async () => {
    await withPage(async (page, url) => {
      let refused = 0;
      // The first check of the token fails as a dropped connection does.
      await page.route('**/api/status', async (route) => {
        if (refused++ === 0) return route.abort('connectionreset');
        return route.continue();
      });
      await page.goto(`${url}/#token=${TEST_TOKEN}`);
      // The page's status refresh checks the token again (deadline only against a hang).
      await page.locator('#menu a[data-view="chat"]').waitFor({ state: 'visible', timeout: 25_000 });
      expect(await page.locator('#token-error').isVisible()).toBe(false);
      await page.click('#menu a[data-view="chat"]');
      await waitForChat(page);
      expect(refused).toBeGreaterThan(1);
    });
  });
});

describe('dashboard: the commands it names', () => {
  it('are written with the form /api/status gives (agent-service where service is the system tool)', async () => {
    await withPage(async (page, url) => {
      let real: { cli?: string } | undefined;
      await page.route('**/api/status', async (route) => {
        const response = await route.fetch();
        real = (await response.json()) as { cli?: string };
        await route.fulfill({ response, json: { ...real, cli: 'agent-service' } });
      });
      await page.goto(`${url}/#token=${TEST_TOKEN}`);
      await page.locator('#menu a[data-view="access"]').click();
      const commands = page.locator('code[data-cli]');
      await expect.poll(() => commands.allInnerTexts()).toEqual(['agent-service access approve <CODE>', 'agent-service access']);
      expect(real?.cli).toBe('service');
    });
  });
});
