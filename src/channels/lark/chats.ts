import type { Logger } from '../../core/logger.js';
import { BoundedMap } from '../bounded-map.js';
import type { LarkRest } from './rest.js';

/** Chat kinds remembered from events (history items do not carry it); bounded, oldest forgotten first. */
const CHAT_KINDS_KEPT = 2000;

/**
 * Whether a chat is a DM or a group, which Lark's events say and its history items and card
 * callbacks do not: remembered from events, else asked once per chat (GET im/v1/chats/:id).
 * Both sides use it: the connection for a button press, the outbound side for history.
 */
export class LarkChatKinds {
  private readonly kinds = new BoundedMap<string, 'direct' | 'group'>(CHAT_KINDS_KEPT);
  private readonly rest: LarkRest;
  private readonly log: () => Logger;

  constructor(rest: LarkRest, log: () => Logger) {
    this.rest = rest;
    this.log = log;
  }

  remember(chatId: string, type: 'direct' | 'group'): void {
    this.kinds.set(chatId, type);
  }

  async of(chatId: string): Promise<'direct' | 'group'> {
    const known = this.kinds.get(chatId);
    if (known) return known;
    try {
      const type = (await this.rest.chatMode(chatId)) === 'p2p' ? 'direct' : 'group';
      this.remember(chatId, type);
      return type;
    } catch (err) {
      // Remembered, so a missing scope costs one failed call per chat, not one per read; an event from
      // the chat corrects it.
      this.log().debug(`chat mode of ${chatId} unknown (${String(err)}); reading it as a group`);
      this.remember(chatId, 'group');
      return 'group';
    }
  }
}
