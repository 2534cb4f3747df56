// A `service gateway` process for the benchmarks: started on a free port with a fixed token,
// resolved once it prints the URL it serves on; its output kept for the caller to read. `argv`
// replaces the command line (the floor server of bench/floor-gateway.mjs).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = path.join(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..'), 'bin', 'service.js');

export async function spawnGateway({ dir, env, token, argv }) {
  const child = spawn(process.execPath, argv ?? [CLI, 'gateway', '--port', '0', '--token', token, '-d', dir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start in 20 s:\n${out}`)), 20_000);
    const check = () => {
      const m = /is serving on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', check);
    void exited.then((e) => reject(new Error(`gateway exited early (${JSON.stringify(e)}):\n${out}`)));
  });
  return {
    child,
    pid: child.pid,
    url,
    exited,
    output: () => out,
    /** SIGTERM (SIGKILL after 15 s), or the signal given, and wait for the exit. */
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
