import { describe, expect, it } from 'vitest';
import { openAssistantDirectory } from '../../../src/assistant-directory.js';
import { createSilentLogger } from '../../../src/core/logger.js';
import { collect, completionOf, createTestAssistant } from '../../helpers/assistant.js';

const CHAT = 'channel_e:dm:1001';

describe('chat core: named sessions per chat', () => {
  it('/new starts a fresh engine session and keeps the old one; /switch goes back; /sessions lists name, last used and turns', async () => {
    const t = createTestAssistant();
    const say = async (text: string) => completionOf(await collect(t.assistant.chat(text, { chatKey: CHAT }))).finalText;
    const cmd = (line: string) => t.assistant.runCommand(line, { chatKey: CHAT, source: 'channel_e' });

    expect(await say('one')).toBe('ECHO: one\nTURN: 1');
    expect(await say('two')).toBe('ECHO: two\nTURN: 2');
    const created = await cmd('/new ideas');
    expect(created.error).toBeUndefined();
    expect(created.text).toBe('New session "ideas": the next message starts a fresh conversation. "main" is kept: /switch main to go back.');
    expect(await say('fresh')).toBe('ECHO: fresh\nTURN: 1');
    expect(await say('more')).toBe('ECHO: more\nTURN: 2');
    expect((await t.store.getSession(`${CHAT}#ideas`))?.turns).toBe(2);

    const listed = await cmd('/sessions');
    expect(listed.sessions).toEqual([
      expect.objectContaining({ name: 'main', sessionKey: CHAT, current: false, turns: 2 }),
      expect.objectContaining({ name: 'ideas', sessionKey: `${CHAT}#ideas`, current: true, turns: 2 }),
    ]);
    expect(listed.text).toMatch(/^Sessions of this chat \(2\):\n→ ideas {2}last used just now, 2 turns\n {2}main {3}last used just now, 2 turns\n/);

    expect((await cmd('/switch Main')).text).toBe('Switched to "main" (2 turns).'); // names ignore case
    expect(await say('back')).toBe('ECHO: back\nTURN: 3'); // the old engine session, resumed
    // The activity record names the session key the turn ran on.
    expect((await t.assistant.recentActivity(1))[0]?.sessionKey).toBe(CHAT);
    expect((await cmd('/switch nope')).text).toBe('No session named "nope" in this chat. Sessions: main, ideas.');
    t.close();
  });

  it('/rename renames the current one; /delete refuses the current one and clears another; /reset resets only the current one', async () => {
    const t = createTestAssistant();
    const say = async (text: string) => completionOf(await collect(t.assistant.chat(text, { chatKey: CHAT }))).finalText;
    const cmd = (line: string) => t.assistant.runCommand(line, { chatKey: CHAT, source: 'channel_e' });
    await say('on main');
    await cmd('/new'); // an automatic name
    expect((await cmd('/sessions')).sessions).toEqual([expect.objectContaining({ name: 'main' }), expect.objectContaining({ name: 's2', current: true })]);
    await say('on s2');
    expect((await cmd('/rename bug fix')).text).toBe('Renamed "s2" to "bug-fix".'); // words typed with spaces on a phone
    expect((await cmd('/rename main')).error).toBe('exists');
    expect((await cmd('/rename ../x')).error).toBe('invalid_name');
    expect((await cmd('/delete bug-fix')).error).toBe('current');
    // A new session named like the renamed one's old name gets a key of its own.
    expect((await cmd('/new s2')).session).toMatchObject({ sessionKey: `${CHAT}#s2-2` });
    await cmd('/switch bug-fix');

    await cmd('/reset');
    expect(await t.store.getSession(`${CHAT}#s2`)).toBeUndefined();
    expect((await t.store.getSession(CHAT))?.turns).toBe(1); // main untouched
    expect(await say('after reset')).toBe('ECHO: after reset\nTURN: 1');

    const deleted = await cmd('/delete MAIN');
    expect(deleted.text).toBe('Deleted "main" and its conversation.');
    expect(await t.store.getSession(CHAT)).toBeUndefined();
    expect(await t.store.readHistory(CHAT)).toEqual([]);
    expect((await cmd('/sessions')).sessions).toEqual([expect.objectContaining({ name: 'bug-fix', current: true }), expect.objectContaining({ name: 's2' })]);
    t.close();
  });

  it('a chat that never used the commands runs on its base key; at most 20 sessions per chat', async () => {
    const t = createTestAssistant();
    await collect(t.assistant.chat('plain', { chatKey: CHAT }));
    expect((await t.store.listSessions()).map((s) => s.key)).toEqual([CHAT]);
    expect(await t.store.allChatSessions()).toEqual([]);
    for (let i = 2; i <= 20; i++) expect((await t.assistant.runCommand(`/new n${i}`, { chatKey: CHAT })).error).toBeUndefined();
    const refused = await t.assistant.runCommand('/new one-more', { chatKey: CHAT });
    expect(refused.error).toBe('too_many');
    expect(refused.text).toMatch(/^This chat has 20 sessions, the most it can keep: \/delete one first/);
    t.close();
  });

  it('over HTTP (no chat) a session is its sessionKey: the commands say so, and the key is never redirected', async () => {
    const t = createTestAssistant();
    const answer = await t.assistant.runCommand('/new x', { sessionKey: 'default' });
    expect(answer.error).toBe('not_here');
    expect(answer.text).toMatch(/^Named sessions belong to chats and the terminal\. Over HTTP a session is its sessionKey/);
    // Even a key that is also a chat with named sessions runs as given.
    await t.assistant.runCommand('/new other', { chatKey: 'k' });
    await collect(t.assistant.chat('literal', { sessionKey: 'k' }));
    expect((await t.store.getSession('k'))?.turns).toBe(1);
    expect(await t.store.getSession('k#other')).toBeUndefined();
    t.close();
  });

  it('session TTL pruning at start covers named sessions; the chat falls back to its base key', async () => {
    const t = createTestAssistant({ yaml: 'sessionTtlDays: 2\n' });
    await collect(t.assistant.chat('old topic', { chatKey: CHAT }));
    await t.assistant.runCommand('/new later', { chatKey: CHAT });
    await collect(t.assistant.chat('later topic', { chatKey: CHAT }));
    // Both engine sessions (and the named rows) age past the TTL.
    const old = Date.now() - 3 * 86_400_000;
    for (const s of await t.store.listSessions()) await t.store.saveSession({ ...s, createdAt: old, updatedAt: old });
    (t.store as unknown as { db: { prepare(sql: string): { run(...a: unknown[]): void } } }).db.prepare('UPDATE chat_sessions SET created_at = ?').run(old);
    t.close();

    const reopened = openAssistantDirectory({ dir: t.dir, log: createSilentLogger(), env: { ...process.env, ...t.standIn.env } });
    expect(await reopened.store.listSessions()).toEqual([]);
    expect(await reopened.store.allChatSessions()).toEqual([]);
    expect(await reopened.assistant.sessions.resolve(CHAT)).toBe(CHAT);
    reopened.close();
  });
});
