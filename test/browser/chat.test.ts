import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ChatPage, launchChromium, openChat, send, shot, turn, turnState } from '../helpers/chat-page.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The dashboard's Chat view in headless Chromium against the real app on a real port, with the
 * stand-in engine: the reply growing, Markdown shown safely, Stop, queued messages.
 */
let browser: Browser;
let s: TestServer | undefined;
let w: ChatPage | undefined;

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  await w?.context.close();
  w = undefined;
  await s?.stop();
  s = undefined;
});

describe('chat view: a turn', () => {
  it('the reply is seen growing before it completes; then its tool call, duration and cost; Markdown rendered', async () => {
    s = await startTestServer();
    w = await openChat(browser, s.url);
    const { page } = w;
    await send(page, 'GATE:gate-1 TOOL:Bash SAY:Now **bold** and `code`.');
    const t = turn(page);
    // The first part is on the page while the engine still waits at its gate: no completion yet.
    await expect.poll(() => t.locator('.reply').innerText()).toContain('Before the gate.');
    expect(await t.getAttribute('data-state')).toBe('running');
    expect(await t.locator('.turn-meta').innerText()).toBe('');
    expect(await page.locator('#chat-stop').isVisible()).toBe(true);
    await shot(page, 'chat-1280-growing');
    fs.writeFileSync(path.join(s.dir, 'gate-1'), '');
    await turnState(t, 'completed');
    expect(await t.locator('.reply').innerText()).toContain('Before the gate.');
    expect(await t.locator('.reply strong').innerText()).toBe('bold');
    expect(await t.locator('.reply code').innerText()).toBe('code');
    expect(await t.locator('.tool-lines li').count()).toBe(1);
    expect(await t.locator('.tool-lines summary').innerText()).toContain('Bash');
    // The line opens to the call's input and result.
    await t.locator('.tool-lines summary').click();
    expect(await t.locator('.tool-args').innerText()).toContain('echo hi');
    expect(await t.locator('.tool-result').innerText()).toBe('hi\n');
    expect(await t.locator('.turn-meta').innerText()).toMatch(/^completed · \d+(\.\d)? m?s · \$0\.0123/);
    expect(await page.locator('#chat-stop').isVisible()).toBe(false);
    expect(w.problems).toEqual([]);
  });
});
