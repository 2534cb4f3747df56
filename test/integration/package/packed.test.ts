import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTestAssistant } from '../../helpers/assistant.js';
import { repoRoot } from '../../helpers/cli.js';
import { parseSseStrict } from '../../helpers/server.js';
import { testdir } from '../../helpers/testdir.js';

/**
 * The package as a user gets it: `npm pack` of this checkout (the built dist/, as `npm test`
 * builds it), installed with `npm install <tarball>` into a project of its own in a temp
 * directory, and imported from there by name, never from src/. The install is offline: the
 * package's dependencies are linked in from this checkout's node_modules first, so npm finds
 * them satisfied and only unpacks the tarball (a few seconds).
 */
let work: string;
let project: string;
/** The tarball `npm pack` made (agent-service-<version>.tgz). */
let tarball: string;

type Run = { code: number | null; stdout: string; stderr: string };

/** Run a program; resolves with its exit code and output (a deadline catches hangs). */
function run(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} timed out\n${stdout}\n${stderr}`));
    }, opts.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The environment without npm's own `npm_*` variables (set when the suite runs under `npm test`). */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_'))), ...extra };
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(repoRoot, 'dist', 'index.js'))) throw new Error('dist/ is missing: run `npm run build` (npm test does)');
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'service-pack-'));
  const packed = await run('npm', ['pack', repoRoot, '--ignore-scripts', '--pack-destination', work, '--json'], { cwd: work });
  expect(packed.code, packed.stderr).toBe(0);
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  if (!info) throw new Error(`npm pack said: ${packed.stdout}`);
  tarball = info.filename;
  const files = info.files.map((f) => f.path);
  expect(files).toEqual(
    expect.arrayContaining([
      'dist/index.js',
      'dist/index.d.ts',
      'dist/embedding.d.ts',
      'dist/bundle/cli.js',
      'bin/service.js',
      'templates/dashboard/index.html',
    ]),
  );
  expect(files.some((f) => f.startsWith('src/') || f.startsWith('test/'))).toBe(false);

  project = path.join(work, 'project');
  fs.mkdirSync(path.join(project, 'node_modules'), { recursive: true });
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'embedder', private: true, type: 'module' }));
  const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const linkDependency = (dep: string) => {
    const link = path.join(project, 'node_modules', dep);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(fs.realpathSync(path.join(repoRoot, 'node_modules', dep)), link);
  };
  for (const dep of Object.keys(manifest.dependencies)) linkDependency(dep);
  const installed = await run(
    'npm',
    ['install', path.join(work, info.filename), '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--no-bin-links', '--no-package-lock'],
    { cwd: project },
  );
  expect(installed.code, `${installed.stdout}\n${installed.stderr}`).toBe(0);
  expect(fs.lstatSync(path.join(project, 'node_modules', 'agent-service')).isDirectory()).toBe(true); // unpacked, not a link to this checkout
  linkDependency('@types/node'); // for the TypeScript consumer (npm would have pruned it as extraneous)
}, 180_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** Run an .mjs file written into the project, with the stand-in engine on PATH; its last stdout line is JSON. */
async function runInProject(name: string, source: string, env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  fs.writeFileSync(path.join(project, name), source);
  const r = await run(process.execPath, [name], { cwd: project, env: cleanEnv(env), timeoutMs: 60_000 });
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
}

describe('the packed package, installed into a project of its own', () => {
  it('the command line runs from its bundle: what it still imports is node or a dependency of the package, and installed it answers a turn', async () => {
    const installed = path.join(project, 'node_modules', 'agent-service');
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    // Inlined by scripts/bundle.mjs: importing them at run time would mean they were not.
    const inlined = ['commander', 'yaml', 'zod', 'h3', 'srvx', 'rou3', 'execa'];
    const builtins = new Set(builtinModules);
    const imported = new Set<string>();
    for (const file of fs.readdirSync(path.join(installed, 'dist', 'bundle')).filter((f) => f.endsWith('.js'))) {
      const code = fs.readFileSync(path.join(installed, 'dist', 'bundle', file), 'utf8');
      // `from "x"`, `import "x"`, `import("x")`, `require("x")`; not `Buffer.from("…")` and the like.
      for (const m of code.matchAll(/(?<![.\w$])(?:from\s*|import\s*|import\s*\(\s*|require\s*\(\s*)["'`]([@a-z./][^"'`\s]*)["'`]/g)) {
        const spec = m[1] ?? '';
        if (spec.startsWith('.') || spec.startsWith('node:') || builtins.has(spec)) continue;
        imported.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] ?? spec));
      }
    }
    expect([...imported].filter((name) => !(name in manifest.dependencies))).toEqual([]);
    expect([...imported].filter((name) => inlined.includes(name))).toEqual([]);
    expect(imported.has('better-sqlite3')).toBe(true); // native: always loaded from node_modules

    // With permissions asked in chat, the engine is told where our approval helper is: a file of the package itself.
    const { dir, standIn } = writeTestAssistant({ yaml: 'skipPermissions: false\n' });
    const turn = await run(process.execPath, [path.join(installed, 'bin', 'service.js'), 'chat', '-d', dir, '-m', 'from the package'], {
      cwd: project,
      env: cleanEnv(standIn.env),
      timeoutMs: 60_000,
    });
    expect(turn, turn.stderr).toMatchObject({ code: 0, stdout: 'ECHO: from the package\nTURN: 1\n' });
    const mcp = JSON.parse(fs.readFileSync(path.join(dir, '.service', 'engines', 'engine_b-mcp.json'), 'utf8')) as {
      mcpServers: Record<string, { args: string[] }>;
    };
    const helper = mcp.mcpServers.service_approvals?.args[0] ?? '';
    expect(helper).toBe(path.join(installed, 'bin', 'approval-mcp.mjs'));
    expect(fs.existsSync(helper)).toBe(true);
  });

  it('startServer on port 0: chat through the stand-in engine over HTTP, the token required, close; imported from the project, not src/', async () => {
    const { dir, standIn } = writeTestAssistant();
    const out = await runInProject(
      'serve.mjs',
      `import { createAssistant, startServer } from 'agent-service';
const bot = createAssistant({ dir: process.env.ASSISTANT_DIR });
const server = await startServer(bot, { port: 0, token: 'pack-token-0123456789' });
const chat = await fetch(server.url + '/chat', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + server.token, 'content-type': 'application/json' },
  body: JSON.stringify({ message: 'hello from the package', sessionKey: 'pack' }),
});
const body = await chat.text();
const health = await (await fetch(server.url + '/health')).json();
const unauthorised = (await fetch(server.url + '/api/status')).status;
const marked = await fetch(server.url + '/dashboard/vendor/marked.js');
const markdownLibrary = { status: marked.status, type: marked.headers.get('content-type'), exportsLexer: (await marked.text()).includes('Lexer') };
const tasks = await (await fetch(server.url + '/api/tasks', { headers: { authorization: 'Bearer ' + server.token } })).json();
// A PATCH does its YAML work on the package's worker thread (dist/core/config/config-edit-worker.js), which must not keep the process alive.
const patch = await fetch(server.url + '/api/config', {
  method: 'PATCH',
  headers: { authorization: 'Bearer ' + server.token, 'content-type': 'application/json' },
  body: JSON.stringify({ timeout: 42 }),
});
const patched = { status: patch.status, timeout: (await patch.json()).config?.timeout };
await server.close();
const afterClose = await fetch(server.url + '/health').then(() => 'answered', () => 'refused');
await bot.close();
console.log(JSON.stringify({ url: server.url, port: server.port, hostname: server.hostname, token: server.token, type: chat.headers.get('content-type'), body, health, unauthorised, markdownLibrary, tasks, patched, afterClose, resolved: import.meta.resolve('agent-service') }));
`,
      { ...standIn.env, ASSISTANT_DIR: dir },
    );
    expect(out.resolved).toBe(`file://${path.join(project, 'node_modules', 'agent-service', 'dist', 'index.js')}`);
    expect(out).toMatchObject({ hostname: '127.0.0.1', token: 'pack-token-0123456789', type: 'text/event-stream', unauthorised: 401, afterClose: 'refused' });
    expect(out.port).toBeGreaterThan(0);
    expect(out.url).toBe(`http://127.0.0.1:${out.port}`);
    expect(out.health).toMatchObject({ status: 'ok', name: 'tester' });
    expect(out.tasks).toEqual({ scheduled: false, tasks: [] });
    expect(out.patched).toEqual({ status: 200, timeout: 42 });
    expect(fs.readFileSync(path.join(dir, 'service.yaml'), 'utf8')).toMatch(/^timeout: 42$/m);
    // The dashboard's chat loads marked from the installed package's own dependency, not from another host.
    expect(out.markdownLibrary).toEqual({ status: 200, type: 'text/javascript; charset=utf-8', exportsLexer: true });
    const events = parseSseStrict(String(out.body)) as Array<Record<string, unknown>>;
    expect(events.at(-1)).toMatchObject({ type: 'completion', status: 'completed', finalText: 'ECHO: hello from the package\nTURN: 1' });
    expect(standIn.runs()).toHaveLength(1);
  });

  it('startServer defaults: SERVICE_PORT and SERVICE_TOKEN; without them a token generated once into .service/gateway-token (0600) and reused', async () => {
    const { dir, standIn } = writeTestAssistant();
    const source = `import { createAssistant, startServer } from 'agent-service';
const bot = createAssistant({ dir: process.env.ASSISTANT_DIR });
const server = await startServer(bot);
const status = (await fetch(server.url + '/api/status', { headers: { authorization: 'Bearer ' + server.token } })).status;
await bot.close(); // closes the server started on it too
console.log(JSON.stringify({ port: server.port, token: server.token, status }));
`;
    const fromEnv = await runInProject('defaults.mjs', source, {
      ...standIn.env,
      ASSISTANT_DIR: dir,
      SERVICE_PORT: '0',
      SERVICE_TOKEN: 'env-token-0123456789',
    });
    expect(fromEnv).toMatchObject({ token: 'env-token-0123456789', status: 200 });
    expect(fromEnv.port).toBeGreaterThan(0);
    const tokenFile = path.join(dir, '.service', 'gateway-token');
    expect(fs.existsSync(tokenFile)).toBe(false);

    const generated = await runInProject('defaults.mjs', source, { ...standIn.env, ASSISTANT_DIR: dir, SERVICE_PORT: '0', SERVICE_TOKEN: '' });
    expect(generated.status).toBe(200);
    expect(String(generated.token).length).toBeGreaterThanOrEqual(16);
    expect(fs.readFileSync(tokenFile, 'utf8').trim()).toBe(generated.token);
    expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o600);
    const again = await runInProject('defaults.mjs', source, { ...standIn.env, ASSISTANT_DIR: dir, SERVICE_PORT: '0', SERVICE_TOKEN: '' });
    expect(again.token).toBe(generated.token);
  });

  it('startGateway: the whole gateway from the package (scheduler on, fleet entry written and removed), chat, close', async () => {
    const { dir, standIn } = writeTestAssistant({ yaml: 'tasks:\n  - id: t1\n    name: T1\n    schedule: "0 9 * * *"\n    prompt: hi\n' });
    const fleetDir = testdir({}, 'service-fleet-');
    const out = await runInProject(
      'gateway.mjs',
      `import fs from 'node:fs';
import { startGateway } from 'agent-service';
const gateway = await startGateway({ dir: process.env.ASSISTANT_DIR, port: 0, token: 'gw-token-0123456789', log: { debug() {}, info() {}, warn() {}, error() {}, child() { return this; }, addSecrets() {} } });
const auth = { authorization: 'Bearer ' + gateway.token };
const body = await (await fetch(gateway.url + '/chat', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'through the gateway' }) })).text();
const tasks = await (await fetch(gateway.url + '/api/tasks', { headers: auth })).json();
const fleetWhileUp = fs.readdirSync(process.env.SERVICE_FLEET_DIR).length;
await gateway.close();
console.log(JSON.stringify({ keys: Object.keys(gateway).sort(), body, tasks, fleetWhileUp, fleetAfter: fs.readdirSync(process.env.SERVICE_FLEET_DIR).length }));
`,
      { ...standIn.env, ASSISTANT_DIR: dir, SERVICE_FLEET_DIR: fleetDir },
    );
    expect(out.keys).toEqual(['close', 'hostname', 'port', 'token', 'url']);
    expect((parseSseStrict(String(out.body)) as Array<Record<string, unknown>>).at(-1)).toMatchObject({
      status: 'completed',
      finalText: expect.stringContaining('through the gateway'),
    });
    expect(out.tasks).toMatchObject({ scheduled: true, tasks: [{ id: 't1', nextRun: expect.any(String) }] });
    expect(out).toMatchObject({ fleetWhileUp: 1, fleetAfter: 0 });
  });

  it("is published as agent-service (not the registry's unrelated `service`), with the command under both names", () => {
    const installed = JSON.parse(fs.readFileSync(path.join(project, 'node_modules', 'agent-service', 'package.json'), 'utf8')) as {
      name: string;
      bin: Record<string, string>;
    };
    expect(installed.name).toBe('agent-service');
    expect(installed.bin).toEqual({ service: 'bin/service.js', 'agent-service': 'bin/service.js' });
    const { version } = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    expect(tarball).toBe(`agent-service-${version}.tgz`);
    // The examples say how to depend on it as this test does: the tarball `npm pack` makes, installed by path.
    for (const example of ['embed-server.mjs', 'embed-gateway.mjs']) {
      const text = fs.readFileSync(path.join(repoRoot, 'examples', example), 'utf8');
      expect(text, example).toContain('npm pack');
      expect(text, example).toContain(`npm install /path/to/service/${tarball}`);
      expect(text, example).not.toMatch(/^\/\/\s+npm install service\b/m); // never as a command to type
    }
  });

  it.each([
    ['embed-server.mjs', /serving \S+ on (http:\/\/\S+)\n/],
    ['embed-gateway.mjs', /gateway on (http:\/\/\S+) /],
  ])('examples/%s runs from the package: it serves, answers, and stops on SIGTERM with exit 0', async (example, started) => {
    const { dir, standIn } = writeTestAssistant();
    fs.copyFileSync(path.join(repoRoot, 'examples', example), path.join(project, example));
    const child = spawn(process.execPath, [example, dir], {
      cwd: project,
      env: cleanEnv({ ...standIn.env, SERVICE_PORT: '0', SERVICE_TOKEN: 'example-token-0123456789', SERVICE_FLEET_DIR: testdir({}, 'service-fleet-') }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the example did not start:\n${output}`)), 30_000);
        child.stdout.on('data', () => {
          const m = started.exec(output);
          if (m?.[1] && output.includes('example-token-0123456789')) {
            clearTimeout(timer);
            resolve(m[1]);
          }
        });
        void exited.then((code) => reject(new Error(`the example exited with ${code}:\n${output}`)));
      });
      const res = await fetch(`${url}/chat`, {
        method: 'POST',
        headers: { authorization: 'Bearer example-token-0123456789', 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'from curl' }),
      });
      expect((parseSseStrict(await res.text()) as Array<Record<string, unknown>>).at(-1)).toMatchObject({ status: 'completed' });
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(output).toContain('stopped');
  });

  it('its types: a strict TypeScript consumer compiles against the .d.ts (and wrong options are type errors)', async () => {
    fs.writeFileSync(
      path.join(project, 'consumer.ts'),
      `import { createAssistant, startGateway, startServer, type ServerHandle, type ServerOptions, type StreamEvent } from 'agent-service';
const bot = createAssistant({ dir: '.' });
const options: ServerOptions = { port: 0, token: 'x', hostname: '127.0.0.1' };
const server: ServerHandle = await startServer(bot, options);
const url: string = server.url;
const port: number = server.port;
await server.close(30_000);
for await (const e of bot.chat('hi', { sessionKey: 'k' })) {
  const event: StreamEvent = e;
  if (event.type === 'completion') console.log(event.status, event.finalText);
}
const gateway: ServerHandle = await startGateway({ dir: '.', port: 0 });
await gateway.close();
await bot.close();
// @ts-expect-error port is a number
await startServer(bot, { port: '3000' });
// @ts-expect-error startServer needs the assistant
await startServer({ port: 0 });
// @ts-expect-error the handle is small: no internals
server.directory;
// Types reached through the package's other .d.ts files are real types, not \`any\` (skipLibCheck would hide an unresolved import).
const engine: string = bot.status().engine;
// @ts-expect-error no such field in the status
bot.status().nope;
// @ts-expect-error a StreamEvent type that does not exist
const bad: StreamEvent = { type: 'nope' };
console.log(engine, bad);
console.log(url, port);
`,
    );
    fs.writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = await run(process.execPath, [path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], { cwd: project });
    expect(`${tsc.stdout}${tsc.stderr}`).toBe('');
    expect(tsc.code).toBe(0);
  });
});
