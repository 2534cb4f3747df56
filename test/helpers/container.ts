import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './cli.js';
import { testdir } from './testdir.js';

/**
 * Podman for the container image test (docs/operations.md, "In a container"). The test builds and
 * runs the real Dockerfile where podman runs; it says why it is skipped where it does not.
 *
 * Two things of some machines are handled here, found by trying: a kernel with cgroup v1 and v2
 * mounted side by side ("hybrid"), which crun (Debian's default runtime) refuses, so runc is used;
 * and a root without CAP_SYS_RESOURCE (a sandbox), which cannot raise the open-files and process
 * limits podman asks for, so lower ones are given.
 */
export interface Podman {
  /** Flags before the subcommand (`--runtime runc`). */
  global: string[];
  /** Flags of `build` and `run` (the limits). */
  limits: string[];
  /** The base image the Dockerfile is built on (NODE_IMAGE). */
  base: string;
  /** What about the base a reader of the results should know. */
  baseNote: string;
}

export type PodmanOrWhy = { podman: Podman } | { skip: string };

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `podman <global> <args>`, with a deadline that only catches a hang. */
export function podmanRun(p: Pick<Podman, 'global'>, args: string[], timeoutMs = 120_000): Run {
  const r = spawnSync('podman', [...p.global, ...args], { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status, stdout: r.stdout ?? '', stderr: `${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** The Dockerfile's default base image (ARG NODE_IMAGE=...). */
export function dockerfileBase(): string {
  const m = /^ARG NODE_IMAGE=(\S+)$/m.exec(fs.readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'));
  if (!m?.[1]) throw new Error('Dockerfile: no ARG NODE_IMAGE=...');
  return m[1];
}

/**
 * Podman, how it runs here, and a base image: the Dockerfile's own (present, or pulled), else a
 * stand-in made from Debian's packages (mmdebstrap, bookworm as the real base) with this
 * machine's node and npm where the official node images have them (/usr/local) and their `node`
 * user (uid 1000). Built once; later runs reuse it.
 */
export function findPodman(): PodmanOrWhy {
  if (spawnSync('podman', ['--version']).error) return { skip: 'podman is not installed (Debian: apt-get install podman runc mmdebstrap)' };
  const official = dockerfileBase();
  const plain = { global: [] as string[], limits: [] as string[] };
  const pulled = podmanRun(plain, ['image', 'exists', official]).status === 0 || podmanRun(plain, ['pull', '-q', official], 300_000).status === 0;
  const standIn = `localhost/agent-service-test-node:${process.version.slice(1)}-bookworm`;
  const haveStandIn = !pulled && podmanRun(plain, ['image', 'exists', standIn]).status === 0;
  const rootfs = pulled || haveStandIn ? undefined : importDebianRootfs(plain);
  if (rootfs && 'skip' in rootfs) return rootfs;
  const probeImage = pulled ? official : haveStandIn ? standIn : (rootfs?.image ?? standIn);
  const how = waysToRun().find((w) => {
    const probe = podmanRun(w, ['run', '--rm', ...w.limits, probeImage, 'sh', '-c', 'echo ok']);
    return probe.status === 0 && probe.stdout.trim() === 'ok';
  });
  if (!how) {
    const last = waysToRun().at(-1) ?? plain;
    const why = podmanRun(last, ['run', '--rm', ...last.limits, probeImage, 'true'])
      .stderr.trim()
      .split('\n')
      .at(-1);
    return { skip: `podman cannot run a container here: ${why}` };
  }
  const note = `Debian bookworm with this machine's node ${process.version} (${official} cannot be pulled here)`;
  if (pulled) return { podman: { ...how, base: official, baseNote: `${official}, the Dockerfile's base` } };
  if (haveStandIn) return { podman: { ...how, base: standIn, baseNote: `${standIn}: ${note}` } };
  const built = buildStandIn(how, rootfs?.image ?? '', standIn);
  return 'skip' in built ? built : { podman: { ...how, base: standIn, baseNote: `${standIn}: ${note}` } };
}

// --- internal ---

/** As podman is configured; then with limits a root without CAP_SYS_RESOURCE may set; then also with runc. */
function waysToRun(): Array<{ global: string[]; limits: string[] }> {
  const lower = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];
  const runc = spawnSync('runc', ['--version']).error ? [] : ['--runtime', 'runc'];
  return [{ global: [], limits: [] }, { global: [], limits: lower }, ...(runc.length ? [{ global: runc, limits: lower }] : [])];
}

/** A minimal Debian bookworm from Debian's packages (mmdebstrap), imported as an image. */
function importDebianRootfs(p: { global: string[] }): { image: string } | { skip: string } {
  if (spawnSync('mmdebstrap', ['--version']).error)
    return { skip: `${dockerfileBase()} cannot be pulled, and mmdebstrap (to make a stand-in base from Debian's packages) is not installed` };
  const tar = path.join(testdir({}, 'service-container-base-'), 'rootfs.tar');
  const strap = spawnSync('mmdebstrap', ['--variant=minbase', '--include=ca-certificates,libstdc++6', 'bookworm', tar], { encoding: 'utf8', timeout: 600_000 });
  if (strap.status !== 0) return { skip: `mmdebstrap could not make a Debian rootfs: ${strap.stderr.trim().split('\n').at(-1)}` };
  const image = 'localhost/agent-service-test-rootfs:bookworm';
  const imported = podmanRun(p, ['import', '-q', tar, image], 300_000);
  return imported.status === 0 ? { image } : { skip: `podman import failed: ${imported.stderr.trim()}` };
}

/** node, npm and node's headers (node-gyp builds native addons offline with them) where the node images have them, and their `node` user. */
function buildStandIn(p: { global: string[]; limits: string[] }, rootfs: string, image: string): { image: string } | { skip: string } {
  const ctx = testdir({}, 'service-container-base-');
  const prefix = path.dirname(path.dirname(fs.realpathSync(process.execPath)));
  fs.copyFileSync(process.execPath, path.join(ctx, 'node'));
  fs.cpSync(path.join(prefix, 'lib', 'node_modules', 'npm'), path.join(ctx, 'npm'), { recursive: true });
  fs.cpSync(path.join(prefix, 'include', 'node'), path.join(ctx, 'include'), { recursive: true });
  // The certificate authorities this machine adds to Debian's (a network that inspects TLS has
  // one): npm in the build reaches the registry as npm on this machine does.
  const extraCas = '/usr/local/share/ca-certificates';
  fs.mkdirSync(path.join(ctx, 'ca'));
  if (fs.existsSync(extraCas)) fs.cpSync(extraCas, path.join(ctx, 'ca'), { recursive: true });
  fs.writeFileSync(
    path.join(ctx, 'Containerfile'),
    [
      `FROM ${rootfs}`,
      'COPY node /usr/local/bin/node',
      'COPY npm /usr/local/lib/node_modules/npm',
      'COPY include /usr/local/include/node',
      'COPY ca /usr/local/share/ca-certificates',
      'RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx' +
        ' && groupadd -g 1000 node && useradd -u 1000 -g node -m -s /bin/sh node && update-ca-certificates',
      'ENV npm_config_nodedir=/usr/local NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt',
      'CMD ["node"]',
      '',
    ].join('\n'),
  );
  const built = podmanRun(p, ['build', ...p.limits, '-q', '-t', image, ctx], 600_000);
  podmanRun(p, ['rmi', rootfs]);
  return built.status === 0 ? { image } : { skip: `the stand-in base image could not be built: ${built.stderr.trim().split('\n').at(-1)}` };
}
