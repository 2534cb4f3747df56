import { createBridge, type Bridge } from '../channels/bridge.js';
import { createChannelHub, type RunningHub } from '../channels/hub.js';
import { errorMessage } from '../core/errors.js';
import type { OpenedAssistant } from '../open-assistant.js';

/**
 * The gateway's channel layer: the hub (adapters) and the bridge (messages → chat core). Built
 * before the HTTP server (which reports channel status), started after it listens. With the
 * inbox on, messages left pending by the last run are processed once the channels are up;
 * processed entries older than inbox.retentionDays are purged at start and every 6 hours.
 */
export interface GatewayChannels {
  hub: RunningHub;
  bridge: Bridge;
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

  const purge = () => {
    const days = config.current().config.inbox.retentionDays;
    const n = store.purgeMessages(Date.now() - days * DAY);
    if (n > 0) log.info(`inbox: purged ${n} processed message(s) older than ${days} days`);
  };

  return {
    hub,
    bridge,
    start() {
      purge();
      purgeTimer = setInterval(purge, 6 * 3_600_000);
      purgeTimer.unref();
      hub.start();
      if (config.current().config.inbox.enabled) {
        void hub.settled().then(() => bridge.recover()).catch((err: unknown) => log.error(`inbox recovery: ${errorMessage(err)}`));
      }
    },
    async stop() {
      clearInterval(purgeTimer);
      await hub.stop();
    },
  };
}
