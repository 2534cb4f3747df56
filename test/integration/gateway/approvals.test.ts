import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { PLATFORMS, replies, usePlatformGateway, type ChannelGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * Tool approvals from chat (skipPermissions: false) on each of the six channels, through the real
 * gateway, the platform's real SDK and its fake server: the engine (engine_b's stand-in, asking
 * the way Claude Code does through our MCP helper) wants to run a command; the request reaches the
 * chat as a message; the person answers with a typed /allow or /deny, which must reach the turn
 * while it is still running (not wait behind it in the chat's queue).
 */
describe.each(Object.values(PLATFORMS))('$key: tool approvals from chat', (spec) => {
  const setup = usePlatformGateway(spec, 'skipPermissions: false\n');
  const [alice, bob] = spec.users;
  const nth = (f: FakePlatform, text: string, n: number) =>
    until(() => replies(f).filter((o) => o.text.includes(text)).length >= n, HANG_MS, `${n}× "${text}" in the chat`);
  const file = (g: ChannelGateway) => path.join(g.dir, 'CHAT-SIDE-EFFECT.txt');

  it('the request reaches the chat; /deny: the agent goes on without the command; /allow: it runs', async () => {
    const { fake: f, gw: g } = await setup();
    await f.deliver({ chatType: 'direct', userId: alice, text: 'ASK:echo done > CHAT-SIDE-EFFECT.txt' });
    await nth(f, 'Approval needed', 1);
    const prompt = replies(f).find((o) => o.text.includes('Approval needed'))!;
    expect(prompt.text).toContain('Bash');
    expect(prompt.text).toContain('echo done > CHAT-SIDE-EFFECT.txt');
    expect(prompt.text).toMatch(/\/allow.*\/deny/);
    await f.deliver({ chatType: 'direct', userId: alice, text: '/deny' });
    await nth(f, 'DENIED: The person denied this Bash call.', 1);
    expect(replies(f).some((o) => o.text.startsWith('Denied Bash'))).toBe(true);
    expect(fs.existsSync(file(g))).toBe(false);

    await f.deliver({ chatType: 'direct', userId: alice, text: 'ASK:echo done > CHAT-SIDE-EFFECT.txt' });
    await nth(f, 'Approval needed', 2);
    await f.deliver({ chatType: 'direct', userId: alice, text: '/allow' });
    await nth(f, 'ALLOWED', 1);
    expect(fs.readFileSync(file(g), 'utf8')).toBe('done\n');
  });

  it('in a group only the person who started the turn answers: another member is told so, then the requester allows', async () => {
    const { fake: f, gw: g } = await setup();
    const chatId = spec.group(f);
    await f.deliver({ chatType: 'group', chatId, userId: alice, text: 'ASK:echo done > CHAT-SIDE-EFFECT.txt', mentionBot: true });
    await nth(f, 'Approval needed', 1);
    const prompt = replies(f).find((o) => o.text.includes('Approval needed'))!;
    expect(prompt.text).toMatch(/Only .+ or an admin can answer/);
    // Where the bot answers in a thread (Slack), the turn's session is that thread: answers go there.
    const thread = prompt.threadId ? { threadId: prompt.threadId } : {};
    await f.deliver({ chatType: 'group', chatId, userId: bob, text: '/allow', mentionBot: true, ...thread });
    await nth(f, 'Only the person who started this turn', 1);
    expect(fs.existsSync(file(g))).toBe(false);
    await f.deliver({ chatType: 'group', chatId, userId: alice, text: '/allow', mentionBot: true, ...thread });
    await nth(f, 'ALLOWED', 1);
    expect(fs.existsSync(file(g))).toBe(true);
  });
});
