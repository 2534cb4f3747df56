import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSlack } from '../../fakes/platforms/channel-d-slack.js';
import { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { OPEN_ACCESS, replies } from '../../helpers/channel-gateway.js';
import { runCli } from '../../helpers/cli.js';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { createStandIn, isAlive } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, poll, until } from '../../helpers/wait.js';

/**
 * What a restart does, with real gateway processes: one gateway per directory (an OS lock that a
 * SIGKILL drops), engines a killed gateway left running are stopped and their turns reported, and
 * a message is answered exactly once however recovery and live redelivery interleave.
 */
const processes: GatewayProcess[] = [];
const fakes: FakePlatform[] = [];
const strays: number[] = [];
afterEach(async () => {
  for (const p of processes.splice(0)) await p.stop('SIGKILL');
  for (const f of fakes.splice(0)) await f.close();
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

const TOKEN = 'tok-restart-0123456789';
const start = async (dir: string, env: NodeJS.ProcessEnv) => {
  const g = await startGatewayProcess(dir, ['--token', TOKEN], env);
  processes.push(g);
  return g;
};
const api = (g: GatewayProcess, path: string, body?: unknown) =>
  fetch(`${g.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe('one gateway per assistant directory', () => {
  it('a second gateway exits 1 at once naming the running one; chat and cron run work beside it; a SIGKILL frees the directory', async () => {
    const standIn = createStandIn();
    const dir = testdir({
      'service.yaml': 'name: solo\nengine: engine_b\ntasks:\n  - { id: t1, name: T1, schedule: "0 0 1 1 *", prompt: "task prompt" }\n',
    });
    const env = { ...standIn.env, SERVICE_FLEET_DIR: testdir() };
    const first = await start(dir, env);
    const pid = first.child.pid;

    const second = await runCli(['gateway', '-d', dir, '--port', '0'], { env: { ...process.env, ...env }, timeoutMs: HANG_MS });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('another gateway is already running');
    expect(second.stderr).toContain(`pid ${pid}`);
    expect(second.stderr).toContain(first.url);
    expect(second.stderr).not.toContain('This is a bug');

    const chat = await runCli(['chat', '-d', dir, '-m', 'beside the gateway'], { env: { ...process.env, ...env }, timeoutMs: HANG_MS });
    expect(chat.code).toBe(0);
    expect(chat.stdout).toContain('ECHO: beside the gateway');
    const cron = await runCli(['cron', 'run', 't1', '-d', dir], { env: { ...process.env, ...env }, timeoutMs: HANG_MS });
    expect(cron.code).toBe(0);
    expect(cron.stdout).toContain('ECHO: task prompt');

    expect(await first.stop('SIGKILL')).toBeNull();
    processes.splice(0);
    const third = await start(dir, env);
    expect((await api(third, '/api/status')).status).toBe(200);
  });
});

describe('a gateway whose terminal is closed (SIGHUP)', () => {
  it('shuts down as for SIGTERM: the running turn ends with its engine, the lock file and fleet entry are removed, exit 0', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': 'name: hangup\nengine: engine_b\n' });
    const fleet = testdir();
    const g = await start(dir, { ...standIn.env, SERVICE_FLEET_DIR: fleet, SERVICE_SHUTDOWN_GRACE_MS: '0' });
    const reply = api(g, '/chat', { message: 'HANG', sessionKey: 'hup' }).then((r) => r.text());
    const engine = await poll(() => standIn.runs().find((r) => r.prompt === 'HANG')?.pid as number | undefined, HANG_MS, 'the HANG turn', 50);
    strays.push(engine);
    expect(fs.readdirSync(fleet)).toHaveLength(1);

    expect(await g.stop('SIGHUP')).toBe(0);
    processes.splice(0);
    expect(g.output()).toContain('SIGHUP: shutting down');
    expect(isAlive(engine), 'the engine outlived its gateway').toBe(false);
    expect(await reply).toContain('"status":"aborted"');
    expect(fs.existsSync(path.join(dir, '.service', 'gateway.json'))).toBe(false);
    expect(fs.readdirSync(fleet)).toEqual([]);
  });
});

describe('a gateway killed mid-turn', () => {
  it('leaves engines behind that the next start stops, and the turn is reported as interrupted', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': 'name: orphans\nengine: engine_b\n' });
    const env = { ...standIn.env, SERVICE_FLEET_DIR: testdir() };
    const first = await start(dir, env);
    void api(first, '/chat', { message: 'SETSID-CHILD work that never ends', sessionKey: 'victim' }).catch(() => undefined);
    const runs = () => standIn.runs();
    await until(() => runs().some((r) => r.setsidChild !== undefined), HANG_MS, 'the engine to start its tool shell', 50);
    const engine = Number(runs().find((r) => String(r.prompt ?? '').includes('SETSID-CHILD'))?.pid);
    const shell = Number(runs().find((r) => r.setsidChild !== undefined)?.setsidChild);
    strays.push(engine, shell);
    // A process-tree snapshot finds the tool shell and the store records it with the turn.
    await until(() => recordedPids(dir).includes(shell), HANG_MS, 'the tool shell recorded with the running turn', 50);

    expect(await first.stop('SIGKILL')).toBeNull();
    processes.splice(0);
    expect(isAlive(engine)).toBe(true);
    expect(isAlive(shell)).toBe(true);

    const second = await start(dir, env);
    await until(() => !isAlive(engine) && !isAlive(shell), HANG_MS, 'the leftovers to be stopped', 50);
    // Nothing else would ever have stopped them: both still ran when the next start found them.
    expect(Number(/stopped (\d+) engine process\(es\) they left running/.exec(second.output())?.[1])).toBeGreaterThanOrEqual(2);
    const escalations = (await (await api(second, '/api/escalations')).json()) as { escalations: Array<Record<string, unknown>> };
    expect(escalations.escalations).toContainEqual(
      expect.objectContaining({ kind: 'failed', sessionKey: 'victim', error: 'interrupted: the gateway stopped during this turn' }),
    );
    expect(second.output()).toContain('interrupted');
    // Reported once: a further restart finds nothing left to report.
    await second.stop('SIGTERM');
    processes.splice(0);
    const third = await start(dir, env);
    const again = (await (await api(third, '/api/escalations')).json()) as { escalations: Array<Record<string, unknown>> };
    expect(again.escalations.filter((e) => e.sessionKey === 'victim')).toHaveLength(1);
  });
});

interface PlatformCase {
  key: 'channel_e' | 'channel_d';
  start(): Promise<FakePlatform>;
  users: string[];
}

const platforms: PlatformCase[] = [
  { key: 'channel_e', start: () => startFakeTelegram(), users: ['4001', '4002', '4003', '4004'] },
  { key: 'channel_d', start: () => startFakeSlack(), users: ['U0AAA', 'U0BBB', 'U0CCC', 'U0DDD'] },
];

/**
 * A custom channel that connects only once the file `connectGate` exists. Recovery of the inbox
 * waits until every channel has connected or failed once, so while this one waits the platform's
 * live deliveries (the message sent while the gateway was down, redeliveries) are already being
 * processed: the test opens the gate before or after a redelivery, and so orders the two.
 */
const SLOW_ADAPTER = `import fs from 'node:fs';
export function createAdapter(options) {
  let timer;
  return {
    start: () => new Promise((resolve) => {
      timer = setInterval(() => fs.existsSync(options.connectGate) && (clearInterval(timer), resolve()), 20);
    }),
    reply: async () => undefined,
    stop: async () => clearInterval(timer),
  };
}
`;

describe.each(platforms)('exactly once across a restart on $key', (p) => {
  // The platform redelivers the messages it had not seen answered as soon as the restarted gateway
  // takes messages again (before its recovery of the inbox), or once recovery has taken them.
  for (const redeliver of ['before recovery', 'after recovery took them'] as const) {
    it(`SIGKILL mid-turn with DMs pending, one more DM while down, redelivery ${redeliver}: each answered once`, async () => {
      const fake = await p.start();
      fakes.push(fake);
      const standIn = createStandIn();
      // JSON is YAML: the fake's channel block as one flow mapping.
      const connectGate = path.join(testdir(), 'slowpoke-may-connect');
      const channels = { [p.key]: fake.channelConfig, slowpoke: { _adapter: './slow-adapter.mjs', connectGate } };
      const dir = testdir({
        'service.yaml': `name: once\nengine: engine_b\n${OPEN_ACCESS}inbox:\n  enabled: true\nchannels: ${JSON.stringify(channels)}\n`,
        'slow-adapter.mjs': SLOW_ADAPTER,
      });
      const env = { ...standIn.env, SERVICE_FLEET_DIR: testdir() };
      const first = await start(dir, env);
      await fake.waitForConnection(HANG_MS);
      const ids: string[] = [];
      // Their turns wait for this file: the gateway is surely killed in the middle of them.
      const gate = path.join(testdir(), 'gate-open');
      for (const [i, u] of p.users.slice(0, 3).entries()) {
        ids.push((await fake.deliver({ chatType: 'direct', userId: u, text: `GATE:${gate} pending ${i}` })).messageId);
      }
      await until(() => standIn.runs().filter((r) => String(r.prompt).includes('pending')).length === 3, HANG_MS, 'the turns to start', 50);
      expect(await first.stop('SIGKILL')).toBeNull();
      processes.splice(0);
      fs.writeFileSync(gate, ''); // the restarted gateway's runs of them go through

      // Sent while no gateway runs: the platform holds it until one connects.
      const whileDown = fake.deliver({ chatType: 'direct', userId: p.users[3] as string, text: 'SLEEP:2500 sent while down' });
      const second = await start(dir, env);
      await whileDown;
      await until(() => standIn.runs().some((r) => String(r.prompt).includes('sent while down')), HANG_MS, 'the live turn to start', 50);
      const redeliverAll = async () => {
        for (const id of ids) await fake.redeliver(id).catch(() => undefined);
      };
      if (redeliver === 'before recovery') await redeliverAll(); // the slow channel is still connecting: no recovery yet
      fs.writeFileSync(connectGate, '');
      await until(() => second.output().includes('processing 3 message(s) left pending by the last run'), HANG_MS, 'recovery to take the pending messages', 50);
      if (redeliver === 'after recovery took them') await redeliverAll();

      const texts = ['pending 0', 'pending 1', 'pending 2', 'sent while down'];
      await until(() => texts.every((t) => replies(fake).some((o) => o.text.includes(t))), HANG_MS, 'every reply', 50);
      // Room for a duplicate to show up: a later message in each chat is answered after anything still queued there.
      for (const u of p.users) await fake.deliver({ chatType: 'direct', userId: u, text: `marker ${u}` });
      await until(
        () => p.users.every((u) => replies(fake).some((o) => o.text.includes(`ECHO: marker ${u}`))),
        HANG_MS,
        'the later message of each chat answered',
        50,
      );
      for (const t of texts) expect(replies(fake).filter((o) => o.text.includes(t))).toHaveLength(1);
      expect(standIn.runs().filter((r) => String(r.prompt).includes('sent while down'))).toHaveLength(1);
    });
  }
});

/** Pids the running turns of the directory's store record (read-only: the gateway writes it). */
function recordedPids(dir: string): number[] {
  const db = new Database(path.join(dir, '.service', 'state.db'), { readonly: true });
  try {
    const rows = db.prepare('SELECT processes FROM running_turns').all() as Array<{ processes: string }>;
    return rows.flatMap((r) => (JSON.parse(r.processes) as Array<{ pid: number }>).map((x) => x.pid));
  } finally {
    db.close();
  }
}
