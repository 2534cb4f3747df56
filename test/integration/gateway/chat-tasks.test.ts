import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { PLATFORMS, type ChannelGateway, usePlatformGateway } from '../../helpers/channel-gateway.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * Tasks and reminders from a chat (/remind, /task, /tasks) through the real gateway, Telegram's
 * real SDK and its wire fake: what they write into service.yaml, the reply that comes back to the
 * chat, and who may manage which task.
 */
const spec = PLATFORMS.channel_e as NonNullable<(typeof PLATFORMS)['channel_e']>;
const [alice, bob] = spec.users;
const BASE = '# the assistant for the tests\nmaxTasksPerChat: 1\n';
const setup = usePlatformGateway(spec, BASE);

/** A proactive send (a task's answer), not a reply to a message. */
const sent = (f: FakePlatform, text: string) => f.waitForOutbound((o) => o.kind === 'send' && o.text.includes(text), HANG_MS);
const yamlOf = (g: ChannelGateway) => fs.readFileSync(path.join(g.dir, 'service.yaml'), 'utf8');
const ask = async (f: FakePlatform, user: string, text: string, answer: string) => {
  const before = f.outbound.length;
  await f.deliver({ chatType: 'direct', userId: user, text });
  const o = await f.waitForOutbound((x) => f.outbound.indexOf(x) >= before && x.kind !== 'typing' && x.text.includes(answer), HANG_MS);
  return o.text;
};

describe('tasks from a chat', () => {
  it('/remind 5s delivers one reply to that chat about five seconds later and leaves no task behind', async () => {
    const { fake: f, gw: g } = await setup();
    const asked = Date.now();
    const answer = await ask(f, alice, '/remind 5s SAY:Time to check the deploy.', 'Reminder remind-');
    const id = /Reminder (remind-[0-9a-z]{6}) set for/.exec(answer)?.[1] ?? '';
    const task = g.config.current().config.tasks.find((t) => t.id === id);
    expect(task).toMatchObject({ prompt: 'SAY:Time to check the deploy.', target: { channel: 'channel_e', chatId: alice } });
    const due = Date.parse(task?.at ?? '');
    expect(due - asked).toBeGreaterThanOrEqual(5_000);
    expect(yamlOf(g)).toContain('# the assistant for the tests');
    expect(yamlOf(g)).toContain(`  - id: ${id}\n`);

    const delivered = await sent(f, 'Time to check the deploy.');
    expect(delivered.chatId).toBe(alice);
    expect(delivered.at).toBeGreaterThanOrEqual(due);
    await until(() => !yamlOf(g).includes(id) && g.config.current().config.tasks.length === 0, HANG_MS, 'the reminder to remove itself');
    // A later message is answered; the reminder came once.
    await ask(f, alice, 'marker', 'ECHO: marker');
    expect(f.outbound.filter((o) => o.kind === 'send' && o.text.includes('Time to check the deploy.'))).toHaveLength(1);
    expect(yamlOf(g)).toContain('# the assistant for the tests');
    expect((await g.store.taskRuns(id, 5)).map((r) => [r.status, r.delivered])).toEqual([['completed', true]]);
  });

  it('/task add, /tasks, /task run and /task del, with service.yaml kept as written', async () => {
    const { fake: f, gw: g } = await setup();
    const added = await ask(f, alice, '/task add "0 9 * * 1-5" SAY:Good morning, here is the summary.', 'added');
    const id = /Task (task-[0-9a-z]{6}) added/.exec(added)?.[1] ?? '';
    expect(id).not.toBe('');
    expect(g.config.current().config.tasks).toEqual([
      {
        id,
        name: 'SAY:Good morning, here is the summary.',
        schedule: '0 9 * * 1-5',
        prompt: 'SAY:Good morning, here is the summary.',
        enabled: true,
        target: { channel: 'channel_e', chatId: alice },
      },
    ]);
    const listed = await ask(f, alice, '/tasks', 'Tasks of this chat');
    expect(listed).toContain(id);
    expect(listed).toContain('0 9 * * 1-5');
    expect(listed).toMatch(/next \d{4}-\d{2}-\d{2} 09:00:00/);

    const ran = await ask(f, alice, `/task run ${id}`, `Task ${id} completed`);
    expect(ran).toContain('Good morning, here is the summary.');
    expect(f.outbound.filter((o) => o.kind === 'send' && o.chatId === alice && o.text.includes('Good morning'))).toHaveLength(1);

    await ask(f, alice, `/task del ${id}`, `Task ${id} removed.`);
    expect(g.config.current().config.tasks).toEqual([]);
    expect(yamlOf(g)).toContain('# the assistant for the tests');
    expect(await ask(f, alice, '/tasks', 'No tasks for this chat')).toContain('/remind');
    expect(await ask(f, alice, '/task add 0 9 * * * no quotes', 'Usage: /task add')).toContain('"<cron expression>"');
    expect(await ask(f, alice, '/remind soon do it', 'Usage: /remind')).toContain('90s');
    expect(await ask(f, alice, '/task add "every day" hello', 'Not created')).toContain('schedule');
  });

  it('members manage only their own chat’s tasks, up to maxTasksPerChat; admins manage every task', async () => {
    const { fake: f, gw: g } = await setup(`access: { dm: open, groups: open, admins: ["channel_e:${alice}"] }\n`);
    const mine = /Task (task-\w+) added/.exec(await ask(f, bob, '/task add "0 8 * * *" SAY:bob task', 'added'))?.[1] ?? '';
    expect(await ask(f, bob, '/remind 1h SAY:one too many', 'at most 1')).toContain('/task del');
    expect(g.config.current().config.tasks.map((t) => t.id)).toEqual([mine]);
    const admins = /Reminder (remind-\w+)/.exec(await ask(f, alice, '/remind 2h SAY:admin one', 'Reminder'))?.[1] ?? '';
    await ask(f, alice, '/remind 3h SAY:admins have no limit', 'Reminder');

    expect(await ask(f, bob, `/task del ${admins}`, 'No task')).toContain(admins);
    expect(await ask(f, bob, `/task run ${admins}`, 'No task')).toContain('/tasks');
    expect(await ask(f, bob, '/tasks all', 'Only admins')).toBeTruthy();
    const bobs = await ask(f, bob, '/tasks', 'Tasks of this chat');
    expect(bobs).toContain(mine);
    expect(bobs).not.toContain(admins);

    const all = await ask(f, alice, '/tasks all', 'Tasks:');
    expect(all).toContain(mine);
    expect(all).toContain(admins);
    await ask(f, alice, `/task del ${mine}`, `Task ${mine} removed.`);
    expect(g.config.current().config.tasks.map((t) => t.id)).not.toContain(mine);
    // Room again for bob.
    await ask(f, bob, '/remind 1h SAY:now it fits', 'Reminder');
  });
});
