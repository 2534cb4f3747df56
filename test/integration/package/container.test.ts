import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cliPath, repoRoot } from '../../helpers/cli.js';
import { createStandIn } from '../../helpers/stand-in.js';
import { testdir } from '../../helpers/testdir.js';
import { HANG_MS, poll } from '../../helpers/wait.js';
import { freePort } from '../../helpers/free-port.js';

/**
 * Issue 35, item 2: the container image, without a container runtime: the entrypoint and the
 * health check the image runs, run directly against a temp assistant directory (as the container
 * would: `service-entrypoint gateway`), and the Dockerfile and compose.yaml read for what they
 * must say. Where podman runs, container-image.test.ts also builds the image and runs it.
 */
const entrypoint = path.join(repoRoot, 'docker', 'entrypoint.sh');
const healthcheck = path.join(repoRoot, 'docker', 'healthcheck.mjs');
const TOKEN = 'container-token-0123456789';

/** `agent-service` on PATH is this checkout's CLI, as `npm install --global` makes it in the image. */
function imageEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const standIn = createStandIn();
  fs.symlinkSync(cliPath, path.join(standIn.binDir, 'agent-service'));
  return { ...process.env, ...standIn.env, SERVICE_FLEET_DIR: testdir(), NO_COLOR: '1', ...extra };
}

const health = (port: number) => spawnSync(process.execPath, [healthcheck], { env: { ...process.env, SERVICE_PORT: String(port) }, encoding: 'utf8' });

describe('the container entrypoint and health check, run directly', () => {
  it('`gateway` on an empty volume makes an assistant, serves it, and the health check passes while it runs only', async () => {
    const volume = testdir();
    const port = await freePort();
    // As in the image: SERVICE_DIR and SERVICE_PORT from the Dockerfile, the token and engine from `docker run -e`.
    const env = imageEnv({ SERVICE_DIR: volume, SERVICE_PORT: String(port), SERVICE_TOKEN: TOKEN, SERVICE_ENGINE: 'engine_b', SERVICE_HOST: '127.0.0.1' });
    const child = spawn('sh', [entrypoint, 'gateway'], { env, cwd: testdir(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await poll(() => out.includes(`serving on http://127.0.0.1:${port}`), HANG_MS, `the gateway on port ${port}:\n${out}`);
      expect(out).toContain('no service.yaml in');
      expect(fs.readFileSync(path.join(volume, 'service.yaml'), 'utf8')).toMatch(/^engine: engine_b$/m);
      expect(health(port).status).toBe(0);
      const chat = await fetch(`http://127.0.0.1:${port}/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: '{"message":"SAY:from the container"}',
      });
      expect(await chat.text()).toContain('"finalText":"from the container"');
    } finally {
      child.kill('SIGTERM'); // what `docker stop` sends (tini passes it on); the entrypoint exec'd the gateway
    }
    expect(await exited).toBe(0);
    const after = health(port);
    expect(after.status).toBe(1);
    expect(after.stderr).toContain('health check failed');

    // A volume that holds an assistant is served as it is.
    const second = spawnSync('sh', [entrypoint, 'status', '--json'], { env: { ...env, SERVICE_ENGINE: 'engine_c' }, encoding: 'utf8' });
    expect(second.status).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ engine: 'engine_b', dir: volume });
  });

  it('refuses a volume the user cannot write, and says how to fix it', () => {
    const r = spawnSync('sh', [entrypoint], { env: imageEnv({ SERVICE_DIR: path.join(testdir(), 'missing') }), encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('is not a directory this container');
    expect(r.stderr).toContain('chown -R');
  });
});

/** Dockerfile instructions, continuation lines joined, comments dropped. */
function instructions(text: string): Array<{ op: string; args: string }> {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [op = '', ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

describe('Dockerfile and compose.yaml (read, not built)', () => {
  const docker = instructions(fs.readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'));
  const stages = docker.reduce<Array<Array<{ op: string; args: string }>>>((acc, i) => {
    if (i.op === 'FROM') acc.push([]);
    acc.at(-1)?.push(i);
    return acc;
  }, []);
  const last = stages.at(-1) ?? [];
  const args = (op: string, stage = last) => stage.filter((i) => i.op === op).map((i) => i.args);

  it('multi-stage on the current Node LTS slim image, everything it copies in the repository', () => {
    const image = /^NODE_IMAGE=(\S+)$/.exec(docker.find((i) => i.op === 'ARG')?.args ?? '')?.[1] ?? '';
    const major = Number(/^node:(\d+)-(?:[a-z]+-)?slim$/.exec(image)?.[1]);
    expect(major % 2).toBe(0); // even majors become LTS
    expect(major).toBeGreaterThanOrEqual(26); // the active LTS since 2026-10-28
    expect(docker.filter((i) => i.op === 'FROM').map((i) => i.args)).toEqual(['${NODE_IMAGE} AS build', '${NODE_IMAGE} AS install', '${NODE_IMAGE}']);
    for (const copy of docker.filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'))) {
      const sources = copy.args.split(/\s+/).slice(0, -1);
      for (const s of sources) expect(fs.existsSync(path.join(repoRoot, s)), s).toBe(true);
    }
    expect(fs.readFileSync(path.join(repoRoot, '.dockerignore'), 'utf8')).toMatch(/^node_modules$/m);
  });

  it('runs as a non-root user, checks /health, keeps the assistant directory in a volume, adds engines by a build argument', () => {
    const user = args('USER');
    expect(user).toHaveLength(1);
    expect(['root', '0']).not.toContain(user[0]);
    expect(args('HEALTHCHECK')[0]).toContain('CMD ["node", "/usr/local/lib/service-healthcheck.mjs"]');
    expect(args('COPY')).toContain('docker/healthcheck.mjs /usr/local/lib/service-healthcheck.mjs');
    expect(fs.readFileSync(healthcheck, 'utf8')).toContain('/health`');
    expect(args('VOLUME')).toEqual(['["/assistant"]']);
    expect(args('ENV')[0]).toContain('SERVICE_DIR=/assistant');
    expect(args('ENTRYPOINT')).toEqual(['["tini", "--", "service-entrypoint"]']);
    expect(args('CMD')).toEqual(['["gateway"]']);
    const install = stages[1] ?? [];
    expect(args('ARG', install)).toEqual(['ENGINES=""']);
    expect(args('RUN', install).some((r) => /npm install --global .*\/tmp\/agent-service\.tgz \$\{ENGINES\}/.test(r))).toBe(true);
  });

  it('compose: the gateway with its store URL from the environment, PostgreSQL with its data in a volume', () => {
    const compose = parse(fs.readFileSync(path.join(repoRoot, 'compose.yaml'), 'utf8')) as {
      services: Record<string, Record<string, unknown>>;
      volumes: Record<string, unknown>;
    };
    const { gateway, postgres } = compose.services;
    expect(gateway?.build).toMatchObject({ context: '.', args: { ENGINES: expect.stringContaining('${ENGINES') } });
    const env = gateway?.environment as Record<string, string>;
    expect(env.SERVICE_STORE_URL).toMatch(/^postgres:\/\/service:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432\/service$/);
    expect(env.SERVICE_TOKEN).toMatch(/^\$\{SERVICE_TOKEN:\?/);
    expect(gateway?.volumes).toEqual(['assistant:/assistant']);
    expect(gateway?.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(postgres?.image).toMatch(/^postgres:\d+/);
    expect(postgres?.volumes).toEqual(['pgdata:/var/lib/postgresql/data']);
    expect(JSON.stringify(postgres?.healthcheck)).toContain('pg_isready');
    expect(Object.keys(compose.volumes).sort()).toEqual(['assistant', 'pgdata']);
  });
});
