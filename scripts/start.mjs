#!/usr/bin/env node
// `npm start`: build, scaffold ./demo-assistant from the customer-support template when it is
// missing, then run `service gateway` on it (the gateway prints its URL, token and dashboard link).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
if (!fs.existsSync(path.join(demo, 'service.yaml'))) {
  run([cli, 'init', demo, '--template', 'customer-support', '--name', 'demo-assistant', '--yes'], 'init');
}

const gateway = spawn(process.execPath, [cli, 'gateway', '--dir', demo, ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => gateway.kill(sig));
gateway.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
