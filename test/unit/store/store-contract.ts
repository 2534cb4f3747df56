import { describe, expect, it } from 'vitest';
import { ACTIVITY_KEPT, HISTORY_PER_KEY, STRANGER_ACTIVITY_KEPT, type ActivityRecord, type Store } from '../../../src/core/store/types.js';

export const activity = (over: Partial<ActivityRecord> = {}): ActivityRecord => ({
  ts: new Date(0).toISOString(),
  source: 'http',
  sender: 'u',
  messagePreview: 'hi',
  responsePreview: 'hello',
  durationMs: 100,
  costUsd: 0.5,
  status: 'completed',
  sessionKey: 'k',
  ...over,
});

/**
 * The one contract every store implementation passes (memory, SQLite, PostgreSQL): `make` returns
 * a fresh, empty store each call.
 */
export function describeStoreContract(name: string, make: () => Store): void {
  describe(`${name} store (one contract)`, () => {
    it('saves, updates, lists and deletes sessions', async () => {
      const s = make();
      expect(await s.getSession('a')).toBeUndefined();
      await s.saveSession({ key: 'a', engine: 'engine_b', sessionId: 's1', createdAt: 1, updatedAt: 1 });
      await s.saveSession({ key: 'a', engine: 'engine_b', sessionId: 's2', createdAt: 99, updatedAt: 5 });
      expect(await s.getSession('a')).toEqual({ key: 'a', engine: 'engine_b', sessionId: 's2', createdAt: 1, updatedAt: 5, turns: 0 });
      await s.saveSession({ key: 'b', engine: 'engine_d', sessionId: null, createdAt: 2, updatedAt: 2 });
      expect((await s.listSessions()).map((r) => r.key).sort()).toEqual(['a', 'b']);
      await s.deleteSession('a');
      expect(await s.getSession('a')).toBeUndefined();
      await s.close();
    });

    it('prunes idle sessions with their history, keeps fresh ones', async () => {
      const s = make();
      await s.saveSession({ key: 'old', engine: 'e', sessionId: 'x', createdAt: 1, updatedAt: 1_000 });
      await s.saveSession({ key: 'new', engine: 'e', sessionId: 'y', createdAt: 1, updatedAt: 5_000 });
      await s.appendHistory({ key: 'old', role: 'user', text: 'forget me', ts: 1 });
      await s.appendHistory({ key: 'new', role: 'user', text: 'keep me', ts: 1 });
      expect(await s.pruneSessions(2_000)).toBe(1);
      expect(await s.getSession('old')).toBeUndefined();
      expect(await s.readHistory('old')).toEqual([]);
      expect((await s.readHistory('new')).map((h) => h.text)).toEqual(['keep me']);
      await s.close();
    });

    it('keeps history oldest first, bounded per key, clearable', async () => {
      const s = make();
      for (let i = 0; i < HISTORY_PER_KEY + 5; i++) await s.appendHistory({ key: 'k', role: i % 2 ? 'assistant' : 'user', text: `m${i}`, ts: i });
      const all = await s.readHistory('k');
      expect(all).toHaveLength(HISTORY_PER_KEY);
      expect(all[0]?.text).toBe('m5');
      expect((await s.readHistory('k', 2)).map((h) => h.text)).toEqual([`m${HISTORY_PER_KEY + 3}`, `m${HISTORY_PER_KEY + 4}`]);
      await s.clearHistory('k');
      expect(await s.readHistory('k')).toEqual([]);
      await s.close();
    });

    it('keeps how a reply that did not complete ended, and what was said with it; a completed one reads without', async () => {
      const s = make();
      await s.appendHistory({ key: 'k', role: 'user', text: 'q', ts: 1 });
      await s.appendHistory({ key: 'k', role: 'assistant', text: 'Before the', ts: 2, status: 'aborted', message: 'Aborted: the gateway is shutting down' });
      await s.appendHistory({ key: 'k', role: 'assistant', text: 'half', ts: 3, status: 'failed' });
      await s.appendHistory({ key: 'k', role: 'assistant', text: 'whole', ts: 4 });
      const read = await s.readHistory('k');
      expect(read).toEqual([
        { key: 'k', role: 'user', text: 'q', ts: 1 },
        { key: 'k', role: 'assistant', text: 'Before the', ts: 2, status: 'aborted', message: 'Aborted: the gateway is shutting down' },
        { key: 'k', role: 'assistant', text: 'half', ts: 3, status: 'failed' },
        { key: 'k', role: 'assistant', text: 'whole', ts: 4 },
      ]);
      // Absent, not undefined: a JSON answer made of these has no `status` on a completed reply.
      expect(read.map((e) => ['status' in e, 'message' in e])).toEqual([
        [false, false],
        [true, true],
        [true, false],
        [false, false],
      ]);
      await s.close();
    });

    it('folds activity into metrics that outlive the bounded activity list', async () => {
      const s = make();
      await s.recordActivity(activity({ source: 'http', durationMs: 100, costUsd: 0.25 }));
      await s.recordActivity(activity({ source: 'channel_e', durationMs: 300, costUsd: 0.5, status: 'failed', error: 'boom' }));
      await s.recordActivity(activity({ source: 'channel_e', durationMs: 200, costUsd: 0, escalated: true }));
      expect(await s.metrics()).toEqual({ totalMessages: 3, totalCostUsd: 0.75, avgDurationMs: 200, messagesBySource: { http: 1, channel_e: 2 } });
      expect((await s.recentActivity(2)).map((r) => r.durationMs)).toEqual([200, 300]);
      expect(await s.recentActivity(10, { statuses: ['failed'] })).toEqual([expect.objectContaining({ error: 'boom', status: 'failed' })]);
      expect(await s.recentActivity(10, { escalated: true })).toHaveLength(1);
      await s.close();
    });

    it('bounds the activity list', async () => {
      const s = make();
      for (let i = 0; i < ACTIVITY_KEPT + 3; i++) await s.recordActivity(activity({ durationMs: i }));
      expect(await s.recentActivity(ACTIVITY_KEPT + 10)).toHaveLength(ACTIVITY_KEPT);
      expect((await s.metrics()).totalMessages).toBe(ACTIVITY_KEPT + 3);
      await s.close();
    });

    it('keeps group reply counts per chat and the provider failover state, typed', async () => {
      const s = make();
      expect(await s.groupBotTurns('channel_e:g1')).toBe(0);
      await s.setGroupBotTurns('channel_e:g1', 3);
      await s.setGroupBotTurns('channel_e:g2', 1);
      await s.setGroupBotTurns('channel_e:g1', 4);
      expect([await s.groupBotTurns('channel_e:g1'), await s.groupBotTurns('channel_e:g2')]).toEqual([4, 1]);
      expect(await Promise.all([s.addGroupBotTurn('channel_e:g1'), s.addGroupBotTurn('channel_e:g1'), s.addGroupBotTurn('channel_e:new')])).toEqual(
        expect.arrayContaining([5, 6, 1]),
      );
      expect(await s.groupBotTurns('channel_e:g1')).toBe(6);
      expect(await s.readFailover()).toEqual({ consecutiveFailures: 0 });
      await s.writeFailover({ consecutiveFailures: 0, fallbackSince: 1234 });
      expect(await s.readFailover()).toEqual({ consecutiveFailures: 0, fallbackSince: 1234 });
      await s.writeFailover({ consecutiveFailures: 2 });
      expect(await s.readFailover()).toEqual({ consecutiveFailures: 2 });
      await s.close();
    });
  });

  describe(`${name} store: message ledger and group context (one contract)`, () => {
    it('claims a platform message once; pending entries keep their payload until done', async () => {
      const s = make();
      const entry = { channel: 'channel_e', messageId: '1:10', chatKey: 'channel_e:dm:1', receivedAt: 100, payload: '{"text":"hi"}' };
      expect(await s.claimMessage(entry)).toBe(true);
      expect(await s.claimMessage({ ...entry, receivedAt: 200 })).toBe(false);
      expect(await s.claimMessage({ ...entry, messageId: '1:11', receivedAt: 50 })).toBe(true);
      expect(await s.claimMessage({ ...entry, channel: 'channel_d' })).toBe(true); // same id on another channel is another message
      expect((await s.pendingMessages()).map((e) => e.messageId)).toEqual(['1:11', '1:10', '1:10']);
      expect((await s.pendingMessages())[1]).toEqual({ ...entry, status: 'pending' });
      await s.markMessageDone('channel_e', '1:10');
      expect((await s.pendingMessages()).map((e) => `${e.channel}/${e.messageId}`)).toEqual(['channel_e/1:11', 'channel_d/1:10']);
      expect(await s.claimMessage(entry)).toBe(false); // still remembered once done
      await s.close();
    });

    it('a later run takes over what an earlier one left pending, exactly once and never what it holds itself', async () => {
      const s = make();
      const entry = { channel: 'channel_e', messageId: '7', chatKey: 'k', receivedAt: 1, payload: '{}' };
      await s.claimMessage({ ...entry, owner: 'run-1' });
      await s.claimMessage({ ...entry, messageId: '8', owner: 'run-2' });
      await s.claimMessage({ ...entry, messageId: '9' }); // claimed before owners were recorded
      expect(await s.takeOverMessage('channel_e', '7', 'run-2')).toBe(true);
      expect(await s.takeOverMessage('channel_e', '7', 'run-2')).toBe(false); // already its own
      expect(await s.takeOverMessage('channel_e', '7', 'run-3')).toBe(true); // yet another restart may take it again
      expect(await s.takeOverMessage('channel_e', '8', 'run-2')).toBe(false); // the live path of this run holds it
      expect(await s.takeOverMessage('channel_e', '9', 'run-2')).toBe(true);
      expect(await s.takeOverMessage('channel_e', 'unknown', 'run-2')).toBe(false);
      await s.markMessageDone('channel_e', '8');
      expect(await s.takeOverMessage('channel_e', '8', 'run-3')).toBe(false); // done is done
      expect((await s.pendingMessages()).map((e) => [e.messageId, e.owner])).toEqual([
        ['7', 'run-3'],
        ['9', 'run-2'],
      ]);
      await s.close();
    });

    it('records running turns with their processes; removal succeeds once', async () => {
      const s = make();
      const a = await s.addRunningTurn({
        owner: { pid: 10, start: '99' },
        sessionKey: 'k',
        source: 'http',
        sender: 'http',
        messagePreview: 'hi',
        startedAt: 5,
      });
      const b = await s.addRunningTurn({
        owner: { pid: 11, start: '7' },
        sessionKey: 'j',
        source: 'channel_e',
        sender: 'ann',
        messagePreview: 'yo',
        startedAt: 6,
      });
      await s.setRunningTurnProcesses(a, [
        { pid: 200, start: '1000' },
        { pid: 201, start: '1001' },
      ]);
      expect(await s.runningTurns()).toEqual([
        {
          id: a,
          owner: { pid: 10, start: '99' },
          sessionKey: 'k',
          source: 'http',
          sender: 'http',
          messagePreview: 'hi',
          startedAt: 5,
          processes: [
            { pid: 200, start: '1000' },
            { pid: 201, start: '1001' },
          ],
        },
        { id: b, owner: { pid: 11, start: '7' }, sessionKey: 'j', source: 'channel_e', sender: 'ann', messagePreview: 'yo', startedAt: 6, processes: [] },
      ]);
      expect(await s.removeRunningTurn(a)).toBe(true);
      expect(await s.removeRunningTurn(a)).toBe(false);
      expect((await s.runningTurns()).map((t) => t.id)).toEqual([b]);
      await s.close();
    });

    it('purges only processed entries older than the cutoff', async () => {
      const s = make();
      await s.claimMessage({ channel: 'c', messageId: 'old-done', chatKey: 'k', receivedAt: 10 });
      await s.claimMessage({ channel: 'c', messageId: 'old-pending', chatKey: 'k', receivedAt: 10, payload: '{}' });
      await s.claimMessage({ channel: 'c', messageId: 'old-ledger-only', chatKey: 'k', receivedAt: 10 });
      await s.claimMessage({ channel: 'c', messageId: 'new-done', chatKey: 'k', receivedAt: 1000 });
      await s.markMessageDone('c', 'old-done');
      await s.markMessageDone('c', 'new-done');
      expect(await s.purgeMessages(500)).toBe(2);
      expect(await s.claimMessage({ channel: 'c', messageId: 'old-done', chatKey: 'k', receivedAt: 2000 })).toBe(true);
      expect(await s.claimMessage({ channel: 'c', messageId: 'new-done', chatKey: 'k', receivedAt: 2000 })).toBe(false);
      expect((await s.pendingMessages()).map((e) => e.messageId)).toEqual(['old-pending', 'old-done']);
      await s.close();
    });

    it('keeps recent group messages per chat, oldest first, bounded', async () => {
      const s = make();
      for (let i = 0; i < 210; i++) await s.appendGroupMessage({ chatKey: 'g', ts: i, sender: `u${i % 3}`, text: `m${i}`, fromBot: i % 5 === 0 });
      await s.appendGroupMessage({ chatKey: 'other', ts: 1, sender: 'x', text: 'elsewhere', fromBot: false });
      expect(await s.recentGroupMessages('g', 3)).toEqual([
        { chatKey: 'g', ts: 207, sender: 'u0', text: 'm207', fromBot: false },
        { chatKey: 'g', ts: 208, sender: 'u1', text: 'm208', fromBot: false },
        { chatKey: 'g', ts: 209, sender: 'u2', text: 'm209', fromBot: false },
      ]);
      expect(await s.recentGroupMessages('g', 1000)).toHaveLength(200);
      expect(await s.recentGroupMessages('g', 0)).toEqual([]);
      expect((await s.recentGroupMessages('other', 5)).map((m) => m.text)).toEqual(['elsewhere']);
      await s.close();
    });
  });

  describe(`${name} store: activity timeline (one contract)`, () => {
    it('counts kept activity per bucket from `since`, oldest first, only non-empty buckets', async () => {
      const s = make();
      const at = async (ms: number, costUsd = 0.5) => s.recordActivity(activity({ ts: new Date(ms).toISOString(), costUsd }));
      const t0 = Date.UTC(2025, 0, 1, 12, 0, 0);
      await at(t0 - 1); // before the window
      await at(t0, 0.25);
      await at(t0 + 59_999, 0.25);
      await at(t0 + 60_000);
      await at(t0 + 5 * 60_000 + 123);
      await at(t0 + 5 * 60_000 + 456);
      expect(await s.activityTimeline(t0, 60_000)).toEqual([
        { start: t0, count: 2, costUsd: 0.5 },
        { start: t0 + 60_000, count: 1, costUsd: 0.5 },
        { start: t0 + 5 * 60_000, count: 2, costUsd: 1 },
      ]);
      expect(await s.activityTimeline(t0 + 60 * 60_000, 60_000)).toEqual([]);
      expect(await s.activityTimeline(t0 - 1, 3_600_000)).toEqual([{ start: t0 - 1, count: 6, costUsd: 2.5 }]);
      await s.close();
    });
  });

  describe(`${name} store: task runs and known chats (one contract)`, () => {
    it('keeps the last 100 runs per task, newest first', async () => {
      const s = make();
      for (let i = 0; i < 105; i++) {
        await s.recordTaskRun({
          taskId: 'daily',
          startedAt: i,
          endedAt: i + 1,
          status: i % 2 ? 'completed' : 'failed',
          durationMs: 1,
          costUsd: 0,
          preview: `run ${i}`,
          ...(i % 2 ? { delivered: true } : { error: 'boom' }),
        });
      }
      await s.recordTaskRun({ taskId: 'other', startedAt: 1, endedAt: 2, status: 'skipped', durationMs: 0, costUsd: 0, preview: '' });
      const runs = await s.taskRuns('daily', 1000);
      expect(runs).toHaveLength(100);
      expect(runs[0]).toEqual({
        taskId: 'daily',
        startedAt: 104,
        endedAt: 105,
        status: 'failed',
        durationMs: 1,
        costUsd: 0,
        preview: 'run 104',
        error: 'boom',
      });
      expect(runs[1]).toMatchObject({ preview: 'run 103', delivered: true });
      expect(runs.at(-1)?.preview).toBe('run 5');
      expect(await s.taskRuns('other', 5)).toEqual([{ taskId: 'other', startedAt: 1, endedAt: 2, status: 'skipped', durationMs: 0, costUsd: 0, preview: '' }]);
      await s.close();
    });

    it('takes each scheduled time of a task once, whoever asks, and forgets times older than a week', async () => {
      const s = make();
      const at = Date.UTC(2026, 10, 25, 12, 0);
      const claims = await Promise.all(Array.from({ length: 5 }, () => s.claimTaskSlot('daily', at)));
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await s.claimTaskSlot('daily', at)).toBe(false);
      expect(await s.claimTaskSlot('other', at)).toBe(true); // per task
      expect(await s.claimTaskSlot('daily', at + 60_000)).toBe(true);
      // A claim eight days on forgets the old times; the old one could be claimed again (nothing replays it).
      expect(await s.claimTaskSlot('daily', at + 8 * 86_400_000)).toBe(true);
      expect(await s.claimTaskSlot('daily', at)).toBe(true);
      await s.close();
    });

    it('remembers chats per channel with the newest message seen and the fetch cursor', async () => {
      const s = make();
      await s.noteChat({ channel: 'channel_d', chatId: 'C1', chatType: 'group', lastSeen: 50 });
      await s.noteChat({ channel: 'channel_d', chatId: 'C1', chatType: 'group', lastSeen: 20 });
      await s.noteChat({ channel: 'channel_d', chatId: 'D1', chatType: 'direct', lastSeen: 10 });
      await s.noteChat({ channel: 'channel_f', chatId: 'X', chatType: 'group', lastSeen: 1 });
      await s.setChatFetched('channel_d', 'C1', 99);
      expect(await s.knownChats('channel_d')).toEqual([
        { channel: 'channel_d', chatId: 'C1', chatType: 'group', lastSeen: 50, fetchedUntil: 99 },
        { channel: 'channel_d', chatId: 'D1', chatType: 'direct', lastSeen: 10 },
      ]);
      await s.close();
    });
  });

  describe(`${name} store: access control (one contract)`, () => {
    const ask = (id: string, createdAt: number, channel = 'chat') => ({ channel, kind: 'sender' as const, id, label: `name ${id}`, createdAt });
    const opts = (code: string) => ({ code, ttlMs: 1_000, maxPending: 2 });

    it('opens one live pairing per sender, at most maxPending per channel; expired ones make room and free their code', async () => {
      const s = make();
      expect(await s.openPairing(ask('a', 0), opts('AAAAAAAA'))).toEqual({
        status: 'created',
        request: { code: 'AAAAAAAA', channel: 'chat', kind: 'sender', id: 'a', label: 'name a', createdAt: 0, expiresAt: 1_000 },
      });
      expect(await s.openPairing(ask('a', 500), opts('XXXXXXXX'))).toMatchObject({ status: 'existing', request: { code: 'AAAAAAAA', createdAt: 0 } });
      expect(await s.openPairing(ask('b', 500), opts('AAAAAAAA'))).toEqual({ status: 'collision' });
      expect(await s.openPairing(ask('b', 500), opts('BBBBBBBB'))).toMatchObject({ status: 'created' });
      expect(await s.openPairing(ask('c', 600), opts('CCCCCCCC'))).toEqual({ status: 'full' });
      expect(await s.openPairing(ask('c', 600, 'other'), opts('CCCCCCCC'))).toMatchObject({ status: 'created' }); // per channel
      // The same id as a chat is another subject.
      expect(await s.openPairing({ ...ask('a', 600), kind: 'chat' }, { ...opts('DDDDDDDD'), maxPending: 5 })).toMatchObject({ status: 'created' });
      expect((await s.pairingRequests(999)).map((r) => r.code)).toEqual(['AAAAAAAA', 'BBBBBBBB', 'CCCCCCCC', 'DDDDDDDD']);
      expect((await s.pairingRequests(1_000)).map((r) => r.code)).toEqual(['BBBBBBBB', 'CCCCCCCC', 'DDDDDDDD']);
      expect(await s.openPairing(ask('e', 1_000), { ...opts('AAAAAAAA'), maxPending: 9 })).toMatchObject({ status: 'created' });
      await s.close();
    });

    it('approve turns a live request into a grant once; deny drops it; expired codes do neither; revoke removes both kinds', async () => {
      const s = make();
      await s.openPairing(ask('a', 0), opts('AAAAAAAA'));
      await s.openPairing({ channel: 'chat', kind: 'chat', id: 'g', createdAt: 0 }, opts('GGGGGGGG'));
      await s.openPairing(ask('x', 0, 'other'), opts('XXXXXXXX'));
      expect(await s.approvePairing('AAAAAAAA', 1_000, 'cli')).toBeUndefined(); // expired at 1000
      await s.openPairing(ask('a', 1_000), opts('A2A2A2A2'));
      expect(await s.isGranted('chat', 'sender', 'a')).toBe(false);
      expect(await s.approvePairing('A2A2A2A2', 1_500, 'cli')).toEqual({
        channel: 'chat',
        kind: 'sender',
        id: 'a',
        label: 'name a',
        approvedAt: 1_500,
        approvedBy: 'cli',
      });
      expect(await s.approvePairing('A2A2A2A2', 1_500, 'cli')).toBeUndefined();
      expect(await s.isGranted('chat', 'sender', 'a')).toBe(true);
      expect(await s.isGranted('chat', 'chat', 'a')).toBe(false);
      expect(await s.isGranted('other', 'sender', 'a')).toBe(false);
      await s.openPairing({ channel: 'chat', kind: 'chat', id: 'a', createdAt: 1_500 }, opts('CHATCHAT'));
      expect(await s.approvePairing('CHATCHAT', 1_600, 'http')).toEqual({ channel: 'chat', kind: 'chat', id: 'a', approvedAt: 1_600, approvedBy: 'http' });
      await s.openPairing(ask('b', 1_600), opts('BBBBBBBB'));
      expect(await s.denyPairing('BBBBBBBB', 1_700)).toMatchObject({ code: 'BBBBBBBB', id: 'b' });
      expect(await s.denyPairing('BBBBBBBB', 1_700)).toBeUndefined();
      expect(await s.pairingRequests(1_700)).toEqual([]);
      expect((await s.accessGrants()).map((g) => `${g.kind}:${g.id}`)).toEqual(['sender:a', 'chat:a']);
      expect((await s.revokeGrant('chat', 'a')).map((g) => g.kind)).toEqual(['chat', 'sender']);
      expect(await s.revokeGrant('chat', 'a')).toEqual([]);
      expect(await s.accessGrants()).toEqual([]);
      await s.close();
    });

    it('keeps refused records with their reason, and the cost of each local day beyond the bounded activity list', async () => {
      const s = make();
      const noon = new Date(2024, 4, 10, 12).getTime();
      await s.recordActivity(activity({ ts: new Date(noon).toISOString(), costUsd: 0.25 }));
      await s.recordActivity(activity({ ts: new Date(noon + 3_600_000).toISOString(), costUsd: 0.5 }));
      await s.recordActivity(activity({ ts: new Date(noon + 86_400_000).toISOString(), costUsd: 1 }));
      await s.recordActivity(activity({ status: 'refused', refused: 'not_paired', costUsd: 0, error: 'not paired', ts: new Date(noon).toISOString() }));
      expect(await s.dailyCost('2024-05-10')).toBeCloseTo(0.75);
      expect(await s.dailyCost('2024-05-11')).toBe(1);
      expect(await s.dailyCost('2024-05-12')).toBe(0);
      expect(await s.recentActivity(10, { statuses: ['refused'] })).toEqual([
        expect.objectContaining({ status: 'refused', refused: 'not_paired', error: 'not paired' }),
      ]);
      expect((await s.recentActivity(10, { statuses: ['completed'] })).every((r) => r.refused === undefined)).toBe(true);
      for (let i = 0; i < ACTIVITY_KEPT + 5; i++) await s.recordActivity(activity({ ts: new Date(noon).toISOString(), costUsd: 0 }));
      expect(await s.dailyCost('2024-05-10')).toBeCloseTo(0.75); // the records are gone, the day's cost is not
      await s.close();
    });
  });

  describe(`${name} store: what strangers can fill, and budget holds (one contract, issue 29)`, () => {
    it("strangers' records are kept apart: a flood of them pushes out neither escalations nor approved people's records", async () => {
      const s = make();
      await s.recordActivity(activity({ messagePreview: 'please call me', escalated: true }));
      for (let i = 0; i < 20; i++) await s.recordActivity(activity({ messagePreview: `approved ${i}` }));
      await s.recordActivity(activity({ status: 'refused', refused: 'rate_limited', messagePreview: 'slow down', costUsd: 0 }));
      const flood = STRANGER_ACTIVITY_KEPT + 300;
      for (let i = 0; i < flood; i++) {
        const refused = i % 2 ? ('not_allowed' as const) : ('not_paired' as const);
        await s.recordActivity(activity({ status: 'refused', refused, messagePreview: `stranger ${i}`, sender: `x${i}`, costUsd: 0 }));
      }
      expect(await s.recentActivity(10, { escalated: true })).toEqual([expect.objectContaining({ messagePreview: 'please call me' })]);
      const all = await s.recentActivity(ACTIVITY_KEPT + STRANGER_ACTIVITY_KEPT);
      const strangers = all.filter((r) => r.refused === 'not_paired' || r.refused === 'not_allowed');
      expect(strangers).toHaveLength(STRANGER_ACTIVITY_KEPT);
      expect(strangers[0]?.messagePreview).toBe(`stranger ${flood - 1}`);
      expect(all.filter((r) => r.messagePreview.startsWith('approved '))).toHaveLength(20);
      expect(all.some((r) => r.refused === 'rate_limited')).toBe(true);
      expect((await s.metrics()).totalMessages).toBe(22 + flood); // counted all the same
      await s.close();
    });

    it('counts live pairing codes per requester too: one account cannot take every slot of a channel', async () => {
      const s = make();
      const opts = (code: string) => ({ code, ttlMs: 1_000, maxPending: 3, maxPerRequester: 1 });
      const dm = { channel: 'chat', kind: 'sender' as const, id: 'eve', requester: 'eve', createdAt: 0 };
      expect(await s.openPairing(dm, opts('AAAAAAAA'))).toMatchObject({ status: 'created', request: { requester: 'eve' } });
      // Eve mentions the bot in two groups: no more codes for her while hers waits.
      expect(await s.openPairing({ channel: 'chat', kind: 'chat', id: 'g1', requester: 'eve', createdAt: 10 }, opts('BBBBBBBB'))).toEqual({
        status: 'requester_full',
      });
      expect(await s.openPairing({ ...dm, createdAt: 20 }, opts('CCCCCCCC'))).toMatchObject({ status: 'existing', request: { code: 'AAAAAAAA' } });
      // Someone else still finds room, and asking in the same group gets the group's code.
      expect(await s.openPairing({ channel: 'chat', kind: 'chat', id: 'g1', requester: 'bob', createdAt: 30 }, opts('DDDDDDDD'))).toMatchObject({
        status: 'created',
      });
      expect(await s.openPairing({ channel: 'chat', kind: 'chat', id: 'g1', requester: 'eve', createdAt: 40 }, opts('EEEEEEEE'))).toMatchObject({
        status: 'existing',
        request: { code: 'DDDDDDDD', requester: 'bob' },
      });
      // Per channel: Eve may ask on another; and once hers expired, here again.
      expect(await s.openPairing({ ...dm, channel: 'other', createdAt: 50 }, opts('FFFFFFFF'))).toMatchObject({ status: 'created' });
      expect(await s.openPairing({ channel: 'chat', kind: 'chat', id: 'g2', requester: 'eve', createdAt: 1_000 }, opts('GGGGGGGG'))).toMatchObject({
        status: 'created',
      });
      await s.close();
    });

    it("holds the day's budget for running turns: a hold is taken while spent + held is below the cap, let go, and expires", async () => {
      const s = make();
      const noon = new Date(2024, 4, 10, 12).getTime();
      const day = '2024-05-10';
      await s.recordActivity(activity({ ts: new Date(noon).toISOString(), costUsd: 0.26 }));
      const hold = (id: string, amountUsd: number, expiresAt = noon + 60_000, on = day) => s.holdBudget({ id, day: on, amountUsd, expiresAt }, 0.3, noon);
      expect(await hold('t1', 0.02)).toEqual({ held: true });
      expect(await hold('t2', 0.02)).toEqual({ held: true }); // 0.26 + 0.02 < 0.30
      const refused = await hold('t3', 0.02);
      expect(refused).toMatchObject({ held: false });
      expect(refused.held === false && refused.spentUsd).toBeCloseTo(0.26);
      expect(refused.held === false && refused.heldUsd).toBeCloseTo(0.04);
      await s.releaseBudget('t1');
      await s.releaseBudget('t1'); // twice is no error
      expect(await hold('t3', 0.02)).toEqual({ held: true });
      // Another day's holds do not count; an expired hold (its process died) makes room.
      expect(await hold('d2', 0.5, noon + 60_000, '2024-05-11')).toEqual({ held: true });
      expect(await s.holdBudget({ id: 't4', day, amountUsd: 0.02, expiresAt: noon + 120_000 }, 0.3, noon + 60_000)).toEqual({ held: true });
      await s.close();
    });
  });

  describe(`${name} store: named sessions per chat (one contract)`, () => {
    const chat = 'channel_e:dm:1001';
    const named = (name: string, createdAt: number, current = false) => ({
      chatKey: chat,
      name,
      sessionKey: `${chat}#${name.toLowerCase()}`,
      createdAt,
      current,
    });

    it('adds sessions (one current per chat), switches, renames and removes them; names ignore case', async () => {
      const s = make();
      expect(await s.chatSessions(chat)).toEqual([]);
      expect(await s.addChatSession({ ...named('main', 1, true), sessionKey: chat })).toBe(true);
      expect(await s.addChatSession(named('Ideas', 2, true))).toBe(true);
      expect((await s.chatSessions(chat)).map((c) => [c.name, c.current])).toEqual([
        ['main', false],
        ['Ideas', true],
      ]);
      // Taken name (any case) or taken key: refused, nothing changes.
      expect(await s.addChatSession(named('IDEAS', 3))).toBe(false);
      expect(await s.addChatSession({ ...named('other', 3), sessionKey: chat })).toBe(false);
      expect(await s.switchChatSession(chat, 'MAIN')).toBe(true);
      expect((await s.chatSessions(chat)).find((c) => c.current)?.name).toBe('main');
      expect(await s.switchChatSession(chat, 'nope')).toBe(false);
      expect(await s.renameChatSession(chat, 'ideas', 'plans')).toBe(true);
      expect(await s.renameChatSession(chat, 'plans', 'Main')).toBe(false);
      expect(await s.renameChatSession(chat, 'plans', 'PLANS')).toBe(true); // a change of case of its own name
      expect((await s.chatSessions(chat)).map((c) => [c.name, c.sessionKey])).toEqual([
        ['main', chat],
        ['PLANS', `${chat}#ideas`],
      ]);
      expect(await s.removeChatSession(chat, 'plans')).toMatchObject({ name: 'PLANS', sessionKey: `${chat}#ideas` });
      expect(await s.removeChatSession(chat, 'plans')).toBeUndefined();
      expect((await s.allChatSessions()).map((c) => c.name)).toEqual(['main']);
      await s.close();
    });

    it('counts turns per engine session; pruning removes named sessions left without an engine session', async () => {
      const s = make();
      await s.saveSession({ key: `${chat}#busy`, engine: 'e', sessionId: 'x', createdAt: 1, updatedAt: 5_000 });
      await s.countSessionTurn(`${chat}#busy`);
      await s.countSessionTurn(`${chat}#busy`);
      await s.countSessionTurn('no-such-key');
      await s.saveSession({ key: `${chat}#busy`, engine: 'e', sessionId: 'y', createdAt: 1, updatedAt: 6_000 });
      expect((await s.getSession(`${chat}#busy`))?.turns).toBe(2);
      await s.saveSession({ key: `${chat}#idle`, engine: 'e', sessionId: 'z', createdAt: 1, updatedAt: 1_000 });
      await s.addChatSession(named('busy', 1));
      await s.addChatSession(named('idle', 1));
      await s.addChatSession(named('empty-old', 1)); // never used, created before the cutoff
      await s.addChatSession(named('empty-new', 9_000, true)); // never used yet, created after it
      expect(await s.pruneSessions(2_000)).toBe(1);
      expect((await s.chatSessions(chat)).map((c) => c.name)).toEqual(['busy', 'empty-new']);
      await s.close();
    });
  });
}
