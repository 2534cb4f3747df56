/**
 * Ids of the messages this process sent, per channel, so their echo (platforms deliver a bot's
 * own messages to it) is never taken for a message to answer. Replies (the bridge) and proactive
 * sends (the hub) write it; the bridge reads it. Bounded: the newest SENT_REMEMBERED per channel.
 */
export interface SentLedger {
  note(channel: string, messageId: string | undefined): void;
  has(channel: string, messageId: string): boolean;
}

export const SENT_REMEMBERED = 1000;

export function createSentLedger(): SentLedger {
  const sent = new Map<string, Set<string>>();
  return {
    note(channel, messageId) {
      if (!messageId) return;
      const set = sent.get(channel) ?? new Set<string>();
      set.add(messageId);
      if (set.size > SENT_REMEMBERED) {
        const oldest = set.values().next().value;
        if (oldest !== undefined) set.delete(oldest);
      }
      sent.set(channel, set);
    },
    has: (channel, messageId) => sent.get(channel)?.has(messageId) ?? false,
  };
}
