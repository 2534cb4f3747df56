import { randomUUID } from 'node:crypto';
import type { Assistant } from '../core/assistant/assistant.js';
import type { ChannelHub } from '../core/channel-hub.js';
import type { ConfigSource } from '../core/config/source.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { LiveMetrics } from '../core/metrics/live-metrics.js';
import type { AccessStore, ActivityStore, GroupStateStore, InboxLedger, KnownChatStore, ReplyOutboxStore } from '../core/store/types.js';
import { createAccessGate } from './access/gate.js';
import { type Bridge, createBridge } from './bridge.js';
import { createHistoryFetcher } from './history-fetch.js';
import { createChannelHub } from './hub.js';
import { createReplyOutbox } from './reply-outbox.js';
import { createRunningAdapters } from './running-adapters.js';
import { createSentLedger, type SentLedger } from './sent-ledger.js';

/**
 * The gateway's channel layer, built in one direction: the running-adapter table and the
 * sent-message ledger first, then the bridge (messages → the assistant → replies) that reads
 * them, then the hub (adapter lifecycle) that fills them and hands messages to the bridge, then
 * history catch-up. Nothing here calls back into something built after it.
 *
 * `start()` connects every channel (after the HTTP server listens); once each has connected or
 * failed its first attempt, messages left pending by the last run are processed (inbox on) and
 * missed messages are caught up (historyFetch on). Processed ledger entries older than
 * `inbox.retentionDays` are purged at start and every 6 hours.
 */
export interface ChannelRuntimeDeps {
  dir: string;
  assistant: Assistant;
  config: ConfigSource;
  store: InboxLedger & GroupStateStore & KnownChatStore & AccessStore & ReplyOutboxStore & Pick<ActivityStore, 'recordActivity'>;
  log: Logger;
  /** Connect deadline per attempt (default 30 s). */
  connectTimeoutMs?: number;
  /** Restart delays after failures, last one repeated (default 5 s … 5 min). */
  backoffMs?: readonly number[];
  /** Waits before a refused reply is sent again, by attempt (default 5 s … 10 min); a platform's retry_after wins. */
  replyRetryMs?: readonly number[];
  /** Where messages in and out are counted, per channel. */
  metrics?: Pick<LiveMetrics, 'channelMessage'>;
}

export interface ChannelRuntime {
  /** What the HTTP server uses: statuses, listing, proactive send. */
  hub: ChannelHub;
  /** The hub as scheduled tasks deliver through it: an answer the platform refuses waits in the reply outbox. */
  deliveries: ChannelHub;
  bridge: Bridge;
  /** History catch-up (historyFetch); `catchUp()` runs one pass now. */
  history: { catchUp(): Promise<number> };
  start(): void;
  /** Resolves once every channel has connected or failed its first attempt. */
  settled(): Promise<void>;
  /** Resolves when every accepted message has been processed. */
  idle(): Promise<void>;
  /** Disconnect; with `standby`, the channels report why they are not connected here (another gateway runs them). */
  stop(opts?: { standby?: string }): Promise<void>;
}

const DAY = 86_400_000;
const PURGE_EVERY_MS = 6 * 3_600_000;

export function createChannelRuntime(deps: ChannelRuntimeDeps): ChannelRuntime {
  const { config, store, log } = deps;
  const adapters = createRunningAdapters();
  const sent = countingSends(createSentLedger(), deps.metrics);
  // Each run (process) claims inbox entries under its own id; recovery takes over only other runs' entries.
  const access = createAccessGate({ config, store, assistant: deps.assistant, log });
  const runId = randomUUID();
  const outbox = createReplyOutbox({ store, adapters, sent, config, log, runId, ...(deps.replyRetryMs ? { backoffMs: deps.replyRetryMs } : {}) });
  const bridge = createBridge({
    assistant: deps.assistant,
    config,
    store,
    log,
    adapters,
    sent,
    runId,
    access,
    outbox,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
  const hub = createChannelHub({
    dir: deps.dir,
    config,
    log,
    onMessage: (msg) => bridge.accept(msg),
    adapters,
    sent,
    ...(deps.connectTimeoutMs ? { connectTimeoutMs: deps.connectTimeoutMs } : {}),
    ...(deps.backoffMs ? { backoffMs: deps.backoffMs } : {}),
  });
  const history = createHistoryFetcher({ config, store, log, adapters, accept: (msg) => bridge.accept(msg) });
  let purgeTimer: NodeJS.Timeout | undefined;
  /** Counts starts and stops: the runtime starts again when its gateway becomes leader again. */
  let runs = 0;

  const purge = () => {
    const days = config.current().config.inbox.retentionDays;
    void store
      .purgeMessages(Date.now() - days * DAY)
      .then((n) => {
        if (n > 0) log.info(`inbox: purged ${n} processed message(s) older than ${days} days`);
      })
      .catch((err: unknown) => log.error(`inbox: cannot purge: ${errorMessage(err)}`));
  };

  return {
    hub,
    deliveries: { statuses: () => hub.statuses(), list: () => hub.list(), send: (channel, chatId, text) => outbox.send(channel, chatId, text) },
    bridge,
    history,
    start() {
      const run = ++runs;
      purge();
      clearInterval(purgeTimer);
      purgeTimer = setInterval(purge, PURGE_EVERY_MS);
      purgeTimer.unref();
      hub.start();
      void hub
        .settled()
        .then(async () => {
          if (run !== runs) return; // stopped (a leader that stepped down) before its channels settled
          if (config.current().config.inbox.enabled) await bridge.recover();
          // What waits in the outbox goes out once the channels are up (their adapters send it).
          outbox.start();
          history.start();
        })
        .catch((err: unknown) => log.error(`after connecting: ${errorMessage(err)}`));
    },
    settled: () => hub.settled(),
    idle: () => bridge.idle(),
    async stop(opts = {}) {
      runs++;
      clearInterval(purgeTimer);
      await history.stop();
      await outbox.stop();
      await hub.stop(opts);
    },
  };
}

// --- internal ---

/**
 * Every message this process sends is noted in the ledger (replies, files, approval prompts,
 * proactive sends): each is counted there. A reply the reply outbox kept is noted once, by the
 * outbox when it delivers it (answer-message.ts does not note it when it is kept).
 */
function countingSends(ledger: SentLedger, metrics: Pick<LiveMetrics, 'channelMessage'> | undefined): SentLedger {
  if (!metrics) return ledger;
  return {
    note(channel, messageId) {
      // Once per message: a reply that grows is noted when posted and again with its final text.
      if (messageId === undefined || !ledger.has(channel, messageId)) metrics.channelMessage(channel, 'out');
      ledger.note(channel, messageId);
    },
    has: (channel, messageId) => ledger.has(channel, messageId),
  };
}
