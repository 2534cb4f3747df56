import fs from 'node:fs';
import { UsageError } from '../core/errors.js';
import { formatJsonRecord } from '../core/log-record.js';
import { createLogger, type LogFormat, type Logger, parseLogFormat } from '../core/logger.js';
import { resolveAssistantPaths } from '../core/paths.js';
import { resumeOptimizer } from '../core/util/optimizer.js';
import { type Gateway, launchGateway } from '../gateway.js';
import type { TokenSource } from '../server/auth.js';
import { loadServiceConfig } from '../definitions.js';
import type { CommandIO } from './io.js';
import { outliveTerminal } from './stop-signals.js';
import { readTokenOption } from './token-option.js';

export interface GatewayCommandOptions {
  dir: string;
  host?: string;
  port?: string;
  token?: string;
  /** Serve HTTPS (a self-signed certificate kept in .service/tls/, or --cert/--key). */
  https?: boolean;
  cert?: string;
  key?: string;
  /** Listen on every interface and list the network addresses. */
  public?: boolean;
  /** Print a QR code of the dashboard URL; with qrToken the token rides in its fragment. */
  qr?: boolean;
  qrToken?: boolean;
  /** Open a public URL through a tunnel. */
  tunnel?: boolean;
  tokenFile?: string;
  /** `text` or `json` (else SERVICE_LOG_FORMAT, else gateway.logFormat). */
  logFormat?: string;
}

const TOKEN_SOURCES: Record<TokenSource, string> = {
  flag: '--token or --token-file',
  env: 'SERVICE_TOKEN',
  config: 'gateway.token in service.yaml',
  stored: '.service/gateway-token (generated earlier)',
  generated: '.service/gateway-token (generated now)',
};

/**
 * `service gateway`: start the gateway (src/gateway.ts), say where it serves, and on SIGINT,
 * SIGTERM or SIGHUP close it (running turns get the grace period) and exit 0.
 */
export async function runGateway(opts: GatewayCommandOptions, io: CommandIO): Promise<number> {
  const format = resolveLogFormat(opts.logFormat, opts.dir, process.env);
  const log = createLogger({ format, component: 'gateway' });
  const print = (lines: string[]) => printLines(io, lines, format);
  const bind = resolveBindFlags(opts);
  const token = readTokenOption(opts, io);
  const gateway = await launchGateway({
    dir: opts.dir,
    log,
    ...bind,
    ...(opts.port ? { port: opts.port } : {}),
    ...(token ? { token } : {}),
    ...(opts.https || opts.cert || opts.key ? { https: opts.cert || opts.key ? { cert: opts.cert ?? '', key: opts.key ?? '' } : true } : {}),
    ...(opts.tunnel ? { tunnel: true } : {}),
  });
  resumeOptimizer();
  // Before anything is printed: a SIGTERM sent as soon as "serving on" shows is a graceful stop.
  const closed = new Promise<number>((resolve) => {
    let stopping = false;
    const shutdown = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info(`${signal}: shutting down; running turns get ${graceMs() / 1000} s to finish`);
      void gateway.close(graceMs()).then(() => resolve(0));
    };
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    // A closed terminal would end node at once: running engines left working, the directory's lock
    // file and fleet entry left behind. The terminal is gone, so a write to it must not end the stop.
    process.once('SIGHUP', () => {
      outliveTerminal();
      shutdown('SIGHUP');
    });
  });
  const { name, engine } = gateway.assistant.status();
  const ours = gateway.tokenSource === 'generated' || gateway.tokenSource === 'stored';
  const fragment = `#token=${ours ? gateway.token : '<TOKEN>'}`;
  print([
    // The name may hold a ${VAR}: what it resolved to is not printed, like in every log line.
    `${log.redact(name)} (${engine}) is serving on ${gateway.url}`,
    `token: ${ours ? gateway.token : '(hidden: you set it)'}  [from ${TOKEN_SOURCES[gateway.tokenSource]}]`,
    `dashboard: ${gateway.url}/${fragment}`,
    ...(await describeReach(gateway, opts, log)),
  ]);
  void announceExtras(gateway, { ...opts, logFormat: format }, print, log);
  return closed;
}

// --- internal ---

/** --public is the host 0.0.0.0; with --host as well, one of the two is a mistake. */
function resolveBindFlags(opts: GatewayCommandOptions): { hostname?: string } {
  if (opts.public && opts.host && opts.host !== '0.0.0.0' && opts.host !== '::') {
    throw new UsageError(`--public listens on every interface and --host ${opts.host} on one: give one of them`);
  }
  if (opts.public) return { hostname: opts.host ?? '0.0.0.0' };
  return opts.host ? { hostname: opts.host } : {};
}

/** The lines after the dashboard's: the certificate, and on a public bind the network addresses with a warning. */
async function describeReach(gateway: Gateway, opts: GatewayCommandOptions, log: Logger): Promise<string[]> {
  const lines: string[] = [];
  if (gateway.tls) {
    const kind = opts.cert ? 'your certificate' : `a self-signed certificate ${gateway.tls.made ? 'made now and kept' : 'kept'} in`;
    lines.push(`tls: ${kind} ${gateway.tls.certFile} (SHA-256 ${gateway.tls.fingerprint})`);
    if (!opts.cert) lines.push('     browsers warn about a self-signed certificate: compare the fingerprint, or serve your own with --cert FILE --key FILE');
  }
  const network = (await gateway.urls()).filter((u) => u.type === 'network');
  for (const u of network) lines.push(`network: ${u.url}`);
  if (isAnyHost(gateway.host)) {
    log.warn(
      `listening on every network interface (${gateway.host}): anyone who can reach this machine can open the dashboard and, with the token, use the API${gateway.tls ? '' : '; the token travels unencrypted (add --https)'}`,
    );
  }
  return lines;
}

/** What arrives after start: the tunnel's URL (or why there is none), then the QR code. */
async function announceExtras(gateway: Gateway, opts: GatewayCommandOptions, print: (lines: string[]) => void, log: Logger): Promise<void> {
  let publicUrl: string | undefined;
  if (gateway.tunnel) {
    try {
      publicUrl = await gateway.tunnel;
      print([`tunnel: ${publicUrl}`]);
      log.warn(`the tunnel makes the API reachable from the internet by anyone with its URL; the token still protects it (dashboard: ${publicUrl}/#token=…)`);
    } catch (err) {
      log.error(`tunnel: cannot open a public URL (${err instanceof Error ? err.message : String(err)}); serving locally only, at ${gateway.url}`);
    }
  }
  if (!opts.qr) return;
  const network = (await gateway.urls()).find((u) => u.type === 'network');
  const base = publicUrl ?? network?.url ?? gateway.url;
  if (!publicUrl && !network) log.warn(`the QR code points at ${gateway.url}, which a phone cannot reach: add --public (same network) or --tunnel`);
  if (opts.logFormat === 'json') {
    // A drawing is not a log record: with one JSON object per line, the link alone.
    log.warn(`--qr draws no QR code with --log-format json (one JSON object per line); the dashboard: ${base}/`);
    return;
  }
  await gateway.showQr(`${base}/${opts.qrToken ? `#token=${gateway.token}` : ''}`);
  if (!opts.qrToken) print(['(the QR code carries no token: the dashboard asks for it; --qr-token puts it in the link)']);
}

/**
 * The log format: --log-format, else SERVICE_LOG_FORMAT, else `gateway.logFormat`. The file is
 * read before the gateway starts (so its first line is in that format) and validated whole only
 * when it names the key: the gateway reads and validates it anyway, a moment later.
 */
function resolveLogFormat(flag: string | undefined, dir: string, env: NodeJS.ProcessEnv): LogFormat {
  const given =
    flag !== undefined
      ? { raw: flag, source: '--log-format' }
      : env.SERVICE_LOG_FORMAT?.trim()
        ? { raw: env.SERVICE_LOG_FORMAT, source: 'SERVICE_LOG_FORMAT' }
        : undefined;
  if (given) {
    const format = parseLogFormat(given.raw);
    if (!format) throw new UsageError(`${given.source}: expected text or json, got "${given.raw}"`);
    return format;
  }
  let text = '';
  try {
    text = fs.readFileSync(resolveAssistantPaths(dir).configFile, 'utf8');
  } catch {
    return 'text'; // no file: the gateway says so itself
  }
  return text.includes('logFormat') ? loadServiceConfig(dir, env).config.gateway.logFormat : 'text';
}

/** What the command prints on stdout: lines as they are, or in the JSON format one record each (never redacted: the token shown is the one to use). */
function printLines(io: CommandIO, lines: string[], format: LogFormat): void {
  if (format === 'text') io.out(lines.join('\n'));
  else for (const message of lines) io.out(formatJsonRecord({ time: new Date(), level: 'info', component: 'gateway', message }, (t) => t));
}

const isAnyHost = (host: string) => host === '0.0.0.0' || host === '::';

/** Documented default: 30 s; SERVICE_SHUTDOWN_GRACE_MS overrides it (tests use a short one). */
function graceMs(): number {
  const v = Number(process.env.SERVICE_SHUTDOWN_GRACE_MS);
  return Number.isFinite(v) && v >= 0 ? v : 30_000;
}
