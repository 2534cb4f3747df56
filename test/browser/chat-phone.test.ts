import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { send, shot, turn, turnState, useChatView } from '../helpers/chat-page.js';

/**
 * The Chat view on a 390 px phone (nothing scrolls sideways, the box stays on screen, also with
 * the keyboard's share of the screen taken), and the screenshots docs/dashboard.md shows
 * (test-artifacts/chat-1280.png and chat-390.png, copied to docs/images/).
 */
const chat = useChatView();

/** A reply with what tends to push a phone page sideways: a long word, a wide code line, a wide table. */
const WIDE = [
  '## Deploy summary',
  '',
  `The build id is ${'0123456789abcdef'.repeat(8)}.`,
  '',
  '- **api**: restarted, healthy',
  '- **worker**: restarted, 2 retries',
  '',
  '```sh',
  `kubectl rollout status deployment/api --namespace production --timeout 600s --watch=true # ${'x'.repeat(80)}`,
  '```',
  '',
  '| service | replicas | image | started | health | notes |',
  '|---|---|---|---|---|---|',
  '| api | 3 | registry.example.com/team/api:2025-03-14-1 | 09:12 | ok | rolled out without errors |',
].join('\n');

interface Box {
  top: number;
  bottom: number;
  left: number;
  right: number;
}

const box = (page: Page, selector: string) =>
  page.evaluate(
    `(() => { const r = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect(); return { top: r.top, bottom: r.bottom, left: r.left, right: r.right }; })()`,
  ) as Promise<Box>;

/** Nothing scrolls sideways, and the box (text field, Send) is whole on the screen. */
async function expectUsable(page: Page, width: number, height: number): Promise<void> {
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(width);
  expect(await page.evaluate('document.body.scrollWidth')).toBeLessThanOrEqual(width);
  expect(await page.evaluate('document.querySelector("#chat-transcript").scrollWidth <= document.querySelector("#chat-transcript").clientWidth')).toBe(true);
  for (const selector of ['#chat-input', '#chat-send', '#chat-attach']) {
    const b = await box(page, selector);
    expect(b.top, selector).toBeGreaterThanOrEqual(0);
    expect(b.bottom, selector).toBeLessThanOrEqual(height);
    expect(b.left, selector).toBeGreaterThanOrEqual(0);
    expect(b.right, selector).toBeLessThanOrEqual(width);
  }
}

describe('chat view on a phone', () => {
  it('390 px: nothing scrolls sideways, the box stays on screen (also when the keyboard takes half the height), the list opens as a sheet', async () => {
    const { w } = await chat.open({ files: { 'wide.md': WIDE } }, { width: 390, height: 844 });
    const { page } = w;
    await expectUsable(page, 390, 844);
    await send(page, `REPLY-FILE:wide.md ${'a-very-long-word-'.repeat(12)}`);
    await turnState(turn(page), 'completed');
    expect(await turn(page).locator('table').count()).toBe(1);
    await expectUsable(page, 390, 844);
    // The newest message is in view: the transcript follows the reply.
    const last = await box(page, '#chat-transcript .msg:last-child');
    expect(last.bottom).toBeLessThanOrEqual((await box(page, '#chat-form')).top + 1);
    await shot(page, 'chat-390-wide');

    // A keyboard open: the visual viewport is half as high, and the box moves up with it.
    await page.setViewportSize({ width: 390, height: 420 });
    await expect.poll(async () => (await box(page, '#chat-send')).bottom).toBeLessThanOrEqual(420);
    await expectUsable(page, 390, 420);
    await page.setViewportSize({ width: 390, height: 844 });

    // The conversations are a sheet over the conversation; choosing one closes it.
    expect(await page.locator('#chat-side').isVisible()).toBe(false);
    await page.click('#chat-list-toggle');
    expect(await page.locator('#chat-side').isVisible()).toBe(true);
    await page.click('#chat-list-close');
    expect(await page.locator('#chat-side').isVisible()).toBe(false);
    await page.click('#chat-list-toggle');
    await expectUsable(page, 390, 844);
    await page.click('#chat-new');
    await expect.poll(() => page.locator('#chat-side').isVisible()).toBe(false);
    expect(await page.locator('#chat-transcript .msg').count()).toBe(0);
    await page.click('#chat-list-toggle');
    await expect.poll(() => page.locator('#chat-list li').count()).toBe(2);
    await shot(page, 'chat-390-list');
    await page.locator('#chat-list li').nth(1).locator('.open').click();
    await expect.poll(() => page.locator('#chat-transcript table').count()).toBe(1);
    await expectUsable(page, 390, 844);
    expect(w.problems).toEqual([]);
  });

  it('the screenshots of docs/dashboard.md: a reply with Markdown, a tool call and a file, and an approval waiting (1280 and 390 px)', async () => {
    const reply = [
      'The deploy went through. **Two services** were restarted:',
      '',
      '1. `api`: healthy after 40 s',
      '2. `worker`: healthy after 2 retries',
      '',
      'To follow the rollout yourself:',
      '',
      '```sh',
      'kubectl rollout status deployment/worker',
      '```',
      '',
      'The full notes are attached.',
    ].join('\n');
    const { w } = await chat.open({ yaml: 'skipPermissions: false\n', files: { 'deploy.md': reply } });
    const { page } = w;
    // An earlier conversation in the list, and the shown one named by a rename (its first message
    // carries the stand-in's directives).
    await send(page, 'Summarise the open support tickets');
    await turnState(turn(page), 'completed');
    await page.click('#chat-new');
    await expect.poll(() => page.locator('#chat-transcript .msg').count()).toBe(0);
    await send(page, 'How did the deploy go? TOOL:Bash REPLY-FILE:deploy.md MAKE-FILE:deploy-notes.md:2048');
    await turnState(turn(page), 'completed');
    const row = page.locator('#chat-list li').first();
    await row.locator('[data-action="rename"]').click();
    await row.locator('input').fill('Deploy of the worker');
    await row.locator('input').press('Enter');
    await expect.poll(() => page.locator('#chat-title').innerText()).toBe('Deploy of the worker');
    await send(page, 'Restart the worker once more. ASK:echo restarted worker');
    await turn(page).locator('.approval').waitFor();
    await page.evaluate('document.querySelector("#chat-transcript").scrollTop = 1e6');
    await shot(page, 'chat-1280');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.evaluate('document.querySelector("#chat-transcript").scrollTop = 1e6');
    await expectUsable(page, 390, 844);
    await shot(page, 'chat-390');
    await turn(page).locator('[data-decision="allow"]').click();
    await turnState(turn(page), 'completed');
    expect(w.problems).toEqual([]);
  });
});
