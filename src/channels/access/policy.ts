import type { AccessConfig } from '../../core/config/schema.js';
import type { AccessKind } from '../../core/store/types.js';
import type { InboundMessage } from '../types.js';

/**
 * Who may drive the agent, decided per message before group policy, pure: the configuration,
 * the message and a lookup of approved pairings in, a verdict out.
 *
 * - A sender is known when listed in `access.allow` (`<channel>:<id>`, or `<channel>:*` for
 *   everyone there), in `access.admins`, or approved by pairing; a known sender passes in direct
 *   chats and in groups alike.
 * - A group chat passes as a whole when listed in `access.chats` or approved by pairing.
 * - Otherwise the channel's policy (`dm` for direct chats, `groups` for groups) decides: `open`
 *   lets it through, `allowlist` refuses it silently, `pairing` answers with a pairing code.
 * - A message nobody addressed to the bot (a group message without a mention) or from another
 *   bot is ignored, never answered: an unpaired group hears from the bot only when it is mentioned.
 */
export type AccessVerdict =
  | { verdict: 'admit'; admin: boolean }
  /** Answer with the pairing code of this sender or chat. */
  | { verdict: 'pair'; kind: AccessKind; id: string }
  /** `allowlist`: not answered; recorded as refused. */
  | { verdict: 'refuse' }
  /** Not addressed to the bot: dropped without a word or a record. */
  | { verdict: 'ignore'; why: string };

export type GrantLookup = (kind: AccessKind, id: string) => boolean;

export function decideAccess(msg: InboundMessage, access: AccessConfig, isGranted: GrantLookup): AccessVerdict {
  const sender = `${msg.channel}:${msg.senderId}`;
  const admin = access.admins.includes(sender);
  const knownSender = admin || access.allow.includes(sender) || access.allow.includes(`${msg.channel}:*`) || isGranted('sender', msg.senderId);
  if (msg.chatType === 'direct') {
    if (knownSender || access.dm === 'open') return { verdict: 'admit', admin };
    if (msg.fromBot) return { verdict: 'ignore', why: 'a bot in a direct chat' };
    return access.dm === 'allowlist' ? { verdict: 'refuse' } : { verdict: 'pair', kind: 'sender', id: msg.senderId };
  }
  const knownChat = access.chats.includes(`${msg.channel}:${msg.chatId}`) || isGranted('chat', msg.chatId);
  if (knownSender || knownChat || access.groups === 'open') return { verdict: 'admit', admin };
  if (msg.fromBot) return { verdict: 'ignore', why: 'a bot in a group that is not approved' };
  if (!msg.mentioned) return { verdict: 'ignore', why: 'not mentioned in a group that is not approved' };
  return access.groups === 'allowlist' ? { verdict: 'refuse' } : { verdict: 'pair', kind: 'chat', id: msg.chatId };
}
