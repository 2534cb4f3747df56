#!/usr/bin/env node
// `npm start`: build, scaffold ./demo-assistant from the customer-support template when it is
// missing, then run `service gateway` on it (the gateway prints its URL, token and dashboard link).
//
// The gateway runs in this process, not in a child: npm runs this script through `sh -c`, and a
// SIGTERM sent to npm's pid ends npm and that shell but never reaches us. So we watch our parent
// instead: once it is gone (we were re-parented), we send ourselves SIGTERM and the gateway shuts
// down the way it always does (running turns get the grace period, then exit 0). Ctrl-C reaches
// this process directly (the terminal signals the whole foreground group).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const demo = path.join(root, 'demo-assistant');
const cli = path.join(root, 'bin', 'service.js');

const run = (args, label) => {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`npm start: ${label} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
};

run([path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], 'build');
run([path.join(root, 'scripts', 'bundle.mjs')], 'bundle');
if (!fs.existsSync(path.join(demo, 'service.yaml'))) {
  run([cli, 'init', demo, '--template', 'customer-support', '--name', 'demo-assistant', '--yes'], 'init');
}

// As if `service gateway --dir demo-assistant [args]` had been typed (argv[1] is the CLI, so its
// hints, the notes below included, name a form of it that works from the user's shell).
process.argv = [process.execPath, cli, 'gateway', '--dir', demo, ...process.argv.slice(2)];
await noteCommandName();
await noteEngineSource();
exitWithParent();
await import(pathToFileURL(path.join(root, 'dist', 'cli.js')).href);

/**
 * What a bare `service` runs in the user's shell (npm put node_modules/.bin on our PATH, not on
 * theirs): when it is not this CLI (Debian's /usr/sbin/service first on PATH, or nothing linked),
 * say so with the fix before the gateway's lines, as `service doctor` does.
 */
async function noteCommandName() {
  const { checkOwnCommandName } = await import(pathToFileURL(path.join(root, 'dist', 'core', 'invocation.js')).href);
  const report = checkOwnCommandName();
  if (report.ok) return;
  console.log(`note: ${report.detail}`);
  if (report.fix) console.log(`      fix: ${report.fix}`);
}

/**
 * Which program the demo's engine runs and where it comes from: in a checkout usually the copy
 * npm install bundled in node_modules/.bin, which npm put on our PATH and a shell lacks.
 */
async function noteEngineSource() {
  const dist = (file) => import(pathToFileURL(path.join(root, 'dist', ...file.split('/'))).href);
  const [{ loadServiceConfig }, { getEngine }, { locateEngine, describeEngineSource }] = await Promise.all([
    dist('definitions.js'),
    dist('core/engines/registry.js'),
    dist('core/engines/detect.js'),
  ]);
  try {
    const { config } = loadServiceConfig(demo);
    const def = getEngine(config.engine);
    console.log(describeEngineSource(def, locateEngine(def, process.env.PATH, { config, dir: demo }), demo));
  } catch {
    // An invalid service.yaml: the gateway says what is wrong with it.
  }
}

/** When the process that started us exits, stop the gateway as SIGTERM would. */
function exitWithParent() {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    console.error(`npm start: the parent process (${parent}) is gone; stopping the gateway`);
    process.kill(process.pid, 'SIGTERM');
  }, 500);
  timer.unref();
}
