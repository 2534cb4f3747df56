import type { Assistant } from '../core/assistant/assistant.js';
import type { ConfigSource } from '../core/config/source.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { LiveMetrics } from '../core/metrics/live-metrics.js';
import type { GroupStateStore, InboxLedger, KnownChatStore } from '../core/store/types.js';
import type { AccessGate } from './access/gate.js';
import { type AnswerDeps, answerMessage, answerStranger } from './answer-message.js';
import { conversationKeyOf, sessionKeyOf } from './group.js';
import type { ReplyOutbox } from './reply-outbox.js';
import type { RunningAdapters } from './running-adapters.js';
import type { SentLedger } from './sent-ledger.js';
import type { InboundMessage } from './types.js';

/**
 * Incoming channel messages → the chat core → replies. `accept` is what adapters call: it is
 * fast (a ledger write) so the platform is acknowledged at once, and a redelivered message id is
 * dropped there. Processing runs later, in order per chat and concurrently across chats; how one
 * message is answered is answer-message.ts.
 */
export interface BridgeDeps {
  assistant: Assistant;
  config: ConfigSource;
  store: InboxLedger & GroupStateStore & KnownChatStore;
  log: Logger;
  /** Where replies go: each through the adapter running when it is sent (it may have restarted since the message arrived). */
  adapters: RunningAdapters;
  /** Messages this process sent: their echoes are not answered; replies are noted in it. */
  sent: SentLedger;
  /** This run's identity in the inbox ledger: messages it claims are its own; recovery takes over only earlier runs' messages. */
  runId: string;
  /** Who may use the assistant (pairing, allowlists, admins) and how often (rate limit). */
  access: AccessGate;
  /** Where a reply the platform refuses waits to be sent again (reply-outbox.ts). */
  outbox?: ReplyOutbox;
  /** Messages in (each platform message taken in once) and replies updated in place are counted here. */
  metrics?: Pick<LiveMetrics, 'channelMessage'>;
  now?: () => number;
}

export interface Bridge {
  accept(msg: InboundMessage): Promise<void>;
  /**
   * Process inbox entries an earlier run left pending (a crash or kill; inbox on). Each is taken
   * over in the store first, so one that the live path already holds (the platform redelivered
   * it) or another recovery took is skipped: every message id is processed once.
   */
  recover(): Promise<number>;
  /** Resolves when every accepted message has been processed. */
  idle(): Promise<void>;
}

export function createBridge(deps: BridgeDeps): Bridge {
  const lanes = new Map<string, Promise<void>>();
  const log = deps.log.child('bridge');
  const answering: AnswerDeps = { ...deps, log, now: deps.now ?? Date.now };

  /** Per chat, one message at a time, in arrival order. */
  const enqueue = (key: string, job: () => Promise<void>) => {
    const next = (lanes.get(key) ?? Promise.resolve()).then(job, job);
    lanes.set(key, next);
    void next.finally(() => {
      if (lanes.get(key) === next) lanes.delete(key);
    });
  };
  const process = (msg: InboundMessage, key: string) => answerMessage(answering, msg, key);

  /** A stranger's message is answered (a pairing code) and nothing of it kept; one approved meanwhile is taken in like any message. */
  async function processStranger(msg: InboundMessage, key: string): Promise<void> {
    try {
      if ((await answerStranger(answering, msg)) && (await intake(msg, key))) await process(msg, key);
    } catch (err) {
      log.error(`${msg.channel} ${msg.messageId}: ${errorMessage(err)}`);
    }
  }

  return {
    async accept(msg) {
      if (deps.sent.has(msg.channel, msg.messageId)) return; // our own message coming back
      const key = sessionKeyOf(msg);
      // Intake is ordered per chat like processing: the lane is taken before the first await, so
      // two messages of one chat are processed in arrival order however their store writes finish.
      // Strangers are screened first: over their limits nothing at all is written.
      const taken = deps.access.screen(msg).then((how) => (how === 'known' ? intake(msg, key).then((fresh) => (fresh ? how : 'drop')) : how));
      // /stop, /allow and /deny must reach the turn running on this key, not wait behind it.
      enqueue(deps.assistant.runsAtOnce(msg.text) ? `${key} (at once)` : key, async () => {
        const how = await taken;
        if (how === 'known') await process(msg, key);
        else if (how === 'stranger') await processStranger(msg, key);
      });
      await taken;
    },
    async recover() {
      let taken = 0;
      for (const entry of await deps.store.pendingMessages()) {
        if (!entry.payload || entry.owner === deps.runId) continue;
        if (!(await deps.store.takeOverMessage(entry.channel, entry.messageId, deps.runId))) continue;
        const msg = parsePayload(entry.payload);
        if (!msg) {
          log.error(`${entry.channel} ${entry.messageId}: the stored message is damaged; it is dropped`);
          await deps.store.markMessageDone(entry.channel, entry.messageId);
          continue;
        }
        taken++;
        enqueue(entry.chatKey, () => process(msg, entry.chatKey));
      }
      if (taken > 0) log.info(`processing ${taken} message(s) left pending by the last run`);
      return taken;
    },
    async idle() {
      while (lanes.size > 0) await Promise.allSettled([...lanes.values()]);
    },
  };

  /** The ledger write that acknowledges a message: false for a redelivery (nothing else is written then). */
  async function intake(msg: InboundMessage, key: string): Promise<boolean> {
    const cfg = deps.config.current().config;
    const fresh = await deps.store.claimMessage({
      channel: msg.channel,
      messageId: msg.messageId,
      chatKey: key,
      receivedAt: answering.now(),
      owner: deps.runId,
      ...(cfg.inbox.enabled ? { payload: JSON.stringify(msg) } : {}),
    });
    if (!fresh) {
      log.debug(`${msg.channel} ${msg.messageId}: duplicate delivery ignored`, { channel: msg.channel, messageId: msg.messageId });
      return false;
    }
    deps.metrics?.channelMessage(msg.channel, 'in');
    // Chats seen live are the ones history catch-up reads back.
    await deps.store.noteChat({ channel: msg.channel, chatId: msg.chatId, chatType: msg.chatType, lastSeen: msg.ts });
    if (msg.chatType === 'group') {
      await deps.store.appendGroupMessage({
        chatKey: conversationKeyOf(msg),
        messageId: msg.messageId,
        ts: msg.ts,
        sender: msg.senderName ?? msg.senderId,
        text: msg.text,
        fromBot: Boolean(msg.fromBot),
      });
    }
    return true;
  }
}

function parsePayload(payload: string): InboundMessage | undefined {
  try {
    const msg = JSON.parse(payload) as InboundMessage | null;
    return msg && typeof msg === 'object' && typeof msg.channel === 'string' && typeof msg.messageId === 'string' ? msg : undefined;
  } catch {
    return undefined;
  }
}
