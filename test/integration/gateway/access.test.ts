import { describe, expect, it } from 'vitest';
import type { ActivityRecord } from '../../../src/core/store/types.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { PLATFORMS, replies, usePlatformGateway, type ChannelGateway } from '../../helpers/channel-gateway.js';
import { runCommand } from '../../helpers/cli.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * Who may drive the agent, on each of the six channels through its real SDK and fake platform
 * server: pairing (the default), allowlists, admins, the rate limit and the daily budget. Every
 * refusal must also be an activity record with its reason.
 */
describe.each(Object.values(PLATFORMS))('$key: access control', (spec) => {
  const open = usePlatformGateway(spec);
  /** `access` is the YAML flow mapping of the block ({} = every default: pairing). */
  const setup = (access: string, yaml = '') => open(`access: ${access}\n${yaml}`);
  const [alice, bob] = spec.users;
  const id = (user: string) => `${spec.key}:${user}`;
  const reply = (f: FakePlatform, text: string) => f.waitForOutbound((o) => o.kind !== 'typing' && o.text.includes(text), HANG_MS);
  const codeIn = (text: string) => /[Pp]airing code: ([A-Z2-9]{8})/.exec(text)?.[1];
  const refusals = async (g: ChannelGateway) => ((await (await g.api('/api/access/refusals')).json()) as { refusals: ActivityRecord[] }).refusals;
  /** GET /api/events, read as it arrives: the activity records broadcast live. */
  const subscribe = async (g: ChannelGateway) => {
    const ctl = new AbortController();
    const res = await g.api('/api/events', { signal: ctl.signal });
    const records: ActivityRecord[] = [];
    void (async () => {
      let buffer = '';
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        buffer += Buffer.from(chunk).toString('utf8');
        for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (block.startsWith('data: ')) records.push(JSON.parse(block.slice(6)) as ActivityRecord);
        }
      }
    })().catch(() => undefined);
    return { records, close: () => ctl.abort() };
  };

  it('an unknown DM gets one pairing reply and never reaches the engine; asking again within the hour gets nothing more (issue 29)', async () => {
    const { fake: f, gw: g } = await setup('{}');
    const feed = await subscribe(g);
    await f.deliver({ chatType: 'direct', userId: alice, text: 'hello?' });
    const first = await reply(f, 'pairing code');
    await g.processed(1);
    expect(replies(f)).toHaveLength(1);
    const code = codeIn(first.text);
    expect(code).toMatch(/^[A-HJKMNP-TV-Z2-9]{8}$/);
    expect(first.text).toContain(`service access approve ${code}`);
    expect(first.text).not.toMatch(/\/bin\/|service\.js/); // nothing about the owner's host

    await f.deliver({ chatType: 'direct', userId: alice, text: 'anyone there?' });
    await g.processed(2);
    expect(replies(f)).toHaveLength(1);
    expect(g.standIn.runs()).toEqual([]);

    const listing = (await (await g.api('/api/access')).json()) as { pending: Array<{ code: string; subject: string; kind: string }> };
    expect(listing.pending).toEqual([expect.objectContaining({ code, subject: id(alice), kind: 'sender' })]);
    // The pairing request is activity: live on GET /api/events, and in the dashboard's list (once per code).
    await until(() => feed.records.length === 1, HANG_MS, 'the record on the live feed');
    feed.close();
    expect(feed.records.map((r) => [r.status, r.refused, r.messagePreview, r.source])).toEqual([['refused', 'not_paired', 'hello?', spec.key]]);
    expect((await refusals(g)).map((r) => r.refused)).toEqual(['not_paired']);
  });

  it('`service access approve` in another process, beside the running gateway, lets the next message through', async () => {
    const { fake: f, gw: g } = await setup('{}');
    await f.deliver({ chatType: 'direct', userId: alice, text: 'let me in' });
    const code = codeIn((await reply(f, 'pairing code')).text) ?? '';
    const approved = await runCommand(['access', 'approve', code.toLowerCase(), '-d', g.dir]);
    expect(approved.stderr).toBe('');
    expect(approved).toMatchObject({ code: 0, stdout: expect.stringContaining(`Approved ${id(alice)}`) });

    await f.deliver({ chatType: 'direct', userId: alice, text: 'thanks' });
    await reply(f, 'ECHO: thanks');
    expect(g.standIn.runs()).toHaveLength(1);
    const list = await runCommand(['access', 'list', '-d', g.dir]);
    expect(list.stdout).toMatch(new RegExp(`${id(alice)}\\s+pairing`));
    expect(list.stdout).toMatch(/Pending pairing codes.*\n {2}\(none\)/);
    // A second approval of the same code finds nothing: it was used.
    const again = await runCommand(['access', 'approve', code, '-d', g.dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`No pending pairing has the code ${code}`);
  });

  it('an admin approves a code with /approve in a chat; the stranger cannot approve their own', async () => {
    const { fake: f, gw: g } = await setup(`{ admins: ["${id(alice)}"] }`);
    await f.deliver({ chatType: 'direct', userId: bob, text: 'hi' });
    const code = codeIn((await reply(f, 'pairing code')).text) ?? '';
    await f.deliver({ chatType: 'direct', userId: bob, text: `/approve ${code}` });
    await g.processed(2);
    expect(replies(f)).toHaveLength(1); // still a stranger, whose code was sent already: nothing more
    expect(await g.store.accessGrants()).toEqual([]);
    await f.deliver({ chatType: 'direct', userId: alice, text: `/approve ${code}` });
    await reply(f, `Approved ${id(bob)}`);
    expect(await g.store.accessGrants()).toEqual([expect.objectContaining({ id: bob, kind: 'sender', approvedBy: `chat:${id(alice)}` })]);
    await f.deliver({ chatType: 'direct', userId: bob, text: 'in at last' });
    await reply(f, 'ECHO: in at last');
    expect(g.standIn.runs()).toHaveLength(1);
  });

  it('a sender listed in access.allow passes at once; another sender still gets a code', async () => {
    const { fake: f, gw: g } = await setup(`{ allow: ["${id(alice)}"] }`);
    await f.deliver({ chatType: 'direct', userId: alice, text: 'I am on the list' });
    await reply(f, 'ECHO: I am on the list');
    await f.deliver({ chatType: 'direct', userId: bob, text: 'me too?' });
    await reply(f, 'pairing code');
    await g.processed(2);
    expect(g.standIn.runs()).toHaveLength(1);
  });

  it('allowlist: an unknown sender is dropped without a word, and the refusal is recorded', async () => {
    const { fake: f, gw: g } = await setup(`{ dm: allowlist, allow: ["${id(alice)}"] }`);
    await f.deliver({ chatType: 'direct', userId: bob, text: 'knock knock' });
    await until(async () => (await refusals(g)).length === 1, HANG_MS, 'the refusal record');
    await g.processed(1);
    expect(replies(f)).toEqual([]);
    expect(g.standIn.runs()).toEqual([]);
    expect(await refusals(g)).toEqual([
      expect.objectContaining({ status: 'refused', refused: 'not_allowed', messagePreview: 'knock knock', source: spec.key }),
    ]);
  });

  it('an unpaired group gets nothing unless the bot is mentioned, then one pairing reply; once approved it is answered', async () => {
    const { fake: f, gw: g } = await setup('{}', 'groupChat:\n  groupPolicy: always\n');
    const group = spec.group(f);
    if (spec.deliversUnmentioned) {
      await f.deliver({ chatType: 'group', chatId: group, userId: alice, text: 'just chatting' });
      await g.processed(1);
      expect(replies(f)).toEqual([]);
      expect(await refusals(g)).toEqual([]);
    }
    await f.deliver({ chatType: 'group', chatId: group, userId: alice, text: 'bot, help', mentionBot: true });
    const pairing = await reply(f, 'This group is not approved');
    await g.processed(spec.deliversUnmentioned ? 2 : 1);
    expect(replies(f)).toHaveLength(1);
    expect(g.standIn.runs()).toEqual([]);
    const code = codeIn(pairing.text) ?? '';
    const res = await g.api('/api/access/approve', { json: { code } });
    expect(await res.json()).toMatchObject({ ok: true, approved: { channel: spec.key, kind: 'chat', id: group } });
    // Approved as a whole: someone else in the group is answered, and group policy applies (always).
    await f.deliver({ chatType: 'group', chatId: group, userId: bob, text: 'now it works?', mentionBot: !spec.deliversUnmentioned });
    await reply(f, 'ECHO:');
    expect(g.standIn.runs()).toHaveLength(1);
  });

  it("a non-admin's /model x is refused from the chat, an admin's works; /reset resets only the sender's own session", async () => {
    const { fake: f, gw: g } = await setup(`{ dm: open, admins: ["${id(alice)}"] }`);
    await f.deliver({ chatType: 'direct', userId: bob, text: '/model x' });
    await reply(f, 'by an admin');
    expect(g.config.current().config.model).toBeUndefined();
    await f.deliver({ chatType: 'direct', userId: alice, text: '/model x' });
    await reply(f, 'Model switched to x.');
    expect(g.config.current().config.model).toBe('x');
    expect(await refusals(g)).toEqual([expect.objectContaining({ refused: 'admin_only', messagePreview: '/model x' })]);

    for (const user of [alice, bob]) {
      await f.deliver({ chatType: 'direct', userId: user, text: `hi from ${user}` });
      await reply(f, `ECHO: hi from ${user}`);
    }
    await g.processed(4);
    expect((await g.store.listSessions()).map((s) => s.key)).toHaveLength(2);
    await f.deliver({ chatType: 'direct', userId: bob, text: '/reset' });
    await reply(f, 'Session reset');
    expect((await g.store.listSessions()).map((s) => s.key)).toEqual([`${spec.key}:dm:${alice}`]);
  });

  it('25 messages in a burst from one sender reach the engine at most 20 times, with one slow-down reply', async () => {
    const { fake: f, gw: g } = await setup('{ dm: open }');
    for (let i = 0; i < 25; i++) await f.deliver({ chatType: 'direct', userId: alice, text: `burst ${i}` });
    await until(async () => (await refusals(g)).length === 5, HANG_MS, 'five refusals', 100);
    await g.processed(25);
    expect(g.standIn.runs()).toHaveLength(20);
    const slowDown = replies(f).filter((o) => o.text.includes('Slow down'));
    expect(slowDown).toHaveLength(1);
    expect(slowDown[0]?.text).toMatch(/more than 20 messages in 60 s\. Try again in \d+ s\./);
    expect(replies(f).filter((o) => o.text.includes('ECHO: burst'))).toHaveLength(20);
    expect((await refusals(g)).every((r) => r.refused === 'rate_limited')).toBe(true);
  });

  it("a budget already spent refuses the next turn with a clear message; /api/status shows the day's spending and the cap", async () => {
    const { fake: f, gw: g } = await setup('{ dm: open, dailyBudgetUsd: 0.01 }');
    await f.deliver({ chatType: 'direct', userId: alice, text: 'first' });
    await reply(f, 'ECHO: first'); // the stand-in's engine_b reports $0.0123 a turn
    await f.deliver({ chatType: 'direct', userId: alice, text: 'second' });
    await reply(f, 'The daily budget is spent ($0.0123 of $0.01 today)');
    await g.processed(2);
    expect(g.standIn.runs()).toHaveLength(1);
    const status = (await (await g.api('/api/status')).json()) as { budget: Record<string, unknown> };
    expect(status.budget).toMatchObject({ todayCostUsd: 0.0123, dailyBudgetUsd: 0.01, reached: true });
    expect(await refusals(g)).toEqual([expect.objectContaining({ refused: 'over_budget', messagePreview: 'second', source: spec.key })]);
  });
});
