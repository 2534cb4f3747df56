import type { Assistant } from '../core/assistant/assistant.js';
import { isSlashCommand } from '../core/commands/command-table.js';
import type { ServiceConfig } from '../core/config/schema.js';
import { maskSecretValues } from '../core/config/secrets.js';
import type { ConfigSource } from '../core/config/source.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { GroupStateStore, InboxLedger } from '../core/store/types.js';
import type { AccessGate } from './access/gate.js';
import { downloadFiles, downloadImages } from './attachments.js';
import { deliverTurn } from './delivery.js';
import { contextBefore, conversationKeyOf, decide, groupPrompt } from './group.js';
import { guardReplies } from './outbox-guard.js';
import { createReplyAdapter, type ReplyAdapter } from './reply-adapter.js';
import { conversationOf, type ReplyOutbox } from './reply-outbox.js';
import type { RunningAdapters } from './running-adapters.js';
import type { SentLedger } from './sent-ledger.js';
import { splitMessage } from './split.js';
import type { ChannelAdapter, InboundMessage } from './types.js';
import { transcribeVoiceNotes } from './voice/voice-notes.js';

/**
 * One message taken in, answered (the bridge calls this on the message's chat lane): the access
 * gate first (an unpaired group hears only a pairing reply, and only when it mentions the bot),
 * then group policy, then the rate limit on what the bot is about to answer; then a slash
 * command from the command table, or a turn whose stream is delivered to the chat. Whatever
 * happens, the message ends marked done in the inbox ledger.
 *
 * Every reply (a command's answer, a turn's reply, its files, an approval prompt) goes through
 * the adapter running when it is sent (reply-adapter.ts), not the one running when the message
 * was taken up: the channel may have restarted meanwhile. With a reply outbox, a reply the
 * platform refuses for a reason a retry cures waits there and is sent again (outbox-guard.ts).
 */
export interface AnswerDeps {
  assistant: Assistant;
  config: ConfigSource;
  store: InboxLedger & GroupStateStore;
  log: Logger;
  adapters: RunningAdapters;
  sent: SentLedger;
  access: AccessGate;
  /** Where a reply the platform refuses waits to be sent again (reply-outbox.ts). */
  outbox?: ReplyOutbox;
  now: () => number;
}

/** How long a message (or a reply) waits for its channel's adapter to (re)connect. */
export const ADAPTER_WAIT_MS = 120_000;

export async function answerMessage(deps: AnswerDeps, msg: InboundMessage, key: string): Promise<void> {
  const { log } = deps;
  try {
    // A platform may deliver while its adapter is still connecting (or reconnecting): wait for it.
    const first = await deps.adapters.whenRunning(msg.channel, ADAPTER_WAIT_MS);
    if (!first) {
      log.warn(`${msg.channel} is not running; message ${msg.messageId} stays pending`, { channel: msg.channel, messageId: msg.messageId });
      return;
    }
    const late = createReplyAdapter(deps.adapters, first, ADAPTER_WAIT_MS);
    const out = deps.outbox ? guardReplies(late, key, deps.outbox, log) : late;
    const cfg = deps.config.current().config;
    const to = msg.replyTarget;
    const onSent = async (s: { messageId: string } | undefined, text: string) => {
      // A reply the outbox kept (no id; its conversation waits) is noted, and counted out, when
      // the outbox delivers it. While a conversation waits, every reply to it is kept.
      if (s || !deps.outbox?.holds(conversationOf(msg.channel, to.chatId, to.threadId))) deps.sent.note(msg.channel, s?.messageId);
      if (msg.chatType === 'group')
        await deps.store.appendGroupMessage({
          chatKey: conversationKeyOf(msg),
          ts: deps.now(),
          sender: cfg.persona?.displayName ?? cfg.name,
          text,
          fromBot: true,
        });
    };
    const say = sayIn(out, msg, onSent);
    const admitted = await admitToAnswer(deps, msg, cfg, say);
    if (admitted) {
      if (isSlashCommand(msg.text)) await answerCommand(deps, msg, key, admitted.admin, say);
      else await answerWithTurn(deps, { msg, key, admin: admitted.admin, cfg, inbound: first, out, say, onSent });
    }
    await deps.store.markMessageDone(msg.channel, msg.messageId);
  } catch (err) {
    // The reply could not be delivered and could not be kept (a refusal no retry cures; one a
    // retry can cure waits in the reply outbox instead). The message is marked done anyway:
    // retrying a whole turn would answer twice if the first reply landed.
    log.error(`${msg.channel} ${msg.messageId}: ${errorMessage(err)}`, { channel: msg.channel, messageId: msg.messageId, session: key });
    await deps.store.markMessageDone(msg.channel, msg.messageId).catch((e: unknown) => log.error(`cannot mark ${msg.messageId} done: ${errorMessage(e)}`));
  }
}

/**
 * A stranger's message (screened as such before anything was written): answered by the access
 * gate with a pairing code, once per code. True when the stranger was approved meanwhile (the
 * message is then taken in like any other).
 */
export async function answerStranger(deps: AnswerDeps, msg: InboundMessage): Promise<boolean> {
  const first = await deps.adapters.whenRunning(msg.channel, ADAPTER_WAIT_MS);
  if (!first) {
    deps.log.warn(`${msg.channel} is not running; a stranger's message ${msg.messageId} is dropped`);
    return false;
  }
  const say = sayIn(createReplyAdapter(deps.adapters, first, ADAPTER_WAIT_MS), msg, async (s) => deps.sent.note(msg.channel, s?.messageId));
  return (await deps.access.admit(msg, say)).admitted;
}

// --- internal ---

/** Access, group policy, rate limit: whether to answer at all, and whether the sender is an admin. */
async function admitToAnswer(
  deps: AnswerDeps,
  msg: InboundMessage,
  cfg: ServiceConfig,
  say: (text: string) => Promise<void>,
): Promise<{ admin: boolean } | undefined> {
  const access = await deps.access.admit(msg, say);
  if (!access.admitted) return undefined;
  const chat = conversationKeyOf(msg);
  if (msg.chatType === 'group' && !msg.fromBot) await deps.store.setGroupBotTurns(chat, 0);
  const decision = decide(msg, cfg.groupChat, await deps.store.groupBotTurns(chat));
  if (!decision.respond) {
    deps.log.debug(`${msg.channel} ${msg.messageId}: not answering (${decision.why})`);
    return undefined;
  }
  return (await deps.access.throttle(msg, say)) ? { admin: access.admin } : undefined;
}

/**
 * Commands that change the configuration (/engine, /model <name>, /cron run…, /approve) only for
 * admins. The chat's key: /reset, /stop… act on its current named session, /new, /switch… on its sessions.
 */
async function answerCommand(deps: AnswerDeps, msg: InboundMessage, key: string, admin: boolean, say: (text: string) => Promise<void>): Promise<void> {
  const result = await deps.assistant.runCommand(msg.text, {
    chatKey: key,
    allowConfigChanges: admin,
    source: msg.channel,
    sender: msg.senderName ?? msg.senderId,
    caller: `${msg.channel}:${msg.senderId}`,
    chat: { channel: msg.channel, chatId: msg.chatId },
  });
  await say(result.text);
}

interface TurnContext {
  msg: InboundMessage;
  key: string;
  admin: boolean;
  cfg: ServiceConfig;
  /** The adapter the message's attachments are downloaded through. */
  inbound: ChannelAdapter;
  /** Where the reply goes: the adapter running at each send. */
  out: ReplyAdapter;
  say: (text: string) => Promise<void>;
  onSent: (sent: { messageId: string } | undefined, text: string) => Promise<void>;
}

/** The prompt (with group context), the attachments, the turn, and its stream delivered to the chat. */
async function answerWithTurn(deps: AnswerDeps, turn: TurnContext): Promise<void> {
  const { msg, cfg } = turn;
  const chat = conversationKeyOf(msg);
  const history = cfg.groupChat.historyLimit;
  const images = await downloadImages(turn.inbound, msg, deps.log);
  // Documents go into the workspace for the turn; one that cannot be taken is named to the sender.
  const { files, notices, sources } = await downloadFiles(turn.inbound, msg, deps.log);
  // Voice notes are also read out to the engine as text (`transcription`, or the platform's own transcript).
  const voice = await transcribeVoiceNotes(msg.text, files, sources, cfg.transcription, deps.log, msg.files ?? []);
  const text = voice ? voice.text : msg.text;
  if (notices.length + (voice?.notices.length ?? 0) > 0) await turn.say([...notices, ...(voice?.notices ?? [])].join('\n'));
  if (text.trim() === '' && images.length === 0 && files.length === 0 && msg.files?.length) return;
  const heard = { ...msg, text };
  const prompt =
    msg.chatType === 'group'
      ? groupPrompt(heard, contextBefore(await deps.store.recentGroupMessages(chat, history + 50), heard, history), cfg.groupChat.groupPolicy)
      : text;
  const sender = msg.senderName ?? msg.senderId;
  const events = deps.assistant.chat(prompt, {
    chatKey: turn.key,
    images,
    ...(files.length ? { files } : {}),
    source: msg.channel,
    sender,
    caller: `${msg.channel}:${msg.senderId}`,
    admin: turn.admin,
    messageText: text,
    waitForCapacity: true,
  });
  const delivered = await deliverTurn(turn.out, msg.replyTarget, events, {
    mode: cfg.streaming.mode,
    showToolCalls: cfg.streaming.showToolCalls,
    progressAfterSeconds: cfg.streaming.progressAfterSeconds,
    ...(voice?.preface ? { preface: voice.preface } : {}),
    mask: (t) => maskSecretValues(t, deps.config.current().secretValues),
    log: deps.log,
    onSent: turn.onSent,
    onPosted: (s) => deps.sent.note(msg.channel, s?.messageId),
    approval: { timeoutSeconds: cfg.approvalTimeoutSeconds, ...(msg.chatType === 'group' ? { requester: sender } : {}) },
  });
  // Counted in one statement: two senders' lanes of one group may end their turns together.
  if (msg.chatType === 'group' && delivered.text !== '' && delivered.completion?.status !== 'silent') await deps.store.addGroupBotTurn(chat);
}

/** Answer in the message's chat: split under the platform's limit after rendering, each part noted by `onSent`. */
function sayIn(
  adapter: Pick<ReplyAdapter, 'limit' | 'render' | 'reply'>,
  msg: InboundMessage,
  onSent: (sent: { messageId: string } | undefined, text: string) => Promise<void>,
): (text: string) => Promise<void> {
  return async (text) => {
    for (const part of splitMessage(text, adapter.limit, (md) => adapter.render(md))) await onSent(await adapter.reply(msg.replyTarget, part), part);
  };
}
