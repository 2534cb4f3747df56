import type { Assistant } from '../core/assistant/assistant.js';
import { isSlashCommand } from '../core/assistant/slash-commands.js';
import type { ConfigSource } from '../core/config/source.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { GroupStateStore, InboxLedger, KnownChatStore } from '../core/store/types.js';
import type { AccessGate } from './access/gate.js';
import { downloadFiles, downloadImages } from './attachments.js';
import { deliverTurn } from './delivery.js';
import { guardReplies } from './outbox-guard.js';
import type { ReplyOutbox } from './reply-outbox.js';
import { contextBefore, conversationKeyOf, decide, groupPrompt, sessionKeyOf } from './group.js';
import { splitMessage } from './split.js';
import type { RunningAdapters } from './running-adapters.js';
import type { SentLedger } from './sent-ledger.js';
import type { ChannelAdapter, InboundMessage } from './types.js';

/**
 * Incoming channel messages → the chat core → replies. `accept` is what adapters call: it is
 * fast (a ledger write) so the platform is acknowledged at once, and a redelivered message id is
 * dropped there. Processing runs later, in order per chat and concurrently across chats.
 */
export interface BridgeDeps {
  assistant: Assistant;
  config: ConfigSource;
  store: InboxLedger & GroupStateStore & KnownChatStore;
  log: Logger;
  /** Where replies go: the adapter running when the turn ends (it may have restarted since the message arrived). */
  adapters: RunningAdapters;
  /** Messages this process sent: their echoes are not answered; replies are noted in it. */
  sent: SentLedger;
  /** This run's identity in the inbox ledger: messages it claims are its own; recovery takes over only earlier runs' messages. */
  runId: string;
  /** Who may use the assistant (pairing, allowlists, admins) and how often (rate limit). */
  access: AccessGate;
  /** Where a reply the platform refuses waits to be sent again (reply-outbox.ts). */
  outbox?: ReplyOutbox;
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

/** How long a message waits for its channel's adapter to (re)connect before it is left pending. */
const ADAPTER_WAIT_MS = 120_000;

export function createBridge(deps: BridgeDeps): Bridge {
  const now = deps.now ?? Date.now;
  const lanes = new Map<string, Promise<void>>();
  const log = deps.log.child('bridge');

  /** Per chat, one message at a time, in arrival order. */
  const enqueue = (key: string, job: () => Promise<void>) => {
    const next = (lanes.get(key) ?? Promise.resolve()).then(job, job);
    lanes.set(key, next);
    void next.finally(() => {
      if (lanes.get(key) === next) lanes.delete(key);
    });
  };

  async function process(msg: InboundMessage, key: string): Promise<void> {
    const cfg = deps.config.current().config;
    const chat = conversationKeyOf(msg);
    try {
      // A platform may deliver while its adapter is still connecting (or reconnecting): wait for it.
      const running = await deps.adapters.whenRunning(msg.channel, ADAPTER_WAIT_MS);
      if (!running) {
        log.warn(`${msg.channel} is not running; message ${msg.messageId} stays pending`);
        return;
      }
      const adapter = deps.outbox ? guardReplies(running, key, deps.outbox) : running;
      const onSent = async (s: { messageId: string } | undefined, text: string) => {
        deps.sent.note(msg.channel, s?.messageId);
        if (msg.chatType === 'group')
          await deps.store.appendGroupMessage({ chatKey: chat, ts: now(), sender: cfg.persona?.displayName ?? cfg.name, text, fromBot: true });
      };
      const say = sayIn(adapter, msg, onSent);
      // Access first (an unpaired group hears only a pairing reply, and only when it mentions the
      // bot), then group policy, then the rate limit on what the bot is about to answer.
      const access = await deps.access.admit(msg, say);
      if (!access.admitted) {
        await deps.store.markMessageDone(msg.channel, msg.messageId);
        return;
      }
      if (msg.chatType === 'group' && !msg.fromBot) await deps.store.setGroupBotTurns(chat, 0);
      const botTurns = await deps.store.groupBotTurns(chat);
      const decision = decide(msg, cfg.groupChat, botTurns);
      if (!decision.respond || !(await deps.access.throttle(msg, say))) {
        if (!decision.respond) log.debug(`${msg.channel} ${msg.messageId}: not answering (${decision.why})`);
        await deps.store.markMessageDone(msg.channel, msg.messageId);
        return;
      }

      const sender = msg.senderName ?? msg.senderId;
      if (isSlashCommand(msg.text)) {
        // Commands that change the configuration (/engine, /model <name>, /cron run…, /approve) only for admins.
        // The chat's key: /reset, /stop… act on its current named session, /new, /switch… on its sessions.
        const result = await deps.assistant.runCommand(msg.text, {
          chatKey: key,
          allowConfigChanges: access.admin,
          source: msg.channel,
          sender,
          caller: `${msg.channel}:${msg.senderId}`,
          chat: { channel: msg.channel, chatId: msg.chatId },
        });
        await say(result.text);
        await deps.store.markMessageDone(msg.channel, msg.messageId);
        return;
      }

      const prompt =
        msg.chatType === 'group'
          ? groupPrompt(
              msg,
              contextBefore(await deps.store.recentGroupMessages(chat, cfg.groupChat.historyLimit + 50), msg, cfg.groupChat.historyLimit),
              cfg.groupChat.groupPolicy,
            )
          : msg.text;
      const images = await downloadImages(adapter, msg, log);
      // Documents go into the workspace for the turn; one that cannot be taken is named to the sender.
      const { files, notices } = await downloadFiles(adapter, msg, log);
      if (notices.length > 0) await say(notices.join('\n'));
      if (msg.text.trim() === '' && images.length === 0 && files.length === 0 && msg.files?.length) {
        await deps.store.markMessageDone(msg.channel, msg.messageId);
        return;
      }
      const caller = `${msg.channel}:${msg.senderId}`;
      const delivered = await deliverTurn(
        adapter,
        msg.replyTarget,
        deps.assistant.chat(prompt, {
          chatKey: key,
          images,
          ...(files.length ? { files } : {}),
          source: msg.channel,
          sender,
          caller,
          admin: access.admin,
          messageText: msg.text,
          waitForCapacity: true,
        }),
        {
          mode: cfg.streaming.mode,
          showToolCalls: cfg.streaming.showToolCalls,
          log,
          onSent,
          approval: { timeoutSeconds: cfg.approvalTimeoutSeconds, ...(msg.chatType === 'group' ? { requester: sender } : {}) },
        },
      );
      // Counted in one statement: two senders' lanes of one group may end their turns together.
      if (msg.chatType === 'group' && delivered.text !== '' && delivered.completion?.status !== 'silent') await deps.store.addGroupBotTurn(chat);
      await deps.store.markMessageDone(msg.channel, msg.messageId);
    } catch (err) {
      // The reply could not be delivered and could not be kept (a refusal no retry cures; a
      // refusal a retry can cure waits in the reply outbox instead). The message is marked done
      // anyway: retrying a whole turn would answer twice if the first reply landed.
      log.error(`${msg.channel} ${msg.messageId}: ${errorMessage(err)}`);
      await deps.store.markMessageDone(msg.channel, msg.messageId).catch((e: unknown) => log.error(`cannot mark ${msg.messageId} done: ${errorMessage(e)}`));
    }
  }

  /**
   * A stranger's message (screened as such before anything was written): answered by the access
   * gate (a pairing code once per code), and nothing of it kept: no ledger entry, no known chat,
   * no group context. One approved meanwhile is taken in like any message.
   */
  async function answerStranger(msg: InboundMessage, key: string): Promise<void> {
    try {
      const adapter = await deps.adapters.whenRunning(msg.channel, ADAPTER_WAIT_MS);
      if (!adapter) {
        log.warn(`${msg.channel} is not running; a stranger's message ${msg.messageId} is dropped`);
        return;
      }
      const access = await deps.access.admit(
        msg,
        sayIn(adapter, msg, async (s) => deps.sent.note(msg.channel, s?.messageId)),
      );
      if (access.admitted && (await intake(msg, key))) await process(msg, key);
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
        else if (how === 'stranger') await answerStranger(msg, key);
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
      receivedAt: now(),
      owner: deps.runId,
      ...(cfg.inbox.enabled ? { payload: JSON.stringify(msg) } : {}),
    });
    if (!fresh) {
      log.debug(`${msg.channel} ${msg.messageId}: duplicate delivery ignored`);
      return false;
    }
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

/** Answer in the message's chat: split under the platform's limit after rendering, each part noted by `onSent`. */
function sayIn(
  adapter: Pick<ChannelAdapter, 'limit' | 'render' | 'reply'>,
  msg: InboundMessage,
  onSent: (sent: { messageId: string } | undefined, text: string) => Promise<void>,
): (text: string) => Promise<void> {
  return async (text) => {
    for (const part of splitMessage(text, adapter.limit, (md) => adapter.render(md))) await onSent(await adapter.reply(msg.replyTarget, part), part);
  };
}

function parsePayload(payload: string): InboundMessage | undefined {
  try {
    const msg = JSON.parse(payload) as InboundMessage | null;
    return msg && typeof msg === 'object' && typeof msg.channel === 'string' && typeof msg.messageId === 'string' ? msg : undefined;
  } catch {
    return undefined;
  }
}
