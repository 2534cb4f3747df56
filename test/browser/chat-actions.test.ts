import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatLocalDay } from '../../src/core/util/local-day.js';
import { send, shot, turn, turnState, useChatView, waitForChat } from '../helpers/chat-page.js';

/**
 * The Chat view's actions in headless Chromium against the real app and the stand-in engine:
 * Stop and a queued message, approvals answered with a button, attachments reaching the engine,
 * a file from the agent downloaded.
 */
const chat = useChatView();

/** A 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

describe('chat view: Stop and the queue', () => {
  it('a message sent while a turn runs is shown queued; Stop ends the slow turn as aborted, keeping its text; the queued one runs next', async () => {
    const { s, w } = await chat.open();
    const { page } = w;
    await send(page, 'GATE:never-opened take your time');
    const slow = turn(page, 0);
    await expect.poll(() => slow.locator('.reply').innerText()).toBe('Before the gate.');
    await send(page, 'and then this');
    const queued = turn(page, 1);
    await turnState(queued, 'queued');
    expect(await queued.locator('.turn-state').innerText()).toBe('queued: starts when the turn before it ends');
    expect(await slow.getAttribute('data-state')).toBe('running');
    await shot(page, 'chat-1280-queued');

    await page.click('#chat-stop');
    await turnState(slow, 'aborted');
    expect(await slow.locator('.reply').innerText()).toBe('Before the gate.');
    expect(await slow.locator('.error').innerText()).toBe('Aborted');
    expect(await slow.locator('.turn-meta').innerText()).toMatch(/^aborted · /);
    await turnState(queued, 'completed');
    expect(await queued.locator('.reply').innerText()).toMatch(/^ECHO: and then this\nTURN: \d$/);
    expect(await page.locator('#chat-stop').isVisible()).toBe(false);
    // The gateway recorded the first turn as aborted (it is listed among the escalations).
    const escalations = (await (await s.api('/api/escalations')).json()) as { escalations: Array<{ kind: string; messagePreview: string }> };
    expect(escalations.escalations).toEqual([expect.objectContaining({ kind: 'aborted', messagePreview: 'GATE:never-opened take your time' })]);

    // After a reload the stopped reply, read back from the history, is marked as it was live; the completed one is not.
    await page.reload();
    await waitForChat(page);
    const [stopped, next] = [turn(page, 0), turn(page, 1)];
    await turnState(stopped, 'aborted');
    expect(await stopped.locator('.reply').innerText()).toBe('Before the gate.');
    expect(await stopped.locator('.error').innerText()).toBe('Aborted');
    expect(await stopped.locator('.msg-meta .status-aborted').innerText()).toBe('aborted');
    expect(await next.getAttribute('data-state')).toBe('stored');
    expect(await next.locator('.error').isVisible()).toBe(false);
    expect(await next.locator('.msg-meta [class^="status-"]').count()).toBe(0);
    expect(w.problems).toEqual([]);
  });
});

describe('chat view: a turn running across a reload', () => {
  it('after a reload mid-turn the turn is shown running with Stop, and its stored reply comes when it ends; Stop stops such a turn', async () => {
    const { s, w } = await chat.open();
    const { page } = w;
    await send(page, 'GATE:reload-gate slow work');
    await expect.poll(() => turn(page).locator('.reply').innerText()).toBe('Before the gate.');
    await page.reload();
    await waitForChat(page);
    const earlier = turn(page);
    await turnState(earlier, 'running');
    expect(await page.locator('#chat-transcript .msg.system').last().innerText()).toContain('was running on the gateway when this page was loaded');
    expect(await page.locator('#chat-stop').isVisible()).toBe(true);
    fs.writeFileSync(path.join(s.dir, 'reload-gate'), '');
    await turnState(earlier, 'stored');
    expect(await earlier.locator('.reply').innerText()).toMatch(/^Before the gate\.\s*ECHO: GATE:reload-gate slow work/);
    expect(await page.locator('#chat-stop').isVisible()).toBe(false);

    // Stopped from the reloaded page: the turn ends on the gateway, keeping what it had said.
    await send(page, 'GATE:never-opened stop me after a reload');
    await expect.poll(() => turn(page).locator('.reply').innerText()).toBe('Before the gate.');
    await page.reload();
    await waitForChat(page);
    await turnState(turn(page), 'running');
    await page.click('#chat-stop');
    // It ends marked as a turn stopped here is: its stored reply carries the aborted mark, after another reload too.
    await turnState(turn(page), 'aborted');
    expect(await turn(page).locator('.reply').innerText()).toBe('Before the gate.');
    expect(await turn(page).locator('.error').innerText()).toBe('Aborted');
    await page.reload();
    await waitForChat(page);
    await turnState(turn(page), 'aborted');
    expect(await turn(page).locator('.reply').innerText()).toBe('Before the gate.');
    expect(await turn(page).locator('.error').innerText()).toBe('Aborted');
    expect(await turn(page).locator('.msg-meta .status-aborted').innerText()).toBe('aborted');
    const escalations = (await (await s.api('/api/escalations')).json()) as { escalations: Array<{ kind: string; messagePreview: string }> };
    expect(escalations.escalations).toEqual([expect.objectContaining({ kind: 'aborted', messagePreview: 'GATE:never-opened stop me after a reload' })]);
    expect(w.problems).toEqual([]);
  });
});

describe('chat view: approvals', () => {
  it('an approval request shows the whole request as text with Allow / Deny / Always; a button answers it and the turn goes on', async () => {
    const { s, w } = await chat.open({ yaml: 'skipPermissions: false\n' });
    const dir = s.dir;
    const { page } = w;
    const command = "echo '<b>done</b>' > CHAT-SIDE-EFFECT.txt";
    await send(page, `ASK:${command}`);
    const t = turn(page);
    const card = t.locator('.approval');
    await card.waitFor();
    expect(await card.locator('p').first().innerText()).toBe('Approval needed: the assistant wants to use Bash');
    expect(await card.locator('.approval-summary').innerText()).toBe(command);
    expect(await card.locator('b').count()).toBe(0);
    expect(await card.locator('button').allInnerTexts()).toEqual(['Allow', 'Deny', 'Always allow Bash']);
    expect(fs.existsSync(path.join(dir, 'CHAT-SIDE-EFFECT.txt'))).toBe(false);
    await shot(page, 'chat-1280-approval');

    await card.locator('[data-decision="allow_always"]').click();
    await expect.poll(() => card.getAttribute('data-answer')).toBe('allow_always');
    expect(await card.locator('.approval-note').innerText()).toBe('Allowed: Bash runs without asking for the rest of this conversation.');
    await turnState(t, 'completed');
    expect(await t.locator('.reply').innerText()).toBe('ALLOWED');
    expect(fs.readFileSync(path.join(dir, 'CHAT-SIDE-EFFECT.txt'), 'utf8')).toBe('<b>done</b>\n');
    // Always: the same tool in this conversation runs without a request.
    await send(page, 'ASK:echo again >> CHAT-SIDE-EFFECT.txt');
    await turnState(turn(page), 'completed');
    expect(await turn(page).locator('.reply').innerText()).toBe('ALLOWED');
    expect(await turn(page).locator('.approval').count()).toBe(0);

    // Deny, in a new conversation (Always held for the other one only).
    await page.click('#chat-new');
    await expect.poll(() => page.locator('#chat-transcript .msg').count()).toBe(0);
    await send(page, 'ASK:touch DENIED-SIDE-EFFECT.txt');
    await turn(page).locator('.approval').waitFor();
    await turn(page).locator('[data-decision="deny"]').click();
    await turnState(turn(page), 'completed');
    expect(await turn(page).locator('.approval-note').innerText()).toBe('Denied.');
    expect(await turn(page).locator('.reply').innerText()).toMatch(/^DENIED/);
    expect(fs.existsSync(path.join(dir, 'DENIED-SIDE-EFFECT.txt'))).toBe(false);
    expect(w.problems).toEqual([]);
  });
});

describe('chat view: approvals as a chat channel words them', () => {
  it('a long request is shown whole (not the cut summary), with the time a person has; an answer typed in the box settles its card', async () => {
    const { s, w } = await chat.open({ yaml: 'skipPermissions: false\napprovalTimeoutSeconds: 90\n' });
    const { page } = w;
    // Longer than the 500 characters of a summary: a channel's prompt cuts it, the card does not.
    const command = `echo ${'x'.repeat(700)} > LONG-SIDE-EFFECT.txt; echo END-OF-COMMAND`;
    await send(page, `ASK:${command}`);
    const card = turn(page).locator('.approval');
    await card.waitFor();
    expect(await card.locator('.approval-summary').innerText()).toBe(command);
    expect(await card.locator('.approval-rules').innerText()).toMatch(
      /^Or type \/allow, \/deny or \/allow always\. No answer within 90 s means no\. \(request [a-z2-9]{5}\)$/,
    );

    // Typed instead of pressed: the card shows the command's answer, not "ended without an answer".
    await send(page, '/allow');
    await expect.poll(() => card.getAttribute('data-answer')).toBe('allow');
    expect(await card.locator('.approval-note').innerText()).toMatch(/^Allowed Bash: echo x+/);
    expect(await card.locator('button:enabled').count()).toBe(0);
    await turnState(turn(page), 'completed');
    expect(await card.getAttribute('data-answer')).toBe('allow');
    expect(fs.existsSync(path.join(s.dir, 'LONG-SIDE-EFFECT.txt'))).toBe(true);

    await send(page, 'ASK:touch TYPED-DENY.txt');
    const second = turn(page).locator('.approval');
    await second.waitFor();
    await send(page, '/deny');
    await expect.poll(() => second.getAttribute('data-answer')).toBe('deny');
    await turnState(turn(page), 'completed');
    expect(fs.existsSync(path.join(s.dir, 'TYPED-DENY.txt'))).toBe(false);
    expect(w.problems).toEqual([]);
  });
});

describe('chat view: files', () => {
  it('an attached image and file reach the engine; a file the agent sends is a link that downloads it; limits are checked before sending', async () => {
    const { s, w } = await chat.open();
    const { page } = w;
    await page.setInputFiles('#chat-files', [
      { name: 'dot.png', mimeType: 'image/png', buffer: PNG },
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('remember the milk\n') },
    ]);
    await expect.poll(() => page.locator('#chat-attachments li').count()).toBe(2);
    expect(await page.locator('#chat-attachments img').count()).toBe(1);
    // Too big for an image: refused here, with the limit, and the others stay.
    await page.setInputFiles('#chat-files', [{ name: 'huge.png', mimeType: 'image/png', buffer: Buffer.alloc(6 * 1024 * 1024) }]);
    await expect.poll(() => page.locator('#chat-note').innerText()).toBe('Not attached: huge.png is 6.0 MB; an image may be up to 5.0 MB.');
    expect(await page.locator('#chat-attachments li').count()).toBe(2);

    await send(page, 'What is in these? MAKE-FILE:report.txt:300 MAKE-FILE:zero.txt:0 SAY:Here is the report.');
    const t = turn(page);
    await turnState(t, 'completed');
    expect(await page.locator('#chat-attachments li').count()).toBe(0);
    expect(await page.locator('#chat-transcript .msg.user .attached li').allInnerTexts()).toEqual(['dot.png', 'notes.txt']);
    // The engine got the image as a file of its bytes, and the document saved in the workspace.
    const run = s.standIn.runs().at(-1) as { images: Array<{ exists: boolean; bytes: number }>; prompt: string };
    expect(run.images).toEqual([expect.objectContaining({ exists: true, bytes: PNG.length })]);
    expect(run.prompt).toContain(`inbox/${formatLocalDay(Date.now())}/notes.txt`);
    expect(fs.readFileSync(path.join(s.dir, 'inbox', formatLocalDay(Date.now()), 'notes.txt'), 'utf8')).toBe('remember the milk\n');

    const link = t.locator('.files a');
    expect(await link.innerText()).toBe('report.txt');
    expect(await t.locator('.files li:not(.failed)').innerText()).toContain('300 B · text/plain');
    // A file that could not be sent is listed with the reason, without a link.
    expect(await t.locator('.files li.failed').innerText()).toMatch(/^zero\.txt not sent: .*empty/);
    expect(await t.locator('.files a').count()).toBe(1);
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    expect(download.suggestedFilename()).toBe('report.txt');
    expect(fs.readFileSync(await download.path())).toEqual(Buffer.alloc(300, 0x61));
    await shot(page, 'chat-1280-files');
    expect(w.problems).toEqual([]);
  });
});
