import { createLogger } from '../core/logger.js';
import { resumeOptimizer } from '../core/util/optimizer.js';
import { startGateway } from '../gateway.js';
import type { TokenSource } from '../server/auth.js';
import type { CommandIO } from './io.js';
import { readTokenOption } from './token-option.js';

export interface GatewayOptions {
  dir: string;
  host?: string;
  port?: string;
  token?: string;
  tokenFile?: string;
}

const TOKEN_SOURCES: Record<TokenSource, string> = {
  flag: '--token or --token-file',
  env: 'SERVICE_TOKEN',
  config: 'gateway.token in service.yaml',
  stored: '.service/gateway-token (generated earlier)',
  generated: '.service/gateway-token (generated now)',
};

/**
 * `service gateway`: start the gateway (src/gateway.ts), say where it serves, and on SIGINT or
 * SIGTERM close it (running turns get the grace period) and exit 0.
 */
export async function runGateway(opts: GatewayOptions, io: CommandIO): Promise<number> {
  const log = createLogger();
  const token = readTokenOption(opts, io);
  const gateway = await startGateway({
    dir: opts.dir,
    log,
    ...(opts.host ? { hostname: opts.host } : {}),
    ...(opts.port ? { port: opts.port } : {}),
    ...(token ? { token } : {}),
  });
  resumeOptimizer();
  const { name, engine } = gateway.assistant.status();
  const ours = gateway.tokenSource === 'generated' || gateway.tokenSource === 'stored';
  io.out(
    [
      // The name may hold a ${VAR}: what it resolved to is not printed, like in every log line.
      `${log.redact(name)} (${engine}) is serving on ${gateway.url}`,
      `token: ${ours ? gateway.token : '(hidden: you set it)'}  [from ${TOKEN_SOURCES[gateway.tokenSource]}]`,
      `dashboard: ${gateway.url}/#token=${ours ? gateway.token : '<TOKEN>'}`,
    ].join('\n'),
  );

  return new Promise<number>((resolve) => {
    let stopping = false;
    const shutdown = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info(`${signal}: shutting down; running turns get ${graceMs() / 1000} s to finish`);
      void gateway.close(graceMs()).then(() => resolve(0));
    };
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
  });
}

/** Documented default: 30 s; SERVICE_SHUTDOWN_GRACE_MS overrides it (tests use a short one). */
function graceMs(): number {
  const v = Number(process.env.SERVICE_SHUTDOWN_GRACE_MS);
  return Number.isFinite(v) && v >= 0 ? v : 30_000;
}
