import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { cliPath, repoRoot } from './cli.js';
import { testdir } from './testdir.js';
import { HANG_MS, sleep } from './wait.js';

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  /** The token line as printed. */
  printed: string;
  output(): string;
  /** Each stream alone (a line is never cut by the other's). */
  stdout(): string;
  stderr(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Start `service gateway` for real and wait for its "serving on" line. Unless the test passes
 * SERVICE_FLEET_DIR, the gateway registers in a fleet directory of its own: never the user's
 * ~/.service/fleet, and never alongside gateways of other tests.
 */
export function startGatewayProcess(dir: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  return startedGateway(
    spawn(process.execPath, [cliPath, 'gateway', '-d', dir, '--port', '0', ...args], {
      env: { ...process.env, NO_COLOR: '1', SERVICE_FLEET_DIR: testdir({}, 'service-fleet-'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

export interface ClockedGatewayProcess extends GatewayProcess {
  /** Move the gateway's scheduler clock to `at` (unix ms), firing what falls due; resolves once it has. */
  advanceTo(at: number): Promise<void>;
}

/**
 * A gateway process (test/fakes/clocked-gateway.mjs: the embedding API's startGateway with a
 * fake clock) whose scheduled tasks run on a clock the test moves, starting at `clockStart`.
 */
export async function startClockedGatewayProcess(dir: string, token: string, clockStart: number, env: NodeJS.ProcessEnv = {}): Promise<ClockedGatewayProcess> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'test', 'fakes', 'clocked-gateway.mjs'), dir, token, String(clockStart)], {
    env: { ...process.env, NO_COLOR: '1', SERVICE_FLEET_DIR: testdir({}, 'service-fleet-'), ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const gateway = await startedGateway(child);
  let seq = 0;
  return {
    ...gateway,
    advanceTo: (at) =>
      new Promise((resolve, reject) => {
        const id = ++seq;
        const onMessage = (m: { type?: string; id?: number }) => {
          if (m.type !== 'advanced' || m.id !== id) return;
          child.off('message', onMessage);
          child.off('exit', onExit);
          resolve();
        };
        const onExit = () => {
          child.off('message', onMessage);
          reject(new Error(`the gateway exited before its clock reached ${new Date(at).toISOString()}:\n${gateway.output()}`));
        };
        child.on('message', onMessage);
        child.once('exit', onExit);
        child.send({ type: 'advance', id, to: at });
      }),
  };
}

/** Resolves with the gateway once it printed where it serves and its token. */
function startedGateway(child: ChildProcess): Promise<GatewayProcess> {
  let out = '';
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Output can still be on its way when the process has exited: `stop` waits for both pipes to end too.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${out}`)), HANG_MS);
    const check = () => {
      const text = asText(out);
      const m = /serving on (https?:\/\/\S+)\n/.exec(text);
      const t = /^token: (.*)$/m.exec(text);
      if (m?.[1] && t?.[1]) {
        clearTimeout(timer);
        resolve({
          child,
          url: m[1],
          printed: t[1],
          output: () => out,
          stdout: () => stdout,
          stderr: () => stderr,
          async stop(signal = 'SIGTERM') {
            if (child.exitCode === null) child.kill(signal);
            const code = await exited;
            await Promise.race([closed, sleep(5_000)]);
            return code;
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

/** The output with each JSON log record (`--log-format json`) read as its message, so the start lines are found either way. */
function asText(out: string): string {
  return out
    .split('\n')
    .map((line) => {
      if (!line.startsWith('{')) return line;
      try {
        const record = JSON.parse(line) as { message?: unknown };
        return typeof record.message === 'string' ? record.message : line;
      } catch {
        return line;
      }
    })
    .join('\n');
}
