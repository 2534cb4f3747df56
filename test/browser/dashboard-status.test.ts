import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium, waitForChat } from '../helpers/chat-page.js';
import { startTestServer, TEST_TOKEN } from '../helpers/server.js';

/**
 * The token link opened while the gateway cannot answer (it is restarting, the network dropped):
 * the page unlocks by itself once the gateway answers, with no reload (it stayed locked until one).
 */
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe('dashboard: unlocking', () => {
  it('a token the gateway could not check is tried again: the menu and the Chat view come without a reload', async () => {
    const s = await startTestServer();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      let refused = 0;
      // The first check of the token fails as a dropped connection does.
      await page.route('**/api/status', async (route) => {
        if (refused++ === 0) return route.abort('connectionreset');
        return route.continue();
      });
      await page.goto(`${s.url}/#token=${TEST_TOKEN}`);
      // The page's status refresh checks the token again (deadline only against a hang).
      await page.locator('#menu a[data-view="chat"]').waitFor({ state: 'visible', timeout: 25_000 });
      expect(await page.locator('#token-error').isVisible()).toBe(false);
      await page.click('#menu a[data-view="chat"]');
      await waitForChat(page);
      expect(refused).toBeGreaterThan(1);
    } finally {
      await context.close();
      await s.stop();
    }
  });
});
