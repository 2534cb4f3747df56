import type { ChannelHub, ChannelStatus, SendOutcome } from '../core/channel-hub.js';
import type { ConfigSource } from '../core/config/source.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { withDeadline } from '../core/util/timeout.js';
import { loadCustomAdapter } from './custom.js';
import { channelDefinitions } from './registry.js';
import type { RunningAdapterTable } from './running-adapters.js';
import type { SentLedger } from './sent-ledger.js';
import { splitMessage } from './split.js';
import type { ChannelAdapter, ChannelDeps, InboundMessage } from './types.js';

/**
 * The channels of one gateway: every configured channel started concurrently with a connect
 * deadline, after the HTTP server listens. A channel that fails to connect or later drops is
 * `failed` with its reason and restarted with backoff; it never affects the others or the HTTP
 * server. Implements the ChannelHub the server and the scheduler use.
 */
export interface HubDeps {
  dir: string;
  config: ConfigSource;
  log: Logger;
  /** Where incoming messages go (the bridge's `accept`); adapters acknowledge once it resolves. */
  onMessage(message: InboundMessage): Promise<void>;
  /** Filled with each channel's adapter while it runs. */
  adapters: RunningAdapterTable;
  /** Ids of proactive sends are noted here (their echo is not answered). */
  sent: SentLedger;
  /** Connect deadline per attempt (default 30 s). */
  connectTimeoutMs?: number;
  /** Restart delays after failures, last one repeated (default 5 s … 5 min). */
  backoffMs?: readonly number[];
  /** Start only these channels (`service cron run` connects just its target's). */
  only?: readonly string[];
}

export interface RunningHub extends ChannelHub {
  start(): void;
  /** Wait until every channel has either connected or failed its first attempt. */
  settled(): Promise<void>;
  /** Stop; with `standby`, configured channels then report `failed` with that reason (another gateway runs them). */
  stop(opts?: { standby?: string }): Promise<void>;
}

interface Runtime {
  name: string;
  options: Record<string, unknown>;
  adapter?: ChannelAdapter;
  status: 'connected' | 'failed';
  reason?: string;
  attempt: number;
  timer?: NodeJS.Timeout;
  firstAttempt: Promise<void>;
}

const DEFAULT_BACKOFF = [5_000, 15_000, 30_000, 60_000, 120_000, 300_000];

export function createChannelHub(deps: HubDeps): RunningHub {
  const log = deps.log.child('channels');
  const runtimes = new Map<string, Runtime>();
  const connectTimeout = deps.connectTimeoutMs ?? 30_000;
  const backoff = deps.backoffMs ?? DEFAULT_BACKOFF;
  let stopped = false;
  let standby: string | undefined;
  /** A runtime of an earlier start (the hub stopped and started again) acts no more. */
  const isStale = (rt: Runtime) => stopped || runtimes.get(rt.name) !== rt;

  const setStatus = (rt: Runtime, status: Runtime['status'], reason?: string) => {
    if (rt.status !== status || rt.reason !== reason) log.info(`${rt.name}: ${status}${reason ? ` (${reason})` : ''}`, { channel: rt.name, status });
    rt.status = status;
    if (reason === undefined) delete rt.reason;
    else rt.reason = reason;
  };

  // The runtime owns its adapter from creation (to stop it); the shared table gets it only once
  // start resolved: an adapter refuses replies until it is connected (the lifecycle contract).
  const publish = (rt: Runtime, adapter: ChannelAdapter) => {
    if (rt.adapter === adapter && !isStale(rt)) deps.adapters.set(rt.name, adapter);
  };
  const detach = (rt: Runtime, adapter: ChannelAdapter | undefined) => {
    if (!adapter || rt.adapter !== adapter) return;
    delete rt.adapter;
    deps.adapters.remove(rt.name, adapter);
  };

  const attempt = async (rt: Runtime): Promise<void> => {
    if (isStale(rt)) return;
    rt.attempt++;
    let adapter: ChannelAdapter | undefined;
    try {
      adapter = await createAdapter(rt, deps);
      rt.adapter = adapter;
      const current = adapter;
      await withDeadline(
        adapter.start({
          log: deps.log.child(rt.name, { channel: rt.name }),
          onMessage: (msg) => takeIn(msg, rt.name, log, deps.onMessage),
          onStatus: (s) => {
            if (rt.adapter !== current || isStale(rt)) return;
            if (s.state === 'connected') setStatus(rt, 'connected');
            else setStatus(rt, 'failed', s.reason ?? s.state);
            if (s.state === 'failed') scheduleRestart(rt);
          },
        }),
        connectTimeout,
        `did not connect within ${connectTimeout / 1000} s`,
      );
      rt.attempt = 0;
      publish(rt, adapter);
      setStatus(rt, 'connected');
    } catch (err) {
      setStatus(rt, 'failed', errorMessage(err));
      if (adapter) await adapter.stop().catch((e: unknown) => log.warn(`${rt.name}: stop after failure: ${errorMessage(e)}`));
      detach(rt, adapter);
      scheduleRestart(rt);
    }
  };

  const scheduleRestart = (rt: Runtime) => {
    if (isStale(rt) || rt.timer) return;
    const delay = backoff[Math.min(rt.attempt, backoff.length) - 1] ?? backoff[backoff.length - 1] ?? 60_000;
    log.info(`${rt.name}: retrying in ${Math.round(delay / 1000)} s`, { channel: rt.name });
    rt.timer = setTimeout(() => {
      delete rt.timer;
      void (async () => {
        const old = rt.adapter;
        detach(rt, old);
        if (old) await old.stop().catch(() => undefined);
        await attempt(rt);
      })();
    }, delay);
    rt.timer.unref();
  };

  return {
    start() {
      stopped = false;
      standby = undefined;
      runtimes.clear();
      const loaded = deps.config.current();
      for (const [name, options] of Object.entries(loaded.config.channels)) {
        if (deps.only && !deps.only.includes(name)) continue;
        const rt: Runtime = {
          name,
          options: options as Record<string, unknown>,
          status: 'failed',
          reason: 'connecting',
          attempt: 0,
          firstAttempt: Promise.resolve(),
        };
        runtimes.set(name, rt);
        rt.firstAttempt = attempt(rt);
      }
      for (const d of loaded.disabledChannels) log.warn(`${d.name}: not started: ${d.reason}`);
    },
    settled: async () => {
      await Promise.all([...runtimes.values()].map((rt) => rt.firstAttempt));
    },
    statuses: () => channelStatuses(deps.config, runtimes, standby),
    list: () => [...runtimes.values()].filter((rt) => rt.adapter).map((rt) => ({ name: rt.name, canSend: typeof rt.adapter?.send === 'function' })),
    send: (channel, chatId, text) => sendProactive({ deps, log, runtimes, standby }, channel, chatId, text),
    async stop(opts = {}) {
      stopped = true;
      standby = opts.standby;
      await Promise.all(
        [...runtimes.values()].map(async (rt) => {
          clearTimeout(rt.timer);
          // Stopping an adapter that is still connecting also ends its pending start.
          const adapter = rt.adapter;
          await adapter?.stop().catch((err: unknown) => log.warn(`${rt.name}: stop: ${errorMessage(err)}`));
          detach(rt, adapter);
        }),
      );
    },
  };
}

// --- internal ---

/** A built-in channel's adapter from the registry, or a custom one loaded from its module (`_adapter`). */
async function createAdapter(rt: Runtime, deps: HubDeps): Promise<ChannelAdapter> {
  const channelDeps: ChannelDeps = { log: deps.log.child(rt.name, { channel: rt.name }), dir: deps.dir, name: rt.name };
  const def = channelDefinitions[rt.name];
  if (def) return def.create(rt.options, channelDeps);
  const { _adapter, ...rest } = rt.options as { _adapter: string };
  return loadCustomAdapter(_adapter, rest, channelDeps);
}

/** Every built-in channel, every configured one and every disabled one, with its state; a standby hub reports its configured channels failed. */
function channelStatuses(config: ConfigSource, runtimes: ReadonlyMap<string, Runtime>, standby: string | undefined): ChannelStatus[] {
  const disabled = new Map(config.current().disabledChannels.map((d) => [d.name, d.reason]));
  const names = [...new Set([...Object.keys(channelDefinitions), ...runtimes.keys(), ...disabled.keys()])];
  return names.map((type) => {
    const rt = runtimes.get(type);
    const title = channelDefinitions[type]?.title ?? 'custom adapter';
    if (standby !== undefined && type in config.current().config.channels) return { type, title, status: 'failed' as const, reason: standby };
    if (rt) return { type, title, status: rt.status, ...(rt.reason ? { reason: rt.reason } : {}) };
    if (disabled.has(type)) return { type, title, status: 'failed' as const, reason: disabled.get(type) ?? 'disabled' };
    return { type, title, status: 'not_configured' as const };
  });
}

/** A proactive send through the channel's running adapter, split to its limit; each part's id noted as sent. */
async function sendProactive(
  hub: { deps: HubDeps; log: Logger; runtimes: ReadonlyMap<string, Runtime>; standby: string | undefined },
  channel: string,
  chatId: string,
  text: string,
): Promise<SendOutcome> {
  const { deps, log, runtimes, standby } = hub;
  if (standby !== undefined && channel in deps.config.current().config.channels)
    return { ok: false, reason: 'not_connected', error: `channel ${channel} is not connected: ${standby}` };
  if (runtimes.size === 0) return { ok: false, reason: 'no_channels', error: 'no channel adapters are available' };
  const rt = runtimes.get(channel);
  if (!rt) return { ok: false, reason: 'not_found', error: `channel ${channel} is not configured`, availableChannels: [...runtimes.keys()] };
  const adapter = rt.adapter;
  if (!adapter || rt.status !== 'connected')
    return { ok: false, reason: 'not_connected', error: `channel ${channel} is not connected${rt.reason ? `: ${rt.reason}` : ''}` };
  if (!adapter.send) return { ok: false, reason: 'unsupported', error: `channel ${channel} cannot send proactive messages` };
  try {
    for (const part of splitMessage(text, adapter.limit, (md) => adapter.render(md))) {
      const sent = await adapter.send(chatId, part);
      deps.sent.note(channel, sent?.messageId);
    }
    return { ok: true };
  } catch (err) {
    log.warn(`${channel}: proactive send to ${chatId} failed: ${errorMessage(err)}`, { channel, chatId });
    return { ok: false, reason: 'failed', error: `${channel} refused the message: ${errorMessage(err)}` };
  }
}

/** A message a platform delivered, handed to the bridge; with SERVICE_LOG_LEVEL=debug, a line for each (tests count them too). */
function takeIn(msg: InboundMessage, channel: string, log: Logger, onMessage: (msg: InboundMessage) => Promise<void>): Promise<void> {
  log.debug(`${channel}: took in message ${msg.messageId} (${msg.chatType})`, { channel, messageId: msg.messageId });
  return onMessage(msg);
}
