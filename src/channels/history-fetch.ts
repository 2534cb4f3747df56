import type { ConfigSource } from '../core/config/source.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { KnownChatStore } from '../core/store/types.js';
import type { RunningAdapters } from './running-adapters.js';
import type { InboundMessage } from './types.js';

/**
 * History catch-up (`historyFetch.enabled`): messages that arrived while the gateway was down or
 * disconnected are read back from the platforms that have a history API and go through the
 * bridge like live ones, so the once-per-message-id rule and the group policy hold. Only chats
 * this assistant has seen are caught up (the platform gives no list of chats a bot was silent
 * in). A chat's first fetch reaches back `initialLookbackMinutes`; later ones start where the
 * last one ended (with a minute of overlap), every `pollIntervalMinutes`.
 */
export interface HistoryFetcherDeps {
  config: ConfigSource;
  store: KnownChatStore;
  /** Where caught-up messages go: the bridge's `accept`, exactly like live ones. */
  accept(message: InboundMessage): Promise<void>;
  log: Logger;
  adapters: RunningAdapters;
  now?: () => number;
}

const OVERLAP_MS = 60_000;
const PER_CHAT = 200;

export function createHistoryFetcher(deps: HistoryFetcherDeps) {
  const now = deps.now ?? Date.now;
  const log = deps.log.child('history');
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const catchUp = async (): Promise<number> => {
    const cfg = deps.config.current().config.historyFetch;
    let fed = 0;
    for (const adapter of deps.adapters.all()) {
      if (!adapter.readHistory) continue;
      for (const chat of await deps.store.knownChats(adapter.name)) {
        const until = now();
        const since = chat.fetchedUntil !== undefined ? chat.fetchedUntil - OVERLAP_MS : until - cfg.initialLookbackMinutes * 60_000;
        try {
          const messages = await adapter.readHistory(chat.chatId, { since: new Date(since), limit: PER_CHAT });
          for (const m of messages) {
            if (m.fromBot && m.chatType === 'direct') continue;
            await deps.accept(m);
            fed++;
          }
          await deps.store.setChatFetched(adapter.name, chat.chatId, until);
        } catch (err) {
          log.warn(`${adapter.name} ${chat.chatId}: cannot read history: ${errorMessage(err)}`);
        }
      }
    }
    return fed;
  };

  return {
    /** One catch-up now (at start, once the channels are up), then every pollIntervalMinutes. */
    start() {
      const cfg = deps.config.current().config.historyFetch;
      if (!cfg.enabled) return;
      const tick = () => {
        running ??= catchUp()
          .then((n) => {
            if (n > 0) log.info(`caught up on ${n} message(s)`);
          })
          .catch((err: unknown) => log.error(errorMessage(err)))
          .finally(() => (running = undefined));
      };
      tick();
      timer = setInterval(tick, cfg.pollIntervalMinutes * 60_000);
      timer.unref();
    },
    catchUp,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
