import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/chat-page.js';
import { startTestServer, TEST_TOKEN } from '../helpers/server.js';

/**
 * The commands the dashboard names (`service access approve <CODE>`) are written as this CLI is
 * typed on the gateway's machine (/api/status `cli`): `agent-service` where a bare `service` is
 * Debian's tool. The in-process test server is not started as the CLI, so its `cli` is `service`;
 * the page is given the form a gateway under that clash reports (test/integration/cli/command-name).
 */
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe('dashboard: the commands it names', () => {
  it('are written with the form /api/status gives (agent-service where service is the system tool)', async () => {
    const s = await startTestServer();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      let real: { cli?: string } | undefined;
      await page.route('**/api/status', async (route) => {
        const response = await route.fetch();
        real = (await response.json()) as { cli?: string };
        await route.fulfill({ response, json: { ...real, cli: 'agent-service' } });
      });
      await page.goto(`${s.url}/#token=${TEST_TOKEN}`);
      await page.locator('#menu a[data-view="access"]').click();
      const commands = page.locator('code[data-cli]');
      await expect.poll(() => commands.allInnerTexts()).toEqual(['agent-service access approve <CODE>', 'agent-service access']);
      expect(real?.cli).toBe('service');
    } finally {
      await context.close();
      await s.stop();
    }
  });
});
