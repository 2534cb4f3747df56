import { createBridge, type Bridge } from './channels/bridge.js';
import { createHistoryFetcher } from './channels/history-fetch.js';
import { createChannelHub, type RunningHub } from './channels/hub.js';
import { errorMessage } from './core/errors.js';
import type { OpenedAssistant } from './open-assistant.js';

/**
 * The gateway's channel layer: the hub (adapters) and the bridge (messages → chat core). Built
 * before the HTTP server (which reports channel status), started after it listens. Once the
 * channels are up: with the inbox on, messages left pending by the last run are processed; with
 * historyFetch on, missed messages are caught up. Processed entries older than
 * inbox.retentionDays are purged at start and every 6 hours.
 */
export interface GatewayChannels {
  hub: RunningHub;
  bridge: Bridge;
  history: ReturnType<typeof createHistoryFetcher>;
  start(): void;
  stop(): Promise<void>;
}

const DAY = 86_400_000;

export function createGatewayChannels(opened: OpenedAssistant, dir: string, env: NodeJS.ProcessEnv = process.env): GatewayChannels {
  const { assistant, config, store, log } = opened;
  let purgeTimer: NodeJS.Timeout | undefined;
  let hub: RunningHub;
  const bridge = createBridge({ assistant, config, store, log, adapterFor: (name) => hub.adapter(name) });
  const backoff = Number(env.SERVICE_CHANNEL_RETRY_MS);
  const connect = Number(env.SERVICE_CHANNEL_CONNECT_TIMEOUT_MS);
  hub = createChannelHub({
    dir,
    config,
    log,
    bridge: () => bridge,
    ...(Number.isFinite(connect) && connect > 0 ? { connectTimeoutMs: connect } : {}),
    ...(Number.isFinite(backoff) && backoff > 0 ? { backoffMs: [backoff] } : {}),
  });

  const history = createHistoryFetcher({
    config,
    store,
    bridge,
    log,
    adapters: () =>
      hub.list().flatMap((c) => {
        const a = hub.adapter(c.name);
        return a ? [a] : [];
      }),
  });

  const purge = () => {
    const days = config.current().config.inbox.retentionDays;
    const n = store.purgeMessages(Date.now() - days * DAY);
    if (n > 0) log.info(`inbox: purged ${n} processed message(s) older than ${days} days`);
  };

  return {
    hub,
    bridge,
    history,
    start() {
      purge();
      purgeTimer = setInterval(purge, 6 * 3_600_000);
      purgeTimer.unref();
      hub.start();
      void hub
        .settled()
        .then(() => {
          if (config.current().config.inbox.enabled) bridge.recover();
          history.start();
        })
        .catch((err: unknown) => log.error(`after connecting: ${errorMessage(err)}`));
    },
    async stop() {
      clearInterval(purgeTimer);
      await history.stop();
      await hub.stop();
    },
  };
}
