import { insertKeeping, type PgQuery } from './pg-client.js';
import { parseGroupMessageRow, parseInboxRow, parseKnownChatRow } from './rows.js';
import { GROUP_MESSAGES_PER_CHAT, type GroupStateStore, type InboxLedger, type KnownChatStore } from './types.js';

/**
 * What the PostgreSQL store keeps for the channels: the ledger of platform messages taken in (a
 * claim is one `INSERT … ON CONFLICT DO NOTHING`, a take-over one conditional UPDATE), group
 * chats' recent messages and the bot's replies in a row, the chats seen.
 */
export function createPgChannelStateStore(query: PgQuery): InboxLedger & GroupStateStore & KnownChatStore {
  const rows = async (sql: string, params?: unknown[]) => (await query(sql, params)).rows;
  const changed = async (sql: string, params?: unknown[]) => (await query(sql, params)).rowCount ?? 0;
  return {
    claimMessage: async (e) =>
      (await changed(
        `INSERT INTO inbox (channel, message_id, chat_key, received_at, status, payload, owner) VALUES ($1, $2, $3, $4, 'pending', $5, $6)
         ON CONFLICT (channel, message_id) DO NOTHING`,
        [e.channel, e.messageId, e.chatKey, e.receivedAt, e.payload ?? null, e.owner ?? null],
      )) === 1,
    // Under READ COMMITTED a second UPDATE of the row waits for the first and re-checks the WHERE
    // on the row it left: the same owner cannot take it twice.
    takeOverMessage: async (channel, messageId, owner) =>
      (await changed(`UPDATE inbox SET owner = $3 WHERE channel = $1 AND message_id = $2 AND status = 'pending' AND (owner IS NULL OR owner <> $3)`, [
        channel,
        messageId,
        owner,
      ])) === 1,
    markMessageDone: async (channel, messageId) =>
      void (await query(`UPDATE inbox SET status = 'done', payload = NULL WHERE channel = $1 AND message_id = $2`, [channel, messageId])),
    pendingMessages: async () => (await rows(`SELECT * FROM inbox WHERE status = 'pending' ORDER BY received_at, seq`)).map(parseInboxRow),
    purgeMessages: (cutoff) => changed(`DELETE FROM inbox WHERE (status = 'done' OR payload IS NULL) AND received_at < $1`, [cutoff]),

    appendGroupMessage: (m) =>
      insertKeeping(
        query,
        'INSERT INTO group_messages (chat_key, message_id, ts, sender, text, from_bot) VALUES ($1, $2, $3, $4, $5, $6)',
        'group_messages',
        'chat_key',
        GROUP_MESSAGES_PER_CHAT,
        [m.chatKey, m.messageId ?? null, m.ts, m.sender, m.text, m.fromBot],
      ),
    recentGroupMessages: async (chatKey, limit) =>
      limit <= 0
        ? []
        : (await rows('SELECT * FROM (SELECT * FROM group_messages WHERE chat_key = $1 ORDER BY id DESC LIMIT $2) g ORDER BY id ASC', [chatKey, limit])).map(
            parseGroupMessageRow,
          ),
    groupBotTurns: async (chatKey) => Number((await rows('SELECT bot_turns FROM group_state WHERE chat_key = $1', [chatKey]))[0]?.bot_turns ?? 0),
    setGroupBotTurns: async (chatKey, turns) =>
      void (await query('INSERT INTO group_state (chat_key, bot_turns) VALUES ($1, $2) ON CONFLICT (chat_key) DO UPDATE SET bot_turns = excluded.bot_turns', [
        chatKey,
        turns,
      ])),

    addGroupBotTurn: async (chatKey) =>
      Number(
        (
          await rows(
            'INSERT INTO group_state (chat_key, bot_turns) VALUES ($1, 1) ON CONFLICT (chat_key) DO UPDATE SET bot_turns = group_state.bot_turns + 1 RETURNING bot_turns',
            [chatKey],
          )
        )[0]?.bot_turns,
      ),

    noteChat: async (c) =>
      void (await query(
        `INSERT INTO chats (channel, chat_id, chat_type, last_seen) VALUES ($1, $2, $3, $4)
         ON CONFLICT (channel, chat_id) DO UPDATE SET chat_type = excluded.chat_type, last_seen = GREATEST(chats.last_seen, excluded.last_seen)`,
        [c.channel, c.chatId, c.chatType, c.lastSeen],
      )),
    knownChats: async (channel) => (await rows('SELECT * FROM chats WHERE channel = $1 ORDER BY chat_id COLLATE "C"', [channel])).map(parseKnownChatRow),
    setChatFetched: async (channel, chatId, until) =>
      void (await query('UPDATE chats SET fetched_until = $1 WHERE channel = $2 AND chat_id = $3', [until, channel, chatId])),
  };
}
