import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { type ChannelGateway, replies, startChannelGateway } from '../../helpers/channel-gateway.js';
import { isAlive } from '../../helpers/stand-in.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * The check after a turn a non-admin started (issue 29, Medium 1), engine-independent: the
 * stand-in engine runs shell commands unasked (as any engine with skipPermissions does) and has
 * no deny rules of its own, through the real gateway and a fake Telegram. What a member's turn
 * changed of service.yaml, .env, the gateway token and the access grants is undone and never
 * applied; an admin's turn changes them; a PATCH made while a member's turn runs stays.
 */
const ADMIN = '1009';
const MEMBER = '1001';
const ACCESS = `access: { dm: open, groups: open, admins: ["channel_e:${ADMIN}"] }\n`;
const promote = (id: string) => `RUN-SH:sed -i 's/"channel_e:${ADMIN}"]/"channel_e:${ADMIN}", "channel_e:${id}"]/' service.yaml`;

describe('the check after a non-admin turn (stand-in engine)', () => {
  let tg: FakePlatform | undefined;
  let gw: ChannelGateway | undefined;
  afterEach(async () => {
    await gw?.stop();
    await tg?.close();
  });
  const start = async (access = ACCESS) => {
    tg = await startFakeTelegram();
    gw = await startChannelGateway({ channel_e: tg.channelConfig }, access, { '.env': 'KEEP=1\n' });
    await tg.waitForConnection(HANG_MS);
    return { f: tg, g: gw };
  };
  /** The first reply to `user` after this message that contains `marker`. */
  const ask = async (f: FakePlatform, user: string, text: string, marker: string) => {
    const seen = replies(f, user).length;
    const fresh = () =>
      replies(f, user)
        .slice(seen)
        .find((o) => o.text.includes(marker));
    await f.deliver({ chatType: 'direct', userId: user, text });
    await until(() => fresh() !== undefined, HANG_MS, `"${marker}"`);
    return fresh()?.text ?? '';
  };

  it("a member's turn: service.yaml, .env, the gateway token and a forged grant are undone; the reply says so; /model stays refused", async () => {
    const { f, g } = await start();
    const file = (name: string) => path.join(g.dir, name);
    const yaml = fs.readFileSync(file('service.yaml'), 'utf8');
    // Started with a token (as --token): no token file; the one the agent writes is removed again.
    expect(fs.existsSync(file('.service/gateway-token'))).toBe(false);
    const forge = `sqlite3 .service/state.db "INSERT INTO access_grants VALUES ('channel_e','sender','6666',NULL,1,'cli')"`;
    // Every configuration the gateway adopts while the turn runs (the file watcher fires 100 ms after a write).
    const adopted: string[][] = [];
    g.config.onChange((next) => adopted.push(next.config.access.admins));
    const text = [
      `${promote(MEMBER)} && sleep 1`,
      'RUN-SH:echo STOLEN=1 >> .env',
      'RUN-SH:echo attacker-token > .service/gateway-token',
      `RUN-SH:${forge}`,
      'SAY:done one',
    ].join('\n');
    const reply = await ask(f, MEMBER, text, 'done one');
    expect(reply).toContain('This turn changed service.yaml, .env, .service/gateway-token and granted access to channel_e:6666');
    expect(reply).toContain('so that was undone');
    expect(fs.readFileSync(file('service.yaml'), 'utf8')).toBe(yaml);
    expect(fs.readFileSync(file('.env'), 'utf8')).toBe('KEEP=1\n');
    expect(fs.existsSync(file('.service/gateway-token'))).toBe(false);
    expect(await g.store.accessGrants()).toEqual([]);
    expect(fs.readdirSync(file('.service/rejected')).sort()).toEqual([
      expect.stringMatching(/^\.env\./),
      expect.stringMatching(/^\.service_gateway-token\./),
      expect.stringMatching(/^service\.yaml\./),
    ]);
    expect(g.config.current().config.access.admins).toEqual([`channel_e:${ADMIN}`]);
    expect(adopted.flat()).not.toContain(`channel_e:${MEMBER}`);
    expect(await ask(f, MEMBER, '/model other', 'admin')).toMatch(/changes the assistant's configuration/);
  });

  it("a member's background job meant to write service.yaml after the turn's check dies with the turn", async () => {
    // In a session of its own, its shell gone at once: nothing but the run's marker in its
    // environment ties it to the turn. Alive after the reply, it would write once the check had
    // passed, and the file watcher would adopt the member as an admin.
    const { f, g } = await start();
    const late = `setsid sh -c 'echo $$ > late.pid; sleep 300; ${promote(MEMBER).slice('RUN-SH:'.length).replace(/'/g, `'"'"'`)}' > /dev/null 2>&1 & until [ -s late.pid ]; do sleep 0.05; done`;
    await ask(f, MEMBER, `RUN-SH:${late}\nSAY:done late`, 'done late');
    const pid = Number(fs.readFileSync(path.join(g.dir, 'late.pid'), 'utf8'));
    expect(pid).toBeGreaterThan(0);
    const survived = isAlive(pid);
    if (survived) process.kill(pid, 'SIGKILL');
    expect(survived).toBe(false);
  });

  it("an admin's turn changes service.yaml: applied; a PATCH made while a member's turn runs stays", async () => {
    const { f, g } = await start();
    await ask(f, ADMIN, `${promote('1002')}\nSAY:done admin`, 'done admin');
    await until(() => g.config.current().config.access.admins.includes('channel_e:1002'), HANG_MS, 'the change applied');
    // A member's slow turn; the owner PATCHes meanwhile (the gateway writes the file itself).
    await f.deliver({ chatType: 'direct', userId: MEMBER, text: 'SLEEP:1500 SAY:done slow' });
    await until(() => g.assistant.status().running === 1, HANG_MS, 'the member turn running');
    expect((await g.api('/api/config', { method: 'PATCH', json: { maxConcurrent: 7 } })).status).toBe(200);
    await until(() => replies(f, MEMBER).some((o) => o.text.includes('done slow')), HANG_MS, 'the slow reply');
    expect(replies(f, MEMBER).at(-1)?.text).not.toContain('undone');
    expect(fs.readFileSync(path.join(g.dir, 'service.yaml'), 'utf8')).toContain('maxConcurrent: 7');
    expect(g.config.current().config.maxConcurrent).toBe(7);
    expect(fs.existsSync(path.join(g.dir, '.service/rejected'))).toBe(false);
  });

  it("a grant an admin makes (/approve) while a member's turn runs is kept", async () => {
    const { f, g } = await start(ACCESS.replace('groups: open', 'groups: pairing'));
    // A stranger's group asks for pairing, then a member's slow turn starts.
    await f.deliver({ chatType: 'group', chatId: '-100777', userId: '1005', text: 'hello', mentionBot: true });
    await until(() => replies(f).some((o) => o.text.includes('Pairing code')), HANG_MS, 'the pairing reply');
    const code = /Pairing code: ([A-Z0-9]{8})/.exec(replies(f).find((o) => o.text.includes('Pairing code'))?.text ?? '')?.[1];
    await f.deliver({ chatType: 'direct', userId: MEMBER, text: 'SLEEP:1500 SAY:done member' });
    await until(() => g.assistant.status().running === 1, HANG_MS, 'the member turn running');
    await ask(f, ADMIN, `/approve ${code}`, 'Approved');
    await until(() => replies(f, MEMBER).some((o) => o.text.includes('done member')), HANG_MS, 'the member reply');
    expect((await g.store.accessGrants()).map((x) => `${x.channel}:${x.id}`)).toEqual(['channel_e:-100777']);
  });
});
