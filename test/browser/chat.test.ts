import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { currentKey, send, shot, turn, turnState, waitForChat, useChatView } from '../helpers/chat-page.js';

/**
 * The dashboard's Chat view in headless Chromium against the real app on a real port, with the
 * stand-in engine: the reply growing, Markdown shown safely, Stop, queued messages.
 */
const chat = useChatView();

describe('chat view: a turn', () => {
  it('the reply is seen growing before it completes; then its tool call, duration and cost; Markdown rendered', async () => {
    const { s, w } = await chat.open();
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

  it('markup in a reply is text and runs nothing: <img onerror>, <script>, a javascript: link; links open in a new tab; code blocks copy; also after a reload', async () => {
    const { s, w } = await chat.open();
    const { page } = w;
    await w.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.url });
    const message = [
      'ECHO-PROMPT **bold** <img src=x onerror="alert(1)"> [docs](https://example.com/docs) [bad](javascript:alert(2)) ![pic](https://example.com/p.png)',
      '',
      "<script>window.__xss = 'script'</script>",
      '',
      '```js',
      'const tag = "<b>not bold</b>";',
      '```',
    ].join('\n');
    await send(page, message);
    const t = turn(page);
    await turnState(t, 'completed');
    const reply = t.locator('.reply');
    const expectSafe = async () => {
      expect(await reply.locator('strong').innerText()).toBe('bold');
      const shown = await reply.innerText();
      expect(shown).toContain('<img src=x onerror="alert(1)">');
      expect(shown).toContain("<script>window.__xss = 'script'</script>");
      expect(shown).toContain('const tag = "<b>not bold</b>";');
      // Nothing of it became an element: no image, script or bold tag anywhere in the conversation.
      expect(await page.locator('#chat-transcript img, #chat-transcript script, #chat-transcript b').count()).toBe(0);
      const link = reply.locator('a', { hasText: 'docs' });
      expect(await link.getAttribute('href')).toBe('https://example.com/docs');
      expect(await link.getAttribute('target')).toBe('_blank');
      expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
      // A javascript: target is no link; an image is a link to it, never loaded.
      expect(await reply.locator('a', { hasText: 'bad' }).count()).toBe(0);
      expect(await reply.locator('.md-badlink').innerText()).toBe('bad');
      expect(await reply.locator('a', { hasText: '[image: pic]' }).getAttribute('href')).toBe('https://example.com/p.png');
    };
    await expectSafe();
    await reply.locator('.code-block button').click();
    await expect.poll(() => reply.locator('.code-block .copy-note').innerText()).toBe('copied');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe('const tag = "<b>not bold</b>";');
    await shot(page, 'chat-1280-markup');

    // After a reload the reply comes from the stored history, shown the same way.
    await page.reload();
    await waitForChat(page);
    await expect.poll(() => page.locator('#chat-transcript .msg.assistant').count()).toBe(1);
    expect(await t.getAttribute('data-state')).toBe('stored');
    await expectSafe();
    expect(await page.evaluate('window.__xss')).toBeUndefined();
    expect(w.dialogs).toEqual([]);
    // The only requests to other hosts would be an image's or a script's: there are none.
    expect(w.requests.filter((r) => r.includes('example.com'))).toEqual([]);
    expect(w.problems).toEqual([]);
  });
});

describe('chat view: conversations', () => {
  it('a new conversation and switching back, also after a reload (messages from the store); rename and delete', async () => {
    const { s: srv, w } = await chat.open();
    const { page } = w;
    const rows = page.locator('#chat-list li');
    await send(page, 'first topic');
    await turnState(turn(page), 'completed');
    const first = await currentKey(page);
    expect(first).toMatch(/^web-[0-9a-f]{12}$/);
    // The first message names the conversation.
    await expect.poll(() => page.locator('#chat-title').innerText()).toBe('first topic');

    await page.click('#chat-new');
    await expect.poll(() => currentKey(page)).not.toBe(first);
    const second = await currentKey(page);
    expect(await page.locator('#chat-transcript .msg').count()).toBe(0);
    await send(page, 'second topic');
    await turnState(turn(page), 'completed');
    expect(await turn(page).locator('.reply').innerText()).toBe('ECHO: second topic\nTURN: 1');
    await expect.poll(() => rows.count()).toBe(2);
    // Newest activity first, each with its last activity from GET /api/sessions.
    await expect.poll(() => rows.locator('.name').allInnerTexts()).toEqual(['second topic', 'first topic']);
    await expect.poll(() => rows.first().locator('.when').innerText()).toMatch(/1 turn$/);

    await rows.nth(1).locator('.open').click();
    await expect.poll(() => currentKey(page)).toBe(first);
    expect(await turn(page).locator('.reply').innerText()).toBe('ECHO: first topic\nTURN: 1');
    await send(page, 'back on the first');
    await expect.poll(() => turn(page).locator('.reply').innerText()).toBe('ECHO: back on the first\nTURN: 2');

    // A reload opens the conversation open before, its messages read from the gateway's store:
    // this browser keeps keys and names only.
    const kept = String(await page.evaluate('JSON.stringify(localStorage)'));
    expect(kept).toContain(first);
    expect(kept).not.toContain('ECHO');
    await page.reload();
    await waitForChat(page);
    expect(await currentKey(page)).toBe(first);
    await expect.poll(() => page.locator('#chat-transcript .msg').count()).toBe(4);
    expect(await page.locator('#chat-transcript .msg.user .plain').allInnerTexts()).toEqual(['first topic', 'back on the first']);
    expect(await page.locator('#chat-transcript .msg.assistant .reply').allInnerTexts()).toEqual([
      'ECHO: first topic\nTURN: 1',
      'ECHO: back on the first\nTURN: 2',
    ]);
    expect(w.requests).toContain(`GET ${srv.url}/api/sessions/${first}/history?limit=200`);
    await page.locator(`#chat-list li[data-key="${second}"] .open`).click();
    await expect.poll(() => page.locator('#chat-transcript .msg.assistant .reply').allInnerTexts()).toEqual(['ECHO: second topic\nTURN: 1']);

    // Renaming names it in this browser; the name survives a reload.
    const row = page.locator(`#chat-list li[data-key="${second}"]`);
    await row.locator('[data-action="rename"]').click();
    await row.locator('input').fill('Renamed <b>topic</b>');
    await row.locator('input').press('Enter');
    await expect.poll(() => page.locator('#chat-title').innerText()).toBe('Renamed <b>topic</b>');
    await page.reload();
    await waitForChat(page);
    await expect.poll(() => row.locator('.name').innerText()).toBe('Renamed <b>topic</b>');
    expect(await page.locator('#chat-list b').count()).toBe(0);

    // Delete asks once more, then resets the key on the gateway and forgets it here.
    await row.locator('[data-action="delete"]').click();
    expect(await row.locator('[data-action="delete"]').innerText()).toBe('Delete?');
    expect(await rows.count()).toBe(2);
    await row.locator('[data-action="delete"]').click();
    await expect.poll(() => rows.count()).toBe(1);
    expect(await currentKey(page)).toBe(first);
    const history = (await (await srv.api(`/api/sessions/${second}/history`)).json()) as { messages: unknown[] };
    expect(history.messages).toEqual([]);
    const listed = (await (await srv.api('/api/sessions')).json()) as { sessions: Array<{ key: string }> };
    expect(listed.sessions.map((x) => x.key)).toEqual([first]);
    await shot(page, 'chat-1280-conversations');
    expect(w.problems).toEqual([]);
  });

  it('slash commands are answered as system lines; one the service does not know can go to the engine (POST /command)', async () => {
    const { s, w } = await chat.open();
    const { page } = w;
    await send(page, '/help');
    const line = page.locator('#chat-transcript .msg.system').last();
    await expect.poll(() => line.innerText()).toContain('/reset');
    expect(await page.locator('#chat-transcript .msg.assistant').count()).toBe(0);
    await send(page, '/review src/app.ts');
    await expect.poll(() => page.locator('#chat-transcript .msg.system').last().innerText()).toContain('Unknown command "/review"');
    await page.click('[data-action="engine-command"]');
    // The stand-in is engine_b, which has no commands of its own: the API's refusal, as a failed turn.
    await turnState(turn(page), 'failed');
    expect(await turn(page).locator('.error').innerText()).toContain('does not support native commands');
    expect(w.requests).toContain(`POST ${s.url}/command`);
    expect(w.problems).toEqual([]);
  });

  it('/reset clears the conversation on the page as in the store: nothing of it comes back after a reload', async () => {
    const { w } = await chat.open();
    const { page } = w;
    await send(page, 'remember this');
    await turnState(turn(page), 'completed');
    await send(page, '/reset');
    await expect.poll(() => page.locator('#chat-transcript .msg.system').last().innerText()).toContain('Session reset');
    expect(await page.locator('#chat-transcript .msg.assistant').count()).toBe(0);
    expect(await page.locator('#chat-transcript .msg.user').allInnerTexts()).toEqual([expect.stringContaining('/reset')]);
    await page.reload();
    await waitForChat(page);
    expect(await page.locator('#chat-transcript .msg.assistant').count()).toBe(0);
    expect(await page.locator('#chat-transcript').innerText()).not.toContain('remember this');
    expect(w.problems).toEqual([]);
  });
});
