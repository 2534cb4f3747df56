import { generatePairingCode, MAX_PENDING_PER_CHANNEL, MAX_PENDING_PER_REQUESTER, PAIRING_TTL_MS } from '../../core/access/pairing-code.js';
import type { Assistant } from '../../core/assistant/assistant.js';
import type { ConfigSource } from '../../core/config/source.js';
import type { Logger } from '../../core/logger.js';
import type { AccessKind, AccessStore, OpenPairingResult, RefusalReason } from '../../core/store/types.js';
import { sessionKeyOf } from '../group.js';
import type { InboundMessage } from '../types.js';
import { type AccessVerdict, decideAccess } from './policy.js';
import { createRateLimiter } from './rate-limit.js';
import { createStrangerLimits } from './strangers.js';

/**
 * Access control on the channel path, in three steps: `screen` (before anything of a message is
 * written: a stranger's message, over the strangers' limits, is dropped there), `admit` (who may
 * use the assistant at all; strangers get a pairing code, once per code) and `throttle` (the
 * per-sender rate limit, once the bridge has decided to answer, so chatter the bot ignores never
 * counts against anyone). Approvals are read from the store per message: one made by
 * `service access approve` in another process applies to the very next message. Every refusal
 * told to someone is an activity record with its reason (strangers' records are kept apart, see
 * STRANGER_ACTIVITY_KEPT).
 */
export interface AccessGate {
  /**
   * Before the message is taken in: `known` (allowed, approved or an open channel: taken in as
   * usual), `stranger` (to be answered by `admit`; nothing of it is kept), `drop` (not addressed
   * to the bot, or over the strangers' limits: nothing is written at all).
   */
  screen(msg: InboundMessage): Promise<'known' | 'stranger' | 'drop'>;
  /** `say` answers in the message's chat (split, rendered, noted as sent). */
  admit(msg: InboundMessage, say: (text: string) => Promise<void>): Promise<GateAdmission>;
  /** True when the message may go on; false after a refusal (told once per stretch of refusals). */
  throttle(msg: InboundMessage, say: (text: string) => Promise<void>): Promise<boolean>;
}

/** `admin`: the sender may run the slash commands that change the configuration. */
export type GateAdmission = { admitted: true; admin: boolean } | { admitted: false };

export interface AccessGateDeps {
  config: ConfigSource;
  store: AccessStore;
  assistant: Pick<Assistant, 'recordRefusal'>;
  log: Logger;
  now?: () => number;
  /** For pairing codes: an integer in [0, n). */
  random?: (n: number) => number;
}

export function createAccessGate(deps: AccessGateDeps): AccessGate {
  const now = deps.now ?? Date.now;
  const log = deps.log.child('access');
  const limiter = createRateLimiter(now);
  const strangers = createStrangerLimits(now);

  const refuse = (msg: InboundMessage, reason: RefusalReason, detail: string, reply: string) =>
    deps.assistant.recordRefusal({
      source: msg.channel,
      sender: msg.senderName ?? msg.senderId,
      sessionKey: sessionKeyOf(msg),
      message: msg.text,
      reason,
      detail,
      reply,
    });

  const verdictOf = async (msg: InboundMessage): Promise<AccessVerdict> => {
    // The policy is pure: the grants it may ask about are read first.
    const [sender, chat] = await Promise.all([
      deps.store.isGranted(msg.channel, 'sender', msg.senderId),
      msg.chatType === 'group' ? deps.store.isGranted(msg.channel, 'chat', msg.chatId) : false,
    ]);
    return decideAccess(msg, deps.config.current().config.access, (kind) => (kind === 'sender' ? sender : chat));
  };

  const openPairing = async (msg: InboundMessage, kind: AccessKind, id: string): Promise<Exclude<OpenPairingResult, { status: 'collision' }>> => {
    const label = kind === 'sender' ? msg.senderName : `asked by ${msg.senderName ?? msg.senderId}`;
    const request = { channel: msg.channel, kind, id, requester: msg.senderId, ...(label ? { label } : {}), createdAt: now() };
    for (;;) {
      const result = await deps.store.openPairing(request, {
        code: generatePairingCode(deps.random),
        ttlMs: PAIRING_TTL_MS,
        maxPending: MAX_PENDING_PER_CHANNEL,
        maxPerRequester: MAX_PENDING_PER_REQUESTER,
      });
      if (result.status !== 'collision') return result;
    }
  };

  /** A stranger's pairing request: the code once (a repeat while it lives gets nothing), "no room" once per while. */
  const pair = async (msg: InboundMessage, kind: AccessKind, id: string, say: (text: string) => Promise<void>) => {
    const who = whoOf(msg);
    const result = await openPairing(msg, kind, id);
    if (result.status === 'existing') {
      log.debug(`${msg.channel} ${msg.messageId}: ${who} is not paired; code ${result.request.code} was sent already`);
      return;
    }
    if (result.status === 'created') {
      const { code } = result.request;
      log.info(`${msg.channel} ${msg.messageId}: ${who} is not paired; new pairing code ${code}`);
      const reply = formatPairingReply(kind, code);
      await refuse(msg, 'not_paired', `${who} is not paired; pairing code ${code} sent`, reply);
      await say(reply);
      return;
    }
    const [what, detail, reply] =
      result.status === 'full'
        ? ['full', `${MAX_PENDING_PER_CHANNEL} pairing codes are already waiting on ${msg.channel}`, formatPairingFull()]
        : ['requester_full', `${msg.channel}:${msg.senderId} already has a pairing code waiting`, formatRequesterFull()];
    if (!strangers.tellOnce(msg.channel, result.status === 'full' ? strangerOf(msg) : `requester:${msg.senderId}`, what)) {
      log.debug(`${msg.channel} ${msg.messageId}: ${who} is not paired; ${detail} (told already)`);
      return;
    }
    log.info(`${msg.channel} ${msg.messageId}: ${who} is not paired; ${detail}`);
    await refuse(msg, 'not_paired', `${who} is not paired; ${detail}`, reply);
    await say(reply);
  };

  return {
    async screen(msg) {
      const v = await verdictOf(msg);
      if (v.verdict === 'admit') return 'known';
      if (v.verdict === 'ignore') {
        log.debug(`${msg.channel} ${msg.messageId}: ignored (${v.why})`);
        return 'drop';
      }
      const look = strangers.look(msg.channel, strangerOf(msg));
      if (look.ok) return 'stranger';
      const line = `${msg.channel} ${msg.messageId}: ${whoOf(msg)} is a stranger over the strangers' limits; dropped unread`;
      if (look.firstDrop) log.info(`${line} (more are dropped quietly)`);
      else log.debug(line);
      return 'drop';
    },
    async admit(msg, say) {
      const v = await verdictOf(msg);
      switch (v.verdict) {
        case 'admit':
          return { admitted: true, admin: v.admin };
        case 'ignore':
          log.debug(`${msg.channel} ${msg.messageId}: ignored (${v.why})`);
          return { admitted: false };
        case 'refuse': {
          const who = whoOf(msg);
          if (!strangers.tellOnce(msg.channel, strangerOf(msg), 'not_allowed')) {
            log.debug(`${msg.channel} ${msg.messageId}: ${who} is not on the allowlist; dropped (recorded already)`);
            return { admitted: false };
          }
          log.info(`${msg.channel} ${msg.messageId}: ${who} is not on the allowlist; dropped`);
          await refuse(msg, 'not_allowed', `${who} is not allowed (access.${msg.chatType === 'group' ? 'groups' : 'dm'}: allowlist)`, '');
          return { admitted: false };
        }
        case 'pair':
          await pair(msg, v.kind, v.id, say);
          return { admitted: false };
      }
    },
    async throttle(msg, say) {
      const limit = deps.config.current().config.access.rateLimit;
      const hit = limiter.hit(`${msg.channel}:${msg.senderId}`, limit, msg.ts);
      if (hit.ok) return true;
      const reply = hit.notify ? `Slow down: more than ${limit.messages} messages in ${limit.perSeconds} s. Try again in ${hit.retryInSeconds} s.` : '';
      log.info(`${msg.channel} ${msg.messageId}: ${msg.channel}:${msg.senderId} is over the rate limit${hit.notify ? '' : ' (already told)'}`);
      await refuse(msg, 'rate_limited', `over ${limit.messages} messages in ${limit.perSeconds} s; not processed`, reply);
      if (reply) await say(reply);
      return false;
    },
  };
}

// --- internal ---

/** The stranger a message is from: its sender in a direct chat, its chat in a group. */
const strangerOf = (msg: InboundMessage) => (msg.chatType === 'group' ? `chat:${msg.chatId}` : `sender:${msg.senderId}`);
const whoOf = (msg: InboundMessage) => `${msg.channel}:${msg.chatType === 'group' ? `${msg.chatId} (group)` : msg.senderId}`;

/** The command is the documented one, never this host's path to the CLI: the reply goes to a stranger. */
function formatPairingReply(kind: AccessKind, code: string): string {
  const valid = `valid for ${PAIRING_TTL_MS / 3_600_000} hour`;
  const approve = `\`service access approve ${code}\``;
  return kind === 'chat'
    ? `This group is not approved to use me yet. Pairing code: ${code} (${valid}). My owner approves it with ${approve}, or an admin sends /approve ${code} in a chat with me.`
    : `Hi! I only talk to people my owner has approved. Your pairing code: ${code} (${valid}). Send it to my owner, who approves it with ${approve} or in the dashboard.`;
}

function formatPairingFull(): string {
  return 'I only talk to people my owner has approved, and too many pairing requests are waiting right now. Please try again later.';
}

function formatRequesterFull(): string {
  return 'I only talk to people my owner has approved. You already have a pairing request waiting; once my owner has answered it (or within the hour, when it expires), ask again.';
}
