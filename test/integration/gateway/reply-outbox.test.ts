import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram, type TelegramExtras } from '../../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { OPEN_ACCESS } from '../../helpers/channel-gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { usePgCluster } from '../../helpers/pg-cluster.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, until } from '../../helpers/wait.js';

/**
 * Replies that are never lost, with real gateway processes, Telegram's real SDK and its wire
 * fake: the platform refuses every reply (429 with retry_after) while the gateway is killed with
 * kill -9; then it recovers, and the next gateway (a restart on SQLite, the other host taking over
 * on PostgreSQL) sends every reply, each exactly once, in order per chat.
 */
const TOKEN = 'tok-outbox-0123456789';
const RETRY_AFTER_S = 3;
const pgCluster = usePgCluster();
let fake: (FakePlatform & TelegramExtras) | undefined;
const processes: GatewayProcess[] = [];
afterEach(async () => {
  for (const p of processes.splice(0)) await p.stop('SIGKILL');
  await fake?.close();
  fake = undefined;
});

const start = async (dir: string, env: NodeJS.ProcessEnv) => {
  const g = await startGatewayProcess(dir, ['--token', TOKEN], env);
  processes.push(g);
  return g;
};
const status = async (g: GatewayProcess) =>
  (await (await fetch(`${g.url}/api/status`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
    replies: { waiting: number; oldest: string | null };
  };
const count = (text: string, re: RegExp) => text.match(new RegExp(re, 'g'))?.length ?? 0;
const answers = ['SAY:Alice, first answer.', 'SAY:Alice, second answer.', 'SAY:Bob, the answer.'];
const texts = answers.map((a) => a.slice(4));

/** Refuse every reply, deliver three messages (two chats), and wait until all three replies wait in the outbox. */
async function refuseAndAsk(f: FakePlatform & TelegramExtras, g: GatewayProcess): Promise<void> {
  f.failNext(
    'sendMessage',
    { error_code: 429, description: `Too Many Requests: retry after ${RETRY_AFTER_S}`, retry_after: RETRY_AFTER_S },
    Number.POSITIVE_INFINITY,
  );
  await f.waitForConnection(HANG_MS);
  await f.deliver({ chatType: 'direct', userId: '1001', text: answers[0] as string });
  await f.deliver({ chatType: 'direct', userId: '1001', text: answers[1] as string });
  await f.deliver({ chatType: 'direct', userId: '1002', text: answers[2] as string });
  await until(
    () => count(g.output(), /kept in the outbox/) === 2 && count(g.output(), /waits behind an earlier one/) === 1,
    HANG_MS,
    'three replies to wait in the outbox',
    20,
  );
  expect((await status(g)).replies.waiting).toBe(3);
}

/** The gateway is killed while its replies wait: every attempt the platform saw was answered and logged (none in flight). */
async function killWhileWaiting(f: FakePlatform & TelegramExtras, g: GatewayProcess): Promise<void> {
  const seen = f.rejections.filter((r) => r.method === 'sendmessage').length;
  expect(await g.stop('SIGKILL')).toBeNull();
  processes.splice(processes.indexOf(g), 1);
  const logged = count(g.output(), /kept in the outbox/) + count(g.output(), /was refused again/);
  expect(seen, 'an attempt was under way when the gateway was killed').toBe(logged);
  f.stopFailing('sendMessage');
}

/** Every reply arrives once, in order per chat; a later message is answered too. */
async function expectEachOnce(f: FakePlatform & TelegramExtras): Promise<void> {
  const sent = () => f.outbound.filter((o) => o.kind === 'reply' || o.kind === 'send');
  await until(() => texts.every((t) => sent().some((o) => o.text.includes(t))), HANG_MS, 'every kept reply to arrive', 50);
  await f.deliver({ chatType: 'direct', userId: '1001', text: 'SAY:marker' });
  await until(() => sent().some((o) => o.text === 'marker'), HANG_MS, 'the marker reply', 50);
  for (const t of texts)
    expect(
      sent().filter((o) => o.text.includes(t)),
      t,
    ).toHaveLength(1);
  const alice = sent()
    .filter((o) => o.chatId === '1001')
    .map((o) => o.text);
  expect(alice).toEqual(['Alice, first answer.', 'Alice, second answer.', 'marker']);
}

const channelYaml = (f: FakePlatform & TelegramExtras) =>
  `${OPEN_ACCESS}channels:\n  channel_e:\n    botToken: "${f.channelConfig.botToken}"\n    apiRoot: ${f.channelConfig.apiRoot}\n`;

describe('a platform that refuses replies for a while, and a gateway killed meanwhile', () => {
  it('SQLite: the restarted gateway sends every kept reply exactly once, none given up', async () => {
    fake = await startFakeTelegram();
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': `name: outbox-bot\nengine: engine_b\n${channelYaml(fake)}` });
    const env = { ...standIn.env, SERVICE_FLEET_DIR: testdir() };
    const first = await start(dir, env);
    await refuseAndAsk(fake, first);
    await killWhileWaiting(fake, first);

    const second = await start(dir, env);
    await expectEachOnce(fake);
    expect((await status(second)).replies).toEqual({ waiting: 0, oldest: null });
    expect(second.output()).toMatch(/a kept reply to channel_e:dm:1001 was delivered/);
    expect(second.output()).not.toContain('was given up');
  });

  it('PostgreSQL, two hosts: the other host takes over and sends every kept reply exactly once', async () => {
    fake = await startFakeTelegram();
    const standIn = createStandIn();
    const url = await pgCluster.database();
    const yaml = `name: outbox-two\nengine: engine_b\nstore:\n  url: ${url}\n  failoverSeconds: 6\n${channelYaml(fake)}`;
    const host = () => {
      const dir = testdir({ 'service.yaml': yaml });
      return { dir, env: { ...standIn.env, STANDIN_STATE_DIR: path.join(dir, '.engine-sessions'), SERVICE_FLEET_DIR: testdir(), SERVICE_LOG_LEVEL: 'info' } };
    };
    const [ha, hb] = [host(), host()];
    const a = await start(ha.dir, ha.env);
    await until(() => /leader of the assistant now/.test(a.output()), HANG_MS, 'the first gateway to lead', 50);
    const b = await start(hb.dir, hb.env);
    await until(() => /following: /.test(b.output()), HANG_MS, 'the second gateway to follow', 50);
    await refuseAndAsk(fake, a);
    // The follower reads the same outbox.
    expect((await status(b)).replies.waiting).toBe(3);
    await killWhileWaiting(fake, a);

    await until(() => /leader of the assistant now/.test(b.output()), HANG_MS, 'the second gateway to take over', 50);
    await expectEachOnce(fake);
    expect((await status(b)).replies.waiting).toBe(0);
  });
});
