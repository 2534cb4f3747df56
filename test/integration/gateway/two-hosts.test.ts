import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { OPEN_ACCESS, replies } from '../../helpers/channel-gateway.js';
import { type ClockedGatewayProcess, startClockedGatewayProcess, startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { usePgCluster } from '../../helpers/pg-cluster.js';
import { createStandIn, type StandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * One assistant on two hosts: two copies of its directory (each with its own engine session
 * store, as two machines have) sharing one PostgreSQL store. Real gateway processes, the real
 * Telegram SDK against the fake Bot API server, kill -9 for a host that dies.
 */
const TOKEN = 'tok-two-hosts-1234567890';
const FAILOVER_SECONDS = 6; // a lease of 4 s: room for a loaded machine, short enough for a test

const pgCluster = usePgCluster();
let fake: FakePlatform | undefined;
const processes: GatewayProcess[] = [];

afterEach(async () => {
  for (const p of processes.splice(0)) await p.stop('SIGKILL');
  await fake?.close();
  fake = undefined;
});

interface Host {
  name: string;
  dir: string;
  env: NodeJS.ProcessEnv;
  start(): Promise<GatewayProcess>;
  /** The gateway in a process whose scheduler runs on a clock the test moves, from `clockStart` (unix ms). */
  startClocked(clockStart: number): Promise<ClockedGatewayProcess>;
}

/** Two "hosts" of one assistant: same name and store URL, their own directory and engine state. */
async function twoHosts(yaml: string, standIn: StandIn): Promise<{ url: string; hosts: [Host, Host] }> {
  const url = await pgCluster.database();
  const make = (name: string): Host => {
    const dir = testdir({ 'service.yaml': `name: two-host-bot\nengine: engine_b\nstore:\n  url: ${url}\n  failoverSeconds: ${FAILOVER_SECONDS}\n${yaml}` });
    const env = { ...standIn.env, STANDIN_STATE_DIR: path.join(dir, '.engine-sessions'), SERVICE_FLEET_DIR: testdir() };
    return {
      name,
      dir,
      env,
      start: async () => {
        const p = await startGatewayProcess(dir, ['--token', TOKEN], env);
        processes.push(p);
        return p;
      },
      startClocked: async (clockStart) => {
        const p = await startClockedGatewayProcess(dir, TOKEN, clockStart, env);
        processes.push(p);
        return p;
      },
    };
  };
  return { url, hosts: [make('a'), make('b')] };
}

const isLeader = (p: GatewayProcess) => /leader of the assistant now/.test(p.output());
const isFollowing = (p: GatewayProcess) => /following: /.test(p.output());

async function chat(url: string, message: string, sessionKey: string): Promise<Array<Record<string, unknown>>> {
  const res = await fetch(`${url}/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message, sessionKey }),
  });
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

describe('one assistant on two hosts sharing a PostgreSQL store', () => {
  it('kill -9 of the leader mid-turn: the other takes over the channel; every message, pending or sent during the takeover, is answered exactly once', async () => {
    fake = await startFakeTelegram();
    const f = fake;
    const standIn = createStandIn();
    const channel = `inbox:\n  enabled: true\n${OPEN_ACCESS}channels:\n  channel_e:\n    botToken: "${String(f.channelConfig.botToken)}"\n    apiRoot: ${String(f.channelConfig.apiRoot)}\n`;
    const { hosts } = await twoHosts(channel, standIn);
    const a = await hosts[0].start();
    await until(() => isLeader(a), HANG_MS, 'the first gateway to lead', 50);
    const b = await hosts[1].start();
    await until(() => isFollowing(b), HANG_MS, 'the second gateway to follow', 50);
    expect(isLeader(b)).toBe(false);
    expect(a.output()).not.toContain('inbox.enabled is off');
    // The follower serves HTTP and says why its channel is not connected there.
    expect(await channelStatus(b, 'channel_e')).toMatchObject({ status: 'failed', reason: expect.stringMatching(/^standby: /) });
    const send = await fetch(`${b.url}/api/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'channel_e', chatId: '2001', text: 'from the follower' }),
    });
    expect(send.status).toBe(503);
    expect(await send.json()).toMatchObject({ reason: 'not_connected', error: expect.stringContaining('standby: ') });

    await f.waitForConnection(HANG_MS);
    await f.deliver({ chatType: 'direct', userId: '2001', text: 'before the crash' });
    await until(() => replies(f).some((o) => o.text.includes('ECHO: before the crash')), HANG_MS, 'the leader to answer', 50);

    const users = ['3001', '3002', '3003'];
    // Their turns wait for this file: the leader is surely killed in the middle of them.
    const gate = path.join(testdir(), 'gate-open');
    for (const [i, u] of users.entries()) await f.deliver({ chatType: 'direct', userId: u, text: `GATE:${gate} pending ${i}` });
    await until(() => standIn.runs().filter((r) => String(r.prompt).includes('pending')).length === users.length, HANG_MS, 'the held turns to start', 50);
    const killedAt = Date.now();
    expect(await a.stop('SIGKILL')).toBeNull();
    fs.writeFileSync(gate, ''); // the new leader's runs of them go through
    // Sent while nobody leads: the platform keeps it until a gateway polls again.
    await f.deliver({ chatType: 'direct', userId: '4001', text: 'during the takeover' });

    await until(() => isLeader(b), HANG_MS, 'the second gateway to take over', 50);
    const takeoverMs = Date.now() - killedAt;
    await until(async () => (await channelStatus(b, 'channel_e'))?.status === 'connected', HANG_MS, 'the new leader to connect', 50);
    console.log(`two hosts: takeover ${takeoverMs} ms after kill -9 (failoverSeconds ${FAILOVER_SECONDS})`);
    await until(
      () => [...users.map((_, i) => `pending ${i}`), 'during the takeover'].every((t) => replies(f).some((o) => o.text.includes(t))),
      HANG_MS,
      'every message to be answered by the new leader',
      100,
    );
    await f.deliver({ chatType: 'direct', userId: '2001', text: 'after the takeover' });
    await until(() => replies(f).some((o) => o.text.includes('ECHO: after the takeover')), HANG_MS, 'the new leader to answer new messages', 50);
    // Room for a duplicate to show up: a later message in each chat is answered after anything still queued there.
    const chats = ['2001', ...users, '4001'];
    for (const u of chats) await f.deliver({ chatType: 'direct', userId: u, text: `marker ${u}` });
    await until(() => chats.every((u) => replies(f).some((o) => o.text.includes(`ECHO: marker ${u}`))), HANG_MS, 'the later message of each chat answered', 50);
    for (const t of ['before the crash', ...users.map((_, i) => `pending ${i}`), 'during the takeover', 'after the takeover'])
      expect(
        replies(f).filter((o) => o.text.includes(t)),
        t,
      ).toHaveLength(1);
    // The engine session of 2001 lives on the dead host: the new leader started one of its own.
    const after = replies(f).find((o) => o.text.includes('ECHO: after the takeover'));
    expect(after?.text).toContain('TURN: 1');
    expect(after?.text).not.toMatch(/not found|error/i);
  });

  it('a session key runs on one host at a time, whichever gateway the request reaches', async () => {
    const standIn = createStandIn();
    // A channel nobody answers on (the inbox off): these gateways warn that a dying leader would lose messages.
    const { url, hosts } = await twoHosts(`channels:\n  channel_e:\n    botToken: "1:x"\n    apiRoot: http://127.0.0.1:9\n`, standIn);
    const [a, b] = [await hosts[0].start(), await hosts[1].start()];
    for (const gw of [a, b]) expect(gw.output()).toContain('inbox.enabled is off');
    const order: string[] = [];
    // The first turn waits for this file: it surely runs while the others are sent.
    const gate = path.join(testdir(), 'gate-open');
    const first = chat(a.url, `GATE:${gate} first`, 'shared-key').then((events) => {
      order.push('first done');
      return events;
    });
    first.catch(() => undefined); // (a failed assertion kills the gateways under it)
    await until(() => standIn.runs().some((r) => String(r.prompt).includes('first')), HANG_MS, 'the first turn to start', 20);
    const second = chat(b.url, 'second', 'shared-key').then((events) => {
      order.push('second done');
      return events;
    });
    second.catch(() => undefined);
    const other = await chat(b.url, 'another key', 'other-key'); // other keys are not held up
    expect(order).toEqual([]);
    expect(other.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: expect.stringContaining('ECHO: another key') });
    fs.writeFileSync(gate, '');
    const [one, two] = await Promise.all([first, second]);
    expect(order).toEqual(['first done', 'second done']);
    expect(one.at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    // The key's engine session was made on the other host: this one starts its own, quietly.
    expect(two.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: expect.stringContaining('TURN: 1') });
    expect(two.some((e) => e.type === 'warning' || e.type === 'error')).toBe(false);

    // A clean stop gives the lease up: the other gateway leads without waiting for it to run out.
    // (Each says which it is once its first claim of the lease is answered: wait for both to have said it.)
    await until(() => (isLeader(a) && isFollowing(b)) || (isLeader(b) && isFollowing(a)), HANG_MS, 'one gateway to lead, the other to follow', 50);
    const leader = isLeader(a) ? a : b;
    const follower = leader === a ? b : a;
    const stoppedPid = leader.child.pid;
    expect(await leader.stop('SIGTERM')).toBe(0);
    // Released, not left to expire: the moment the process is gone, the row's expiry has passed, or
    // the follower has already taken the lease (it may, as soon as it is released).
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const lease = await client.query("SELECT expires_at <= now() AS free, holder FROM assistant_two_host_bot.leases WHERE name = 'leader'");
    await client.end();
    const row = lease.rows[0] as { free: boolean; holder: string };
    expect(row.free || !row.holder.includes(`:${stoppedPid}:`)).toBe(true);
    await until(() => isLeader(follower), HANG_MS, 'the follower to lead after a clean stop', 50);
    expect(follower.output()).toMatch(/leader of the assistant now \(took over from another gateway\)/);
  });

  it('a once-a-minute task fires once per minute across two takeovers: none doubled (leader killed mid-run), none lost (killed just before a minute)', async () => {
    const standIn = createStandIn();
    // The run waits for this file: the leader is surely killed in the middle of it.
    const gate = path.join(testdir(), 'gate-open');
    const { url, hosts } = await twoHosts(`tasks:\n  - id: tick\n    schedule: "* * * * *"\n    name: tick\n    prompt: "GATE:${gate} tick"\n`, standIn);
    const ticks = () => standIn.runs().filter((r) => String(r.prompt).includes('tick')).length;
    // The gateways' scheduler clocks, moved by the test: they start half a minute before minute 1.
    const m1 = Math.ceil(Date.now() / 60_000) * 60_000 + 60_000;
    const m2 = m1 + 60_000;
    const minute = (at: number) => new Date(at).toISOString();
    const a = await hosts[0].startClocked(m1 - 30_000);
    await until(() => isLeader(a), HANG_MS, 'the first gateway to lead', 50);
    const b = await hosts[1].startClocked(m1 - 30_000);
    await until(() => isFollowing(b), HANG_MS, 'the second gateway to follow', 50);

    // 1. The leader dies while running minute 1's run: the new leader must not run that minute again.
    await Promise.all([a.advanceTo(m1 + 1_000), b.advanceTo(m1 + 1_000)]);
    await until(() => ticks() === 1, HANG_MS, "minute 1's run to start", 20);
    expect(await a.stop('SIGKILL')).toBeNull();
    fs.writeFileSync(gate, ''); // the killed gateway's engine may end; a second run of minute 1 would end too (and count)
    await until(() => isLeader(b), HANG_MS, 'the second gateway to take over', 50);
    // The takeover's gap holds minute 1: the new leader catches it up, and finds it taken.
    await until(() => b.output().includes(`task tick: its run of ${minute(m1)} was already taken by another gateway`), HANG_MS, 'minute 1 found taken', 50);
    expect(b.output()).toContain(`task tick: catching up its run of ${minute(m1)}`);

    // 2. The leader dies just before minute 2, which passes while nobody leads: the gateway taking over must run it.
    const a2 = await hosts[0].startClocked(m1 + 1_000);
    await until(() => isFollowing(a2), HANG_MS, 'the restarted gateway to follow', 50);
    await b.advanceTo(m2 - 1_000);
    await a2.advanceTo(m2 + 1_000); // a follower arms no task: its clock passing minute 2 runs nothing
    await b.stop('SIGKILL');
    await until(() => isLeader(a2), HANG_MS, 'the restarted gateway to take over', 50);
    await until(() => ticks() === 2, HANG_MS, "minute 2's run, caught up by the new leader", 50);
    expect(a2.output()).toContain(`task tick: catching up its run of ${minute(m2)}`);
    expect(await a2.stop('SIGTERM')).toBe(0);
    // Its whole log, now that it has exited: minute 2 was not run by it as a follower and found taken later.
    expect(a2.output()).not.toContain('was already taken');

    // Minutes 1 and 2 were each taken once, and each taken minute ran the engine once.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const taken = (await client.query("SELECT at FROM assistant_two_host_bot.task_slots WHERE task_id = 'tick' ORDER BY at")).rows.map((r) => Number(r.at));
    await client.end();
    expect(taken).toEqual([m1, m2]);
    expect(ticks()).toBe(2);
  });
});

async function channelStatus(gw: GatewayProcess, type: string): Promise<Record<string, unknown> | undefined> {
  const res = await fetch(`${gw.url}/api/status`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const body = (await res.json()) as { channels: Array<Record<string, unknown>> };
  return body.channels.find((c) => c.type === type);
}
