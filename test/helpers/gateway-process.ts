import { spawn, type ChildProcess } from 'node:child_process';
import { cliPath } from './cli.js';
import { testdir } from './testdir.js';
import { HANG_MS } from './wait.js';

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  /** The token line as printed. */
  printed: string;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Start `service gateway` for real and wait for its "serving on" line. Unless the test passes
 * SERVICE_FLEET_DIR, the gateway registers in a fleet directory of its own: never the user's
 * ~/.service/fleet, and never alongside gateways of other tests.
 */
export function startGatewayProcess(dir: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [cliPath, 'gateway', '-d', dir, '--port', '0', ...args], {
    env: { ...process.env, NO_COLOR: '1', SERVICE_FLEET_DIR: testdir({}, 'service-fleet-'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${out}`)), HANG_MS);
    const check = () => {
      const m = /serving on (https?:\/\/\S+)\n/.exec(out);
      const t = /^token: (.*)$/m.exec(out);
      if (m?.[1] && t?.[1]) {
        clearTimeout(timer);
        resolve({
          child,
          url: m[1],
          printed: t[1],
          output: () => out,
          async stop(signal = 'SIGTERM') {
            if (child.exitCode === null) child.kill(signal);
            return exited;
          },
        });
      }
    };
    child.stdout?.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${out}`));
    });
  });
}
