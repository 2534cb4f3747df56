import {
  GROUP_MESSAGES_PER_CHAT,
  type GroupMessage,
  type GroupStateStore,
  type InboxEntry,
  type InboxLedger,
  type KnownChat,
  type KnownChatStore,
  type SyncOf,
} from './types.js';

/**
 * What the memory store keeps for the channels: the ledger of platform messages taken in, group
 * chats' recent messages and the bot's replies in a row, the chats seen. The same contract as the SQLite one.
 */
export function createMemoryChannelStateStore(): SyncOf<InboxLedger & GroupStateStore & KnownChatStore> {
  const inbox = new Map<string, InboxEntry>();
  const groups = new Map<string, GroupMessage[]>();
  const botTurns = new Map<string, number>();
  const chats = new Map<string, KnownChat>();
  const keyOf = (channel: string, id: string) => `${channel}\u0000${id}`;

  return {
    claimMessage(entry) {
      const k = keyOf(entry.channel, entry.messageId);
      if (inbox.has(k)) return false;
      inbox.set(k, { ...entry, status: 'pending' });
      return true;
    },
    takeOverMessage(channel, messageId, owner) {
      const e = inbox.get(keyOf(channel, messageId));
      if (e?.status !== 'pending' || e.owner === owner) return false;
      e.owner = owner;
      return true;
    },
    markMessageDone(channel, messageId) {
      const e = inbox.get(keyOf(channel, messageId));
      if (e) inbox.set(keyOf(channel, messageId), { channel: e.channel, messageId: e.messageId, chatKey: e.chatKey, receivedAt: e.receivedAt, status: 'done' });
    },
    pendingMessages: () =>
      [...inbox.values()]
        .filter((e) => e.status === 'pending')
        .sort((a, b) => a.receivedAt - b.receivedAt)
        .map((e) => ({ ...e })),
    purgeMessages(cutoff) {
      let n = 0;
      for (const [k, e] of inbox) {
        if ((e.status === 'done' || e.payload === undefined) && e.receivedAt < cutoff) {
          inbox.delete(k);
          n++;
        }
      }
      return n;
    },
    appendGroupMessage(m) {
      const list = groups.get(m.chatKey) ?? [];
      list.push({ ...m });
      if (list.length > GROUP_MESSAGES_PER_CHAT) list.splice(0, list.length - GROUP_MESSAGES_PER_CHAT);
      groups.set(m.chatKey, list);
    },
    recentGroupMessages: (chatKey, limit) => (limit <= 0 ? [] : (groups.get(chatKey) ?? []).slice(-limit).map((m) => ({ ...m }))),
    groupBotTurns: (chatKey) => botTurns.get(chatKey) ?? 0,
    setGroupBotTurns: (chatKey, turns) => void botTurns.set(chatKey, turns),
    addGroupBotTurn(chatKey) {
      const turns = (botTurns.get(chatKey) ?? 0) + 1;
      botTurns.set(chatKey, turns);
      return turns;
    },
    noteChat(c) {
      const k = keyOf(c.channel, c.chatId);
      const prev = chats.get(k);
      chats.set(k, { ...prev, ...c, lastSeen: Math.max(c.lastSeen, prev?.lastSeen ?? 0) });
    },
    knownChats: (channel) => [...chats.values()].filter((c) => c.channel === channel).map((c) => ({ ...c })),
    setChatFetched(channel, chatId, until) {
      const c = chats.get(keyOf(channel, chatId));
      if (c) c.fetchedUntil = until;
    },
  };
}
