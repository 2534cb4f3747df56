import { generatePairingCode, MAX_PENDING_PER_CHANNEL, PAIRING_TTL_MS } from '../../core/access/pairing-code.js';
import type { Assistant } from '../../core/assistant/assistant.js';
import type { ConfigSource } from '../../core/config/source.js';
import { formatCliCommand } from '../../core/invocation.js';
import type { Logger } from '../../core/logger.js';
import type { AccessKind, AccessStore, OpenPairingResult, RefusalReason } from '../../core/store/types.js';
import { sessionKeyOf } from '../group.js';
import type { InboundMessage } from '../types.js';
import { decideAccess } from './policy.js';
import { createRateLimiter } from './rate-limit.js';

/**
 * Access control on the channel path, in two steps around group policy: `admit` (who may use
 * the assistant at all; unknown senders and groups get a pairing code) runs first, `throttle`
 * (the per-sender rate limit) once the bridge has decided to answer, so chatter the bot ignores
 * never counts against anyone. Approvals are read from the store per message: one made by
 * `service access approve` in another process applies to the very next message. Every refusal
 * is an activity record with its reason.
 */
export interface AccessGate {
  /** `say` answers in the message's chat (split, rendered, noted as sent). */
  admit(msg: InboundMessage, say: (text: string) => Promise<void>): Promise<Admission>;
  /** True when the message may go on; false after a refusal (told once per stretch of refusals). */
  throttle(msg: InboundMessage, say: (text: string) => Promise<void>): Promise<boolean>;
}

/** `admin`: the sender may run the slash commands that change the configuration. */
export type Admission = { admitted: true; admin: boolean } | { admitted: false };

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
  const approveLine = (code: string) => formatCliCommand(`access approve ${code}`);

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

  const openPairing = async (msg: InboundMessage, kind: AccessKind, id: string): Promise<Exclude<OpenPairingResult, { status: 'collision' }>> => {
    const label = kind === 'sender' ? msg.senderName : `asked by ${msg.senderName ?? msg.senderId}`;
    const request = { channel: msg.channel, kind, id, ...(label ? { label } : {}), createdAt: now() };
    for (;;) {
      const result = await deps.store.openPairing(request, {
        code: generatePairingCode(deps.random),
        ttlMs: PAIRING_TTL_MS,
        maxPending: MAX_PENDING_PER_CHANNEL,
      });
      if (result.status !== 'collision') return result;
    }
  };

  return {
    async admit(msg, say) {
      const cfg = deps.config.current().config.access;
      // The policy is pure: the grants it may ask about are read first.
      const [sender, chat] = await Promise.all([
        deps.store.isGranted(msg.channel, 'sender', msg.senderId),
        msg.chatType === 'group' ? deps.store.isGranted(msg.channel, 'chat', msg.chatId) : false,
      ]);
      const v = decideAccess(msg, cfg, (kind) => (kind === 'sender' ? sender : chat));
      const who = `${msg.channel}:${msg.chatType === 'group' ? `${msg.chatId} (group)` : msg.senderId}`;
      switch (v.verdict) {
        case 'admit':
          return { admitted: true, admin: v.admin };
        case 'ignore':
          log.debug(`${msg.channel} ${msg.messageId}: ignored (${v.why})`);
          return { admitted: false };
        case 'refuse':
          log.info(`${msg.channel} ${msg.messageId}: ${who} is not on the allowlist; dropped`);
          await refuse(msg, 'not_allowed', `${who} is not allowed (access.${msg.chatType === 'group' ? 'groups' : 'dm'}: allowlist)`, '');
          return { admitted: false };
        case 'pair': {
          const result = await openPairing(msg, v.kind, v.id);
          if (result.status === 'full') {
            log.info(`${msg.channel} ${msg.messageId}: ${who} is not paired and ${MAX_PENDING_PER_CHANNEL} codes are already waiting`);
            const reply = formatPairingFull();
            await refuse(msg, 'not_paired', `${who} is not paired; ${MAX_PENDING_PER_CHANNEL} pairing codes are already waiting on ${msg.channel}`, reply);
            await say(reply);
            return { admitted: false };
          }
          const { code } = result.request;
          log.info(`${msg.channel} ${msg.messageId}: ${who} is not paired; ${result.status === 'created' ? 'new' : 'same'} pairing code ${code}`);
          const reply = formatPairingReply(v.kind, code, approveLine(code));
          await refuse(msg, 'not_paired', `${who} is not paired; pairing code ${code} sent`, reply);
          await say(reply);
          return { admitted: false };
        }
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

function formatPairingReply(kind: AccessKind, code: string, approveLine: string): string {
  const valid = `valid for ${PAIRING_TTL_MS / 3_600_000} hour`;
  return kind === 'chat'
    ? `This group is not approved to use me yet. Pairing code: ${code} (${valid}). My owner approves it with \`${approveLine}\`, or an admin sends /approve ${code} in a chat with me.`
    : `Hi! I only talk to people my owner has approved. Your pairing code: ${code} (${valid}). Send it to my owner, who approves it with \`${approveLine}\` or in the dashboard.`;
}

function formatPairingFull(): string {
  return 'I only talk to people my owner has approved, and too many pairing requests are waiting right now. Please try again later.';
}
