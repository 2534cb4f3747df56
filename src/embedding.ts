import { addTaskRunner, type AssistantDirectory, type DirectoryTasks, openAssistantDirectory } from './assistant-directory.js';
import { channelDefinitions } from './channels/registry.js';
import type { Assistant } from './core/assistant/assistant.js';
import type { ChannelHub, ChannelStatus } from './core/channel-hub.js';
import { parsePort } from './core/config/bind.js';
import type { ConfigSource } from './core/config/source.js';
import { createSilentLogger, type Logger } from './core/logger.js';
import { resolveAssistantPaths } from './core/paths.js';
import type { Clock } from './core/scheduler/clock.js';
import { once } from './core/util/once.js';
import { launchGateway } from './gateway.js';
import { resolveGatewayToken } from './server/auth.js';
import { serveAssistant } from './server/serve.js';

/**
 * The embedding API (the package's exports): an assistant in your own Node program, and the HTTP
 * server or the whole gateway around it. The public types stay small: what the server needs
 * from an assistant (its directory, its task runner) is kept in a WeakMap private to this module.
 */
export interface CreateAssistantOptions {
  /** The assistant directory (service.yaml + skills/). */
  dir: string;
  /** The engine's API key, used instead of its environment variable. */
  apiKey?: string;
  /** Where to log; silent by default. */
  log?: Logger;
}

export interface EmbeddedAssistant extends Assistant {
  /**
   * Close the servers started on it (`startServer`), let running turns finish (up to `graceMs`,
   * default 10 s; then they end `aborted`), then release the database.
   */
  close(graceMs?: number): Promise<void>;
}

/** Options of `startServer` (the spec's server options). */
export interface ServerOptions {
  /** Default: SERVICE_PORT, else 3000. 0 picks a free port (see `port` of the handle). */
  port?: number;
  /** Default: SERVICE_TOKEN, else the token kept in `<dir>/.service/gateway-token` (generated once, mode 0600). */
  token?: string;
  /** Default: 127.0.0.1. */
  hostname?: string;
}

/** Options of `startGateway`: the server options plus the directory, as `service gateway` takes them. */
export interface GatewayOptions {
  /** The assistant directory (service.yaml + skills/). */
  dir: string;
  /** Default: SERVICE_PORT, else `gateway.port` in service.yaml, else 3000. 0 picks a free port. */
  port?: number;
  /** Default: SERVICE_TOKEN, else `gateway.token` in service.yaml, else the one kept in `.service/gateway-token`. */
  token?: string;
  /** Default: `gateway.host` in service.yaml, else 127.0.0.1. */
  hostname?: string;
  /** The engine's API key, used instead of its environment variable. */
  apiKey?: string;
  /** Where to log; default: stderr, as `service gateway` does. */
  log?: Logger;
  /** The time scheduled tasks run by (default: the system clock): a clock of your own, e.g. a test's fake one. */
  clock?: Clock;
}

/** A running server (`startServer`) or gateway (`startGateway`). */
export interface ServerHandle {
  /** `http://<hostname>:<port>` */
  url: string;
  hostname: string;
  /** The port actually bound (useful with port 0). */
  port: number;
  /** The bearer token every route except `GET /health` and the dashboard's files needs. */
  token: string;
  /**
   * Stop as SIGTERM stops `service gateway`: stop accepting connections, let running turns finish
   * for `graceMs` (default 30 s), abort what is left (their completion says "Aborted: the gateway
   * is shutting down"), write the last events of every open stream, close the connections. A
   * gateway then also stops its channels and releases the assistant. Idempotent.
   */
  close(graceMs?: number): Promise<void>;
}

interface Internals {
  directory: AssistantDirectory;
  tasks: DirectoryTasks;
  servers: Set<(graceMs: number) => Promise<void>>;
  closed: boolean;
}

const internals = new WeakMap<object, Internals>();

/**
 * The chat core of one assistant directory, in this process.
 *
 * @example
 * const bot = createAssistant({ dir: './my-assistant' });
 * for await (const event of bot.chat('Hello', { sessionKey: 'user-42' })) {
 *   if (event.type === 'text') process.stdout.write(event.content);
 *   if (event.type === 'completion') console.log('\n', event.status);
 * }
 * await bot.close();
 */
export function createAssistant(opts: CreateAssistantOptions): EmbeddedAssistant {
  const directory = openAssistantDirectory({ dir: opts.dir, log: opts.log ?? createSilentLogger(), ...(opts.apiKey ? { apiKey: opts.apiKey } : {}) });
  const inner: Internals = { directory, tasks: addTaskRunner(directory), servers: new Set(), closed: false };
  const embedded: EmbeddedAssistant = {
    ...directory.assistant,
    close: once(async (graceMs = 10_000) => {
      await Promise.all([...inner.servers].map((close) => close(graceMs)));
      await directory.assistant.drain(graceMs, 'the assistant is closing');
      inner.closed = true;
      await directory.close();
    }),
  };
  internals.set(embedded, inner);
  return embedded;
}

/**
 * The HTTP/SSE API and the dashboard for an assistant made with `createAssistant`, without the
 * gateway's channels, scheduler or fleet entry (`startGateway` runs those). Resolves once listening.
 *
 * @example
 * const bot = createAssistant({ dir: './my-assistant' });
 * const server = await startServer(bot, { port: 0 });
 * console.log(`${server.url}  token ${server.token}`);
 * process.once('SIGTERM', () => void server.close().then(() => bot.close()));
 */
export async function startServer(assistant: EmbeddedAssistant, opts: ServerOptions = {}): Promise<ServerHandle> {
  const inner = internals.get(assistant);
  if (!inner) throw new TypeError('startServer: pass an assistant made by createAssistant()');
  if (inner.closed) throw new Error('startServer: this assistant is closed');
  const { directory } = inner;
  const env = process.env;
  const fromEnv = env.SERVICE_PORT?.trim() || undefined;
  const port = parsePort(opts.port ?? fromEnv ?? 3000, opts.port !== undefined ? 'startServer port' : 'SERVICE_PORT');
  const auth = resolveGatewayToken({
    ...(opts.token ? { flag: opts.token } : {}),
    env,
    tokenFile: resolveAssistantPaths(directory.dir).tokenFile,
  });
  directory.log.addSecrets([auth.token]);

  const server = await serveAssistant({
    deps: {
      assistant: directory.assistant,
      commands: directory.commands,
      config: directory.config,
      channels: createUnconnectedHub(directory.config),
      tasks: inner.tasks.control,
      access: directory.access,
      metrics: directory.metrics,
      activity: directory.store,
      token: auth.token,
      log: directory.log,
    },
    host: opts.hostname ?? '127.0.0.1',
    port,
  });
  const stop = once(async (graceMs: number) => {
    inner.servers.delete(stop);
    await server.stop(graceMs);
  });
  inner.servers.add(stop);
  return { url: server.url, hostname: server.host, port: server.port, token: auth.token, close: (graceMs = 30_000) => stop(graceMs) };
}

/**
 * Everything `service gateway` runs, for the assistant directory `dir`: the HTTP/SSE API and the
 * dashboard, the IM channels of service.yaml, the scheduled tasks, the fleet entry. Resolves
 * once listening (channels connect in the background, as in `service gateway`).
 */
export async function startGateway(opts: GatewayOptions): Promise<ServerHandle> {
  const gateway = await launchGateway({
    dir: opts.dir,
    ...(opts.port !== undefined ? { port: opts.port } : {}),
    ...(opts.token ? { token: opts.token } : {}),
    ...(opts.hostname ? { hostname: opts.hostname } : {}),
    ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  return { url: gateway.url, hostname: gateway.host, port: gateway.port, token: gateway.token, close: (graceMs = 30_000) => gateway.close(graceMs) };
}

// --- internal ---

/** startServer connects no channel: a configured one is reported as not connected, with why. */
function createUnconnectedHub(config: ConfigSource): ChannelHub {
  const reason = 'not connected: startServer serves HTTP only (startGateway connects channels)';
  return {
    statuses(): ChannelStatus[] {
      const configured = Object.keys(config.current().config.channels);
      const all = [...new Set([...Object.keys(channelDefinitions), ...configured])];
      return all.map((type) => (configured.includes(type) ? { type, status: 'failed', reason } : { type, status: 'not_configured' }));
    },
    list: () => [],
    send: async () => ({ ok: false, reason: 'no_channels', error: `no channel adapters are available: ${reason}` }),
  };
}
