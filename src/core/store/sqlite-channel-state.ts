import type Database from 'better-sqlite3';
import { parseGroupMessageRow, parseInboxRow, parseKnownChatRow, type Row } from './rows.js';
import { GROUP_MESSAGES_PER_CHAT, type GroupStateStore, type InboxLedger, type KnownChatStore, type SyncOf } from './types.js';

/**
 * What the SQLite store keeps for the channels, on the store's open database: the ledger of
 * platform messages taken in, group chats' recent messages and the bot's replies in a row, the chats seen.
 */
export function createSqliteChannelStateStore(db: Database.Database): SyncOf<InboxLedger & GroupStateStore & KnownChatStore> {
  const q = {
    claimMessage: db.prepare(
      `INSERT INTO inbox (channel, message_id, chat_key, received_at, status, payload, owner) VALUES (@channel, @messageId, @chatKey, @receivedAt, 'pending', @payload, @owner)
       ON CONFLICT(channel, message_id) DO NOTHING`,
    ),
    takeOver: db.prepare(
      `UPDATE inbox SET owner = @owner WHERE channel = @channel AND message_id = @messageId AND status = 'pending' AND (owner IS NULL OR owner != @owner)`,
    ),
    markDone: db.prepare(`UPDATE inbox SET status = 'done', payload = NULL WHERE channel = ? AND message_id = ?`),
    pending: db.prepare(`SELECT * FROM inbox WHERE status = 'pending' ORDER BY received_at ASC, rowid ASC`),
    purgeInbox: db.prepare(`DELETE FROM inbox WHERE (status = 'done' OR payload IS NULL) AND received_at < ?`),
    appendGroup: db.prepare('INSERT INTO group_messages (chat_key, message_id, ts, sender, text, from_bot) VALUES (?, ?, ?, ?, ?, ?)'),
    trimGroup: db.prepare(
      'DELETE FROM group_messages WHERE chat_key = ? AND id <= (SELECT id FROM group_messages WHERE chat_key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)',
    ),
    recentGroup: db.prepare('SELECT * FROM (SELECT * FROM group_messages WHERE chat_key = ? ORDER BY id DESC LIMIT ?) ORDER BY id ASC'),
    noteChat: db.prepare(
      `INSERT INTO chats (channel, chat_id, chat_type, last_seen) VALUES (@channel, @chatId, @chatType, @lastSeen)
       ON CONFLICT(channel, chat_id) DO UPDATE SET chat_type = excluded.chat_type, last_seen = MAX(last_seen, excluded.last_seen)`,
    ),
    chats: db.prepare('SELECT * FROM chats WHERE channel = ? ORDER BY chat_id'),
    chatFetched: db.prepare('UPDATE chats SET fetched_until = ? WHERE channel = ? AND chat_id = ?'),
    botTurns: db.prepare('SELECT bot_turns FROM group_state WHERE chat_key = ?'),
    addBotTurn: db.prepare(
      'INSERT INTO group_state (chat_key, bot_turns) VALUES (?, 1) ON CONFLICT(chat_key) DO UPDATE SET bot_turns = bot_turns + 1 RETURNING bot_turns',
    ),
    setBotTurns: db.prepare('INSERT INTO group_state (chat_key, bot_turns) VALUES (?, ?) ON CONFLICT(chat_key) DO UPDATE SET bot_turns = excluded.bot_turns'),
  };
  const appendGroup = db.transaction((chatKey: string, messageId: string | null, ts: number, sender: string, text: string, fromBot: boolean) => {
    q.appendGroup.run(chatKey, messageId, ts, sender, text, fromBot ? 1 : 0);
    q.trimGroup.run(chatKey, chatKey, GROUP_MESSAGES_PER_CHAT);
  });

  return {
    claimMessage: (e) => q.claimMessage.run({ ...e, payload: e.payload ?? null, owner: e.owner ?? null }).changes === 1,
    takeOverMessage: (channel, messageId, owner) => q.takeOver.run({ channel, messageId, owner }).changes === 1,
    markMessageDone: (channel, messageId) => void q.markDone.run(channel, messageId),
    pendingMessages: () => (q.pending.all() as Row[]).map(parseInboxRow),
    purgeMessages: (cutoff) => q.purgeInbox.run(cutoff).changes,
    appendGroupMessage: (m) => appendGroup(m.chatKey, m.messageId ?? null, m.ts, m.sender, m.text, m.fromBot),
    recentGroupMessages: (chatKey, limit) => (limit <= 0 ? [] : (q.recentGroup.all(chatKey, limit) as Row[]).map(parseGroupMessageRow)),
    groupBotTurns: (chatKey) => Number((q.botTurns.get(chatKey) as Row | undefined)?.bot_turns ?? 0),
    setGroupBotTurns: (chatKey, turns) => void q.setBotTurns.run(chatKey, turns),
    addGroupBotTurn: (chatKey) => Number((q.addBotTurn.get(chatKey) as Row).bot_turns),
    noteChat: (c) => void q.noteChat.run(c),
    knownChats: (channel) => (q.chats.all(channel) as Row[]).map(parseKnownChatRow),
    setChatFetched: (channel, chatId, until) => void q.chatFetched.run(until, channel, chatId),
  };
}
