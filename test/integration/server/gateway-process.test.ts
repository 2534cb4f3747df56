import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { startGatewayProcess } from '../../helpers/gateway-process.js';
import { parseSseStrict } from '../../helpers/server.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';
import { HANG_MS, until } from '../../helpers/wait.js';

const statusWith = (url: string, token: string) => fetch(`${url}/api/status`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);

describe('service gateway (spawned for real)', () => {
  it('generates a token when none is configured, stores it 0600, prints it, and reuses it on the next start', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml() });
    const first = await startGatewayProcess(dir, [], { SERVICE_TOKEN: '' });
    const file = path.join(dir, '.service', 'gateway-token');
    const token = fs.readFileSync(file, 'utf8').trim();
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(first.printed).toContain(token);
    expect(first.output()).toContain(`dashboard: ${first.url}/#token=${token}`);
    expect(await statusWith(first.url, token)).toBe(200);
    expect(await first.stop()).toBe(0);
    const second = await startGatewayProcess(dir, [], { SERVICE_TOKEN: '' });
    expect(second.printed).toContain(token);
    expect(second.printed).toContain('generated earlier');
    expect(await statusWith(second.url, token)).toBe(200);
    await second.stop();
  });

  it('token precedence: --token, then SERVICE_TOKEN, then gateway.token', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'gateway:\n  token: from-config-123456\n') });
    const cases: Array<[string[], NodeJS.ProcessEnv, string]> = [
      [['--token', 'from-flag-123456'], { SERVICE_TOKEN: 'from-env-123456' }, 'from-flag-123456'],
      [[], { SERVICE_TOKEN: 'from-env-123456' }, 'from-env-123456'],
      [[], { SERVICE_TOKEN: '' }, 'from-config-123456'],
    ];
    for (const [args, env, expected] of cases) {
      const g = await startGatewayProcess(dir, args, env);
      for (const candidate of ['from-flag-123456', 'from-env-123456', 'from-config-123456']) {
        expect(await statusWith(g.url, candidate), `${expected} vs ${candidate}`).toBe(candidate === expected ? 200 : 401);
      }
      expect(g.printed).not.toContain(expected); // a token the operator set is not echoed
      await g.stop();
    }
  });

  it('--token-file keeps the token off the command line; --token still works but warns that ps shows it (issue 29)', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'gateway:\n  token: from-config-123456\n') });
    const tokenFile = path.join(testdir(), 'token');
    fs.writeFileSync(tokenFile, 'from-file-123456\n', { mode: 0o600 });
    const fromFile = await startGatewayProcess(dir, ['--token-file', tokenFile], { SERVICE_TOKEN: 'from-env-123456' });
    expect(await statusWith(fromFile.url, 'from-file-123456')).toBe(200);
    expect(await statusWith(fromFile.url, 'from-env-123456')).toBe(401);
    expect(fromFile.printed).toContain('(hidden: you set it)  [from --token or --token-file]');
    expect(fromFile.output()).not.toContain('warning');
    // What every user of the machine sees of the process: not the token.
    if (fs.existsSync(`/proc/${fromFile.child.pid}/cmdline`))
      expect(fs.readFileSync(`/proc/${fromFile.child.pid}/cmdline`, 'utf8')).not.toContain('from-file-123456');
    await fromFile.stop();

    const fromFlag = await startGatewayProcess(dir, ['--token', 'from-flag-123456'], {});
    expect(fromFlag.output()).toContain(
      'warning: --token puts the token on the command line, where every user of this machine can read it (ps); prefer SERVICE_TOKEN or --token-file <path>',
    );
    expect(await statusWith(fromFlag.url, 'from-flag-123456')).toBe(200);
    await fromFlag.stop();

    fs.chmodSync(tokenFile, 0o644);
    const readable = await startGatewayProcess(dir, ['--token-file', tokenFile], {});
    expect(readable.output()).toContain(`warning: --token-file ${tokenFile} can be read by other users (mode 644); chmod 600 it`);
    await readable.stop();

    const both = await runCli(['gateway', '-d', dir, '--port', '0', '--token', 'x-123456', '--token-file', tokenFile]);
    expect(both).toMatchObject({ code: 1, stderr: expect.stringContaining('--token and --token-file: give one of them') });
    fs.writeFileSync(tokenFile, '\n');
    const empty = await runCli(['gateway', '-d', dir, '--port', '0', '--token-file', tokenFile]);
    expect(empty).toMatchObject({ code: 1, stderr: expect.stringContaining(`--token-file ${tokenFile}: the file is empty`) });
    const missing = await runCli(['gateway', '-d', dir, '--port', '0', '--token-file', `${tokenFile}.nope`]);
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining(`--token-file ${tokenFile}.nope: cannot read it (ENOENT)`) });
  });

  it('survives hostile input: an oversized chunked body, garbage JSON, a dropped connection', async () => {
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'gateway:\n  token: tok-1234567890\n') });
    const g = await startGatewayProcess(dir, [], { SERVICE_TOKEN: '' });
    const { port } = new URL(g.url);
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: '/chat', headers: { authorization: 'Bearer tok-1234567890', 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      for (let i = 0; i < 48; i++) req.write(Buffer.alloc(1024 * 1024, 0x61));
      req.end();
    });
    expect(chunked).toBe(413);
    const broken = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/chat',
      headers: { authorization: 'Bearer tok-1234567890', 'content-length': '100' },
    });
    broken.on('error', () => undefined);
    broken.write('{"mess', () => broken.destroy()); // once the start of the body is on its way
    // The gateway took the dropped body for what it is (its log line of the 400), and went on serving.
    await until(() => g.output().includes('request body was not sent completely'), HANG_MS, 'the dropped connection to be noticed', 20);
    expect((await fetch(`${g.url}/health`)).status).toBe(200);
    expect(g.child.exitCode).toBeNull();
    expect(await g.stop()).toBe(0);
  });

  it('SIGTERM while a channel is still connecting: the pending start ends, the process exits 0', async () => {
    // A custom channel whose connect never finishes by itself: only stop() ends it.
    const adapter = `export function createAdapter() {
  let timer;
  return {
    start: () => new Promise((resolve) => { timer = setInterval(() => {}, 1000); }),
    reply: async () => undefined,
    stop: async () => clearInterval(timer),
  };
}
`;
    const dir = testdir({
      'service.yaml': minimalYaml('engine_b', 'channels:\n  slowpoke:\n    _adapter: ./never-connects.mjs\naccess:\n  dm: open\n  groups: open\n'),
      'never-connects.mjs': adapter,
    });
    const g = await startGatewayProcess(dir, ['--token', 'tok-1234567890'], {});
    expect(await statusWith(g.url, 'tok-1234567890')).toBe(200);
    expect(await g.stop('SIGTERM')).toBe(0);
  });

  it('SIGTERM lets a running turn finish, then exits 0', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'gateway:\n  token: tok-1234567890\n') });
    const g = await startGatewayProcess(dir, [], { ...standIn.env, SERVICE_TOKEN: '' });
    const turn = fetch(`${g.url}/chat`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok-1234567890', 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'SLEEP:1000 in flight' }),
    }).then((r) => r.text());
    await until(() => standIn.runs().length > 0, HANG_MS, 'the turn to start');
    const exit = g.stop('SIGTERM');
    const events = parseSseStrict(await turn) as Array<Record<string, unknown>>;
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: 'ECHO: SLEEP:1000 in flight\nTURN: 1' });
    expect(await exit).toBe(0);
    await expect(fetch(`${g.url}/health`)).rejects.toThrow();
  });

  it('SIGTERM: the listener stops accepting first, while the running turn goes on to finish on its open connection (issue 27: the order kept on listhen)', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'gateway:\n  token: tok-1234567890\n') });
    const g = await startGatewayProcess(dir, [], { ...standIn.env, SERVICE_TOKEN: '' });
    let ended = false;
    const turn = fetch(`${g.url}/chat`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok-1234567890', 'content-type': 'application/json' },
      // The turn waits at a gate this test opens once new connections are refused: no race with a timer.
      body: JSON.stringify({ message: 'GATE:shutdown-gate in flight' }),
    })
      .then((r) => r.text())
      .finally(() => {
        ended = true;
      });
    await until(() => standIn.runs().length > 0, HANG_MS, 'the turn to start');
    const exit = g.stop('SIGTERM');
    await until(
      () =>
        fetch(`${g.url}/health`).then(
          () => false,
          () => true,
        ),
      HANG_MS,
      'new connections to be refused',
    );
    expect(ended).toBe(false); // refused while the turn still streams
    fs.writeFileSync(path.join(dir, 'shutdown-gate'), '');
    const events = parseSseStrict(await turn) as Array<Record<string, unknown>>;
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed' });
    expect(await exit).toBe(0);
  });

  it('after the grace period a turn still running, and one queued behind it, end aborted saying the gateway is shutting down; exit 0', async () => {
    const standIn = createStandIn();
    const dir = testdir({ 'service.yaml': minimalYaml('engine_b', 'gateway:\n  token: tok-1234567890\n') });
    const g = await startGatewayProcess(dir, [], { ...standIn.env, SERVICE_TOKEN: '', SERVICE_SHUTDOWN_GRACE_MS: '300' });
    const chat = (message: string) =>
      fetch(`${g.url}/chat`, {
        method: 'POST',
        headers: { authorization: 'Bearer tok-1234567890', 'content-type': 'application/json' },
        body: JSON.stringify({ message }),
      });
    const turn = chat('HANG').then((r) => r.text());
    await until(() => standIn.runs().length > 0, HANG_MS, 'the turn to start');
    const queued = (await chat('behind it')).text(); // headers arrive at once, the turn waits for the key
    const exit = g.stop('SIGINT');
    for (const body of [await turn, await queued]) {
      const events = parseSseStrict(body) as Array<Record<string, unknown>>;
      // Not the plain "Aborted" of a user's /abort: a client can tell the two apart.
      expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'aborted', message: 'Aborted: the gateway is shutting down' });
    }
    expect(standIn.runs()).toHaveLength(1); // the queued turn never started an engine run
    expect(await exit).toBe(0);
  });
});
