import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/platforms/channel-e-telegram.js';
import type { FakePlatform } from '../../fakes/platforms/types.js';
import { runCommand } from '../../helpers/cli.js';
import { startGatewayProcess } from '../../helpers/gateway-process.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { STOP_SIGNALS, stopWhileEngineRuns } from '../../helpers/signal-stop.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, until } from '../../helpers/wait.js';

let fake: FakePlatform | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const YAML = (apiRoot: string) => `# scheduled work
name: cron-bot
engine: engine_b
channels:
  channel_e:
    botToken: \${TG_TOKEN}   # kept as written
    apiRoot: ${apiRoot}
tasks:
  - id: report
    name: Daily report
    schedule: "0 9 * * 1-5"
    prompt: daily report
    target: { channel: channel_e, chatId: "1001" }
  - id: quiet
    name: Quiet check
    schedule: "*/30 * * * *"
    prompt: "SAY:[PASS]"
    target: { channel: channel_e, chatId: "1001" }
  - id: broken
    name: Broken
    schedule: "0 0 1 * *"
    prompt: "FAIL: model down"
    target: { channel: channel_e, chatId: "1001" }
  - id: plain
    name: No target
    schedule: "0 12 * * *"
    prompt: hello
`;

async function setup() {
  fake = await startFakeTelegram();
  const standIn = createStandIn();
  const dir = testdir({ 'service.yaml': YAML(String(fake.channelConfig.apiRoot)) });
  const env = { ...standIn.env, TG_TOKEN: String(fake.channelConfig.botToken), SERVICE_FLEET_DIR: testdir() };
  return { dir, env, standIn, fake };
}

const sends = (f: FakePlatform) => f.outbound.filter((o) => o.kind === 'send');

describe('service cron (in-process, on the real engine stand-in and fake platform)', () => {
  it('run: prints the reply, delivers it to the target, records history; a fresh session every run', async () => {
    const { dir, env, fake: f } = await setup();
    for (const n of [1, 2]) {
      const r = await runCommand(['cron', 'run', 'report', '-d', dir], { env });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('ECHO: daily report\nTURN: 1\n'); // TURN 1 both times: no session carried over
      expect(r.code).toBe(0);
      expect(sends(f)).toHaveLength(n);
    }
    expect(sends(f)[0]).toMatchObject({ chatId: '1001', text: expect.stringContaining('ECHO: daily report') });
    const history = await runCommand(['cron', 'history', 'report', '--json', '-d', dir], { env });
    const runs = (JSON.parse(history.stdout) as { runs: Array<Record<string, unknown>> }).runs;
    expect(runs).toHaveLength(2);
    expect(runs[0]).toMatchObject({ taskId: 'report', status: 'completed', delivered: true, preview: expect.stringContaining('ECHO: daily report') });
    // Text: a header naming the README's columns, one aligned line per run, the cost Claude reported.
    const text = (await runCommand(['cron', 'history', 'report', '-d', dir], { env })).stdout.trimEnd().split('\n');
    expect(text).toHaveLength(3);
    expect(text[0]).toMatch(/^STARTED\s+STATUS\s+DURATION\s+COST\s+DELIVERED\s+REPLY \/ ERROR$/);
    for (const line of text.slice(1)) {
      expect(line).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+completed\s+\d[\d.]* (ms|s)\s+\$0\.0123\s+yes\s+ECHO: daily report TURN: 1$/);
      expect(line.indexOf('$0.0123') + '$0.0123'.length).toBe(text[0]!.indexOf('COST') + 'COST'.length);
    }
  });

  it('run: a [PASS] reply is silent (exit 0, nothing sent); a failed turn exits 1 and sends nothing', async () => {
    const { dir, env, fake: f } = await setup();
    const quiet = await runCommand(['cron', 'run', 'quiet', '-d', dir], { env });
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toContain('silent');
    const broken = await runCommand(['cron', 'run', 'broken', '-d', dir], { env });
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('model down');
    expect(sends(f)).toEqual([]);
    const runs = JSON.parse((await runCommand(['cron', 'history', 'broken', '--json', '-d', dir], { env })).stdout) as { runs: Array<Record<string, unknown>> };
    expect(runs.runs[0]).toMatchObject({ status: 'failed', error: 'model down' });
    const silent = JSON.parse((await runCommand(['cron', 'history', 'quiet', '--json', '-d', dir], { env })).stdout) as {
      runs: Array<Record<string, unknown>>;
    };
    expect(silent.runs[0]).toMatchObject({ status: 'silent' });
    const plain = await runCommand(['cron', 'run', 'plain', '-d', dir], { env });
    expect(plain).toMatchObject({ code: 0, stdout: 'ECHO: hello\nTURN: 1\n' });
    // --json: the run record with the reply, as `cron run --help` says.
    const json = await runCommand(['cron', 'run', 'plain', '--json', '-d', dir], { env });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ taskId: 'plain', status: 'completed', reply: 'ECHO: hello\nTURN: 1' });
  });

  it('--help says what --json prints for run and history, and the actions without output take none', async () => {
    const help = async (action: string) => (await runCommand(['cron', action, '--help'])).stdout.replace(/\s+/g, ' ');
    expect(await help('run')).toMatch(/--json\s+print the run as JSON: status, times, cost, delivered, error and the reply/);
    expect(await help('history')).toMatch(/--json\s+print the last 100 runs as JSON/);
    for (const action of ['enable', 'disable', 'del']) expect(await help(action)).not.toContain('--json');
    expect(await help('run')).not.toContain('(history)');
  });

  it('list shows tasks with next runs; enable/disable/del round trip keeps comments and placeholders', async () => {
    const { dir, env } = await setup();
    const list = JSON.parse((await runCommand(['cron', 'list', '--json', '-d', dir], { env })).stdout) as {
      tasks: Array<{ id: string; enabled: boolean; nextRun: string | null }>;
    };
    expect(list.tasks.map((t) => t.id)).toEqual(['report', 'quiet', 'broken', 'plain']);
    expect(list.tasks.every((t) => t.enabled && t.nextRun)).toBe(true);
    // Text: a header and the columns line up whatever the lengths of ids and schedules.
    const lines = (await runCommand(['cron', 'list', '-d', dir], { env })).stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    for (const h of ['ENABLED', 'SCHEDULE', 'NEXT RUN', 'LAST RUN', 'NAME']) {
      const at = lines[0]!.indexOf(h);
      expect(
        lines.map((l) => l.slice(at - 2, at + 1)).every((c) => /^ {2}\S$/.test(c)),
        `${h} column:\n${lines.join('\n')}`,
      ).toBe(true);
    }
    expect(lines[2]).toMatch(/^quiet\s+yes\s+\*\/30 \* \* \* \*\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+-\s+Quiet check$/);
    expect((await runCommand(['cron', 'disable', 'quiet', '-d', dir], { env })).code).toBe(0);
    let text = fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8');
    expect(text).toContain('    prompt: "SAY:[PASS]"\n    target: { channel: channel_e, chatId: "1001" }\n    enabled: false\n');
    expect((await runCommand(['cron', 'enable', 'quiet', '-d', dir], { env })).code).toBe(0);
    expect((await runCommand(['cron', 'del', 'broken', '-d', dir], { env })).code).toBe(0);
    text = fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8');
    expect(text).not.toContain('id: broken');
    expect(text).toContain('enabled: true');
    expect(text).toContain('# scheduled work\n');
    expect(text).toContain('botToken: ${TG_TOKEN}   # kept as written');
    const missing = await runCommand(['cron', 'run', 'nope', '-d', dir], { env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no task "nope"');
  });

  it('with a gateway running: run delivers through it, and a disable is picked up by the gateway', async () => {
    const { dir, env, fake: f } = await setup();
    const g = await startGatewayProcess(dir, ['--token', 'tok-cron-1234567890'], env);
    try {
      await f.waitForConnection(10_000);
      const r = await runCommand(['cron', 'run', 'report', '-d', dir], { env: { ...env, SERVICE_TOKEN: 'tok-cron-1234567890' } });
      expect(r.code).toBe(0);
      expect(sends(f)).toHaveLength(1);
      // Only the gateway connected to the platform: the cron process sent through its /api/send.
      const calls = (f as unknown as { calls: Array<{ method: string }> }).calls;
      expect(calls.filter((c) => c.method.toLowerCase() === 'getme')).toHaveLength(1); // the fake records methods lower-cased
      await runCommand(['cron', 'disable', 'report', '-d', dir], { env });
      const ask = async () =>
        (await (
          await fetch(`${g.url}/chat`, {
            method: 'POST',
            headers: { authorization: 'Bearer tok-cron-1234567890', 'content-type': 'application/json' },
            body: JSON.stringify({ message: '/cron list' }),
          })
        ).json()) as { text: string };
      await until(async () => /\breport\s+no\s/.test((await ask()).text), HANG_MS, 'the gateway to pick up the disable', 100);
    } finally {
      await g.stop();
    }
  });
});

describe('service cron run ended by a signal (spawned for real)', () => {
  it.each(STOP_SIGNALS)("%s (%s): the run's engine is stopped, the run recorded, and it exits %i", async (signal, _what, code) => {
    const standIn = createStandIn();
    const dir = testdir({
      'service.yaml': 'name: cron-stop\nengine: engine_b\ntasks:\n  - { id: long, name: Long, schedule: "0 0 1 1 *", prompt: "HANG" }\n',
    });
    const r = await stopWhileEngineRuns({ args: ['cron', 'run', 'long', '-d', dir], standIn, signal });
    expect(r.code, r.output).toBe(code);
    expect(r.engineOutlived, 'the engine outlived cron run').toBe(false);
    expect(r.output).not.toMatch(/ {4}at |This is a bug/);
    const history = await runCommand(['cron', 'history', 'long', '-d', dir, '--json']);
    expect((JSON.parse(history.stdout) as { runs: Array<{ status: string }> }).runs).toEqual([
      expect.objectContaining({ status: 'aborted', error: `Aborted: stopped by ${signal}` }),
    ]);
  });
});
