import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import jsqrModule from 'jsqr';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot, runCli } from '../../helpers/cli.js';
import { type GatewayProcess, startGatewayProcess } from '../../helpers/gateway-process.js';
import { minimalYaml, testdir } from '../../helpers/testdir.js';
import { poll, until } from '../../helpers/wait.js';

/**
 * What listhen gives `service gateway` (issue 27): HTTPS with a certificate kept in .service/tls/
 * or given with --cert/--key, a QR code of the dashboard, --public, --tunnel (through untun and a
 * stand-in cloudflared), and a port that is the one asked for or an error.
 */
const TOKEN = 'tok-listen-0123456789abcdef';
// jsqr is CommonJS whose module.exports is the function; its types describe an ES default export.
const jsQR = ((jsqrModule as unknown as { default?: typeof jsqrModule }).default ?? jsqrModule) as unknown as typeof jsqrModule.default;
let gw: GatewayProcess | undefined;
afterEach(async () => {
  await gw?.stop();
  gw = undefined;
});

const assistant = () => testdir({ 'service.yaml': minimalYaml('engine_b', `gateway:\n  token: ${TOKEN}\n`) });

/** GET over TLS trusting only `ca` (the full chain check node does, no rejectUnauthorized: false). */
function getTrusting(url: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/** A certificate a first `--https` start made (kept by the first test below: its key is made in JavaScript, seconds of CPU). */
let madeByGateway: { cert: Buffer; key: Buffer } | undefined;
async function certificateMadeByGateway(): Promise<{ cert: Buffer; key: Buffer }> {
  if (!madeByGateway) {
    const maker = assistant();
    const g = await startGatewayProcess(maker, ['--https'], { SERVICE_TOKEN: '' });
    await g.stop();
    const tls = path.join(maker, '.service', 'tls');
    madeByGateway = { cert: fs.readFileSync(path.join(tls, 'cert.pem')), key: fs.readFileSync(path.join(tls, 'key.pem')) };
  }
  return madeByGateway;
}

describe('service gateway --https', () => {
  it('makes a self-signed certificate on first use, keeps it (0600) and serves /health over TLS to a client that trusts it; the next start reuses it', async () => {
    const dir = assistant();
    gw = await startGatewayProcess(dir, ['--https'], { SERVICE_TOKEN: '' });
    expect(gw.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const certFile = path.join(dir, '.service', 'tls', 'cert.pem');
    const keyFile = path.join(dir, '.service', 'tls', 'key.pem');
    expect(fs.statSync(certFile).mode & 0o777).toBe(0o600);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    const cert = fs.readFileSync(certFile);
    madeByGateway = { cert, key: fs.readFileSync(keyFile) };
    const fingerprint = new X509Certificate(cert).fingerprint256;
    expect(gw.output()).toContain(`made now and kept in ${certFile} (SHA-256 ${fingerprint})`);
    const health = await getTrusting(`${gw.url}/health`, cert);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'ok', name: 'test-bot' });
    // A client that does not trust it is refused by TLS itself.
    await expect(getTrusting(`${gw.url}/health`, Buffer.from(''))).rejects.toThrow();
    await gw.stop();

    gw = await startGatewayProcess(dir, ['--https'], { SERVICE_TOKEN: '' });
    expect(gw.output()).toContain(`self-signed certificate kept in ${certFile} (SHA-256 ${fingerprint})`);
    expect((await getTrusting(`${gw.url}/health`, cert)).status).toBe(200);
  });

  it('serves the certificate given with --cert and --key', async () => {
    // A certificate made elsewhere: one a first --https start made, moved out of its directory.
    const made = await certificateMadeByGateway();
    const own = testdir({ 'cert.pem': made.cert.toString(), 'key.pem': made.key.toString() });

    const dir = assistant();
    gw = await startGatewayProcess(dir, ['--cert', path.join(own, 'cert.pem'), '--key', path.join(own, 'key.pem')], { SERVICE_TOKEN: '' });
    expect(gw.output()).toContain(`tls: your certificate ${path.join(own, 'cert.pem')}`);
    expect(fs.existsSync(path.join(dir, '.service', 'tls'))).toBe(false);
    const health = await getTrusting(`${gw.url}/health`, fs.readFileSync(path.join(own, 'cert.pem')));
    expect(health.status).toBe(200);
  });

  it('a --cert or --key that is not one, or a key of another certificate, is one line naming the file and exit 1', async () => {
    const made = await certificateMadeByGateway();
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const own = testdir({ 'cert.pem': made.cert.toString(), 'key.pem': made.key.toString(), 'junk.pem': 'not a pem file\n', 'other-key.pem': other });
    const f = (name: string) => path.join(own, name);
    const run = (cert: string, key: string) =>
      runCli(['gateway', '-d', assistant(), '--port', '0', '--cert', f(cert), '--key', f(key)], { env: { SERVICE_TOKEN: '', SERVICE_FLEET_DIR: testdir() } });
    for (const [cert, key, line] of [
      ['junk.pem', 'key.pem', `error: ${f('junk.pem')} is not a certificate in PEM form (-----BEGIN CERTIFICATE-----); check --cert`],
      ['cert.pem', 'junk.pem', `error: ${f('junk.pem')} is not an unencrypted private key in PEM form (-----BEGIN PRIVATE KEY-----); check --key`],
      ['cert.pem', 'other-key.pem', `error: the key in ${f('other-key.pem')} does not belong to the certificate in ${f('cert.pem')}; check --cert and --key`],
    ]) {
      const r = await run(cert ?? '', key ?? '');
      expect(r.code).toBe(1);
      expect(
        r.stderr
          .trim()
          .split('\n')
          .filter((l) => !l.startsWith('warn: ')),
      ).toEqual([line]);
    }
  });

  it('--cert without --key is one clear line and exit 1', async () => {
    const r = await runCli(['gateway', '-d', assistant(), '--port', '0', '--cert', '/nonexistent.pem'], {
      env: { SERVICE_TOKEN: '', SERVICE_FLEET_DIR: testdir() },
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual(['error: --cert and --key go together: give both files (PEM), or neither for a self-signed certificate']);
  });
});

describe('service gateway --qr', () => {
  it('prints a QR code that decodes to the dashboard URL; the token is in it only with --qr-token', async () => {
    gw = await startGatewayProcess(assistant(), ['--qr'], { SERVICE_TOKEN: '' });
    const plain = await poll(() => decodePrintedQr(gw?.output() ?? ''));
    expect(plain).toBe(`${gw.url}/`);
    expect(gw.output()).toContain('a phone cannot reach: add --public');
    await gw.stop();

    gw = await startGatewayProcess(assistant(), ['--qr', '--qr-token'], { SERVICE_TOKEN: '' });
    const withToken = await poll(() => decodePrintedQr(gw?.output() ?? ''));
    expect(withToken).toBe(`${gw.url}/#token=${TOKEN}`);
  });

  it('with --log-format json: no drawing among the records, a warning with the link instead', async () => {
    gw = await startGatewayProcess(assistant(), ['--qr', '--log-format', 'json'], { SERVICE_TOKEN: '' });
    const g = gw;
    await until(() => g.output().includes('--qr draws no QR code'));
    await g.stop();
    gw = undefined;
    const records = g
      .output()
      .trim()
      .split('\n')
      .map((l) => {
        try {
          return JSON.parse(l) as { level: string; message: string };
        } catch {
          throw new Error(`not a JSON record: ${JSON.stringify(l)}`);
        }
      });
    expect(records).toContainEqual(
      expect.objectContaining({ level: 'warn', message: `--qr draws no QR code with --log-format json (one JSON object per line); the dashboard: ${g.url}/` }),
    );
  });
});

describe('service gateway --public', () => {
  it('listens on every interface, warns, and lists the network addresses', async () => {
    gw = await startGatewayProcess(assistant(), ['--public'], { SERVICE_TOKEN: '' });
    expect(gw.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    expect(gw.output()).toContain('warn: listening on every network interface (0.0.0.0)');
    const port = new URL(gw.url).port;
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(200);
  });

  it('--public with --host naming one interface is a usage error', async () => {
    const r = await runCli(['gateway', '-d', assistant(), '--port', '0', '--public', '--host', '127.0.0.1'], {
      env: { SERVICE_TOKEN: '', SERVICE_FLEET_DIR: testdir() },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--public listens on every interface and --host 127.0.0.1 on one: give one of them');
  });
});

describe('service gateway --tunnel (untun, with a stand-in cloudflared)', () => {
  /** A TMPDIR where untun finds the stand-in as its cloudflared. */
  const withCloudflared = (mode: 'offline' | 'online') => {
    const tmp = testdir();
    const bin = path.join(tmp, 'node-untun', 'cloudflared.stand-in');
    fs.mkdirSync(path.dirname(bin), { recursive: true });
    fs.writeFileSync(bin, `#!/bin/sh\nexec "${process.execPath}" "${path.join(repoRoot, 'test', 'fakes', 'stand-in-cloudflared.mjs')}" "$@"\n`, {
      mode: 0o755,
    });
    const log = path.join(tmp, 'cloudflared.log');
    return { log, env: { TMPDIR: tmp, CLOUDFLARED_VERSION: 'stand-in', STANDIN_CLOUDFLARED: mode, STANDIN_CLOUDFLARED_LOG: log, SERVICE_TOKEN: '' } };
  };

  it('offline: one clear line, and the gateway goes on serving locally', async () => {
    const cf = withCloudflared('offline');
    gw = await startGatewayProcess(assistant(), ['--tunnel'], cf.env);
    const g = gw;
    await until(() => g.output().includes('tunnel: cannot open'));
    const line =
      g
        .output()
        .split('\n')
        .find((l) => l.includes('tunnel: cannot open')) ?? '';
    expect(line).toContain('failed to request quick Tunnel');
    expect(line).toContain(`serving locally only, at ${g.url}`);
    expect((await fetch(`${g.url}/health`)).status).toBe(200);
    expect(g.child.exitCode).toBe(null);
    // untun's own words come through our log (no colour codes), not printed beside it.
    expect(g.output()).toContain(`tunnel: Starting cloudflared tunnel to ${g.url}\n`);
    expect(g.output()).not.toContain('\x1b');
  });

  it("offline with --log-format json: every line of the output, untun's included, is one JSON object", async () => {
    const cf = withCloudflared('offline');
    gw = await startGatewayProcess(assistant(), ['--tunnel', '--log-format', 'json'], cf.env);
    const g = gw;
    await until(() => g.output().includes('tunnel: cannot open'));
    await g.stop();
    gw = undefined;
    const lines = g.output().trim().split('\n');
    const records = lines.map((l) => {
      try {
        return JSON.parse(l) as { level: string; message: string };
      } catch {
        throw new Error(`not a JSON record: ${JSON.stringify(l)}`);
      }
    });
    expect(records).toContainEqual(expect.objectContaining({ level: 'info', message: `tunnel: Starting cloudflared tunnel to ${g.url}` }));
    expect(records.filter((r) => r.level === 'error')).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/^tunnel: cannot open a public URL \(.*failed to request quick Tunnel.*\); serving locally only/),
      }),
    ]);
  });

  it('online: prints the public URL with a warning, and stops cloudflared on shutdown', async () => {
    const cf = withCloudflared('online');
    gw = await startGatewayProcess(assistant(), ['--tunnel'], cf.env);
    const g = gw;
    // The URL goes to stdout, its warning to stderr after it: both are waited for.
    await until(() => g.output().includes('tunnel: https://') && g.output().includes('reachable from the internet'));
    expect(g.output()).toContain('tunnel: https://stand-in-quick-tunnel.trycloudflare.com');
    expect(g.output()).toContain('reachable from the internet by anyone with its URL');
    const started = JSON.parse(fs.readFileSync(cf.log, 'utf8').trim()) as { pid: number; argv: string[] };
    expect(started.argv).toEqual(['tunnel', '--url', g.url, '--no-tls-verify']);
    expect(await g.stop()).toBe(0);
    gw = undefined;
    expect(isAlive(started.pid)).toBe(false);
  });
});

describe('service gateway port', () => {
  it('a port browsers refuse is one clear line and exit 1, never a silent move to another port', async () => {
    const r = await runCli(['gateway', '-d', assistant(), '--port', '6000'], { env: { SERVICE_TOKEN: '', SERVICE_FLEET_DIR: testdir() } });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual(['error: port 6000 is one that web browsers refuse to connect to; choose another port with --port']);
  });
});

// --- helpers ---

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The QR code in the output, decoded: listhen draws it with half blocks (a `█` is two light
 * modules, `▀` light above dark, `▄` dark above light, a space two dark ones); it is drawn again as
 * pixels with a quiet zone and read with jsQR. undefined while there is none.
 */
function decodePrintedQr(output: string): string | undefined {
  const rows = output.split('\n').filter((l) => /^\s*[█▀▄ ]+$/.test(l) && /[█▀▄]/.test(l));
  if (rows.length < 10) return undefined;
  const indent = Math.min(...rows.map((l) => l.length - l.trimStart().length));
  const width = Math.max(...rows.map((l) => l.length)) - indent;
  const modules: boolean[][] = []; // true = dark
  for (const row of rows) {
    const cells = [...row.slice(indent).padEnd(width, ' ')];
    modules.push(cells.map((c) => c === ' ' || c === '▄'));
    modules.push(cells.map((c) => c === ' ' || c === '▀'));
  }
  const scale = 6;
  const quiet = 4;
  const size = (Math.max(width, modules.length) + 2 * quiet) * scale;
  const pixels = new Uint8ClampedArray(size * size * 4).fill(255);
  for (const [y, line] of modules.entries()) {
    for (const [x, dark] of line.entries()) {
      if (!dark) continue;
      for (let dy = 0; dy < scale; dy++)
        for (let dx = 0; dx < scale; dx++) {
          const at = (((y + quiet) * scale + dy) * size + (x + quiet) * scale + dx) * 4;
          pixels[at] = pixels[at + 1] = pixels[at + 2] = 0;
        }
    }
  }
  return jsQR(pixels, size, size)?.data;
}
