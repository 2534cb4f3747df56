import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROMPT_MAX } from '../../../src/core/approvals/summary.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { PLATFORMS, replies, usePlatformGateway } from '../../helpers/channel-gateway.js';
import { HIDDEN_COMMANDS } from '../../helpers/hidden-commands.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * What a person approves shows what runs (issue 29), on each of the six channels through the real
 * gateway, the platform's real SDK and its fake: the three commands that once hid their harmful
 * part reach the chat with it visible (and are denied: the hidden part never runs); a command
 * past the prompt's length says it is cut and `/approval <id>` shows all of it; a member's
 * display name never becomes a link in the prompt.
 */
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

describe.each(Object.values(PLATFORMS))('$key: an approval prompt shows what runs', (spec) => {
  // A failing test must not wait out the default 5 minutes of an unanswered request.
  const setup = usePlatformGateway(spec, 'skipPermissions: false\napprovalTimeoutSeconds: 30\n');
  const [alice, bob] = spec.users;
  const prompts = (f: FakePlatform) => replies(f).filter((o) => o.text.includes('Approval needed'));
  const nth = (f: FakePlatform, text: string, n: number) =>
    until(() => replies(f).filter((o) => o.text.includes(text)).length >= n, HANG_MS, `${n}× "${text}" in the chat`);

  it('the 230-character tail, the second line and the text behind 220 zero-width spaces are all in the prompt', async () => {
    const { fake: f, gw: g } = await setup();
    for (const [i, hidden] of HIDDEN_COMMANDS.entries()) {
      await f.deliver({ chatType: 'direct', userId: alice, text: `ASK-B64:${b64(hidden.command)}` });
      await until(() => prompts(f).length > i, HANG_MS, `prompt ${i + 1}`);
      const shown = prompts(f)[i]!.text;
      expect(shown, hidden.name).toContain(hidden.shown);
      expect(shown).not.toMatch(/[\u200b\u202a-\u202e\u2066-\u2069]/);
      await f.deliver({ chatType: 'direct', userId: alice, text: '/deny' });
      await nth(f, 'DENIED: The person denied this Bash call.', i + 1);
      expect(fs.existsSync(path.join(g.dir, hidden.marker))).toBe(false);
    }
  });

  it('past the prompt length: the prompt says it is cut; /approval <id> shows the whole command', async () => {
    const { fake: f } = await setup();
    const command = `echo ${'b'.repeat(PROMPT_MAX)} ; touch PAST-THE-CUT`;
    await f.deliver({ chatType: 'direct', userId: alice, text: `ASK-B64:${b64(command)}` });
    await until(() => prompts(f).length > 0, HANG_MS, 'the prompt');
    const prompt = prompts(f)[0]!.text;
    expect(prompt).not.toContain('PAST-THE-CUT');
    const id = /\/approval ([a-z2-9]{5})/.exec(prompt)?.[1];
    expect(prompt).toContain(`of ${command.length} characters shown; send /approval ${id} to see all of it`);
    await f.deliver({ chatType: 'direct', userId: alice, text: `/approval ${id}` });
    await nth(f, `Approval ${id}: the whole Bash call`, 1);
    const whole = replies(f)
      .filter((o) => !o.text.includes('Approval needed'))
      .map((o) => o.text)
      .join('\n');
    expect(whole.replace(/\s/g, '')).toContain('touchPAST-THE-CUT');
    await f.deliver({ chatType: 'direct', userId: alice, text: `/deny ${id}` });
    await nth(f, 'DENIED', 1);
  });

  it("a member's display name that is Markdown link syntax stays text in the group prompt", async () => {
    const { fake: f } = await setup();
    const chatId = spec.group(f);
    const name = '[click](https://evil.example)';
    await f.deliver({ chatType: 'group', chatId, userId: alice, userName: name, text: 'ASK:echo hi', mentionBot: true });
    await until(() => prompts(f).length > 0, HANG_MS, 'the prompt');
    const prompt = prompts(f)[0]!;
    const raw = JSON.stringify(prompt.raw);
    // No working link in any markup: Telegram HTML, Slack's <url|text>, Markdown outside a code span.
    expect(raw).not.toMatch(/<a href=\\?"https:\/\/evil/);
    expect(raw).not.toMatch(/<https:\/\/evil\.example/);
    expect(raw).not.toMatch(/(?<!`)\[click\]\(https:\/\/evil\.example\)/);
    // Lark's message events carry no display name (the prompt names the sender's id there).
    expect(prompt.text).toMatch(/Only .+ or an admin can answer/);
    const thread = prompt.threadId ? { threadId: prompt.threadId } : {};
    await f.deliver({ chatType: 'group', chatId, userId: bob, text: '/deny', mentionBot: true, ...thread });
    await nth(f, 'Only the person who started this turn', 1);
    await f.deliver({ chatType: 'group', chatId, userId: alice, userName: name, text: '/deny', mentionBot: true, ...thread });
    await nth(f, 'DENIED', 1);
  });
});
