import { describe, expect, it } from 'vitest';
import type { NewOutboxEntry, Store } from '../../../src/core/store/types.js';

export const outboxEntry = (over: Partial<NewOutboxEntry> = {}): NewOutboxEntry => ({
  channel: 'channel_e',
  kind: 'reply',
  target: JSON.stringify({ chatId: '42', chatType: 'direct' }),
  targetKey: 'channel_e:42',
  chatKey: 'channel_e:dm:42',
  text: 'hello',
  createdAt: 1_000,
  nextAttemptAt: 1_000,
  ...over,
});

/** The reply outbox's contract, for every store implementation (`make`: a fresh, empty store). */
export function describeOutboxContract(name: string, make: () => Store): void {
  describe(`${name} store: the reply outbox`, () => {
    it('hands out the due entry that leads each conversation, one claimer each, oldest first', async () => {
      const s = make();
      const a1 = await s.addOutboxEntry(outboxEntry({ text: 'a1' }));
      const a2 = await s.addOutboxEntry(outboxEntry({ text: 'a2' }));
      const b1 = await s.addOutboxEntry(outboxEntry({ targetKey: 'channel_e:7', text: 'b1', nextAttemptAt: 5_000 }));
      const c1 = await s.addOutboxEntry(outboxEntry({ targetKey: 'channel_e:8', kind: 'send', target: '8', text: 'c1' }));
      const first = await s.claimOutboxEntries('run-1', 2_000, 62_000, 10);
      expect(first.map((e) => e.id)).toEqual([a1, c1]); // a2 waits behind a1; b1 is not due
      expect(first[0]).toMatchObject({ channel: 'channel_e', kind: 'reply', text: 'a1', attempts: 0, status: 'sending', owner: 'run-1', claimUntil: 62_000 });
      expect(first[1]).toMatchObject({ kind: 'send', target: '8' });
      expect(await s.claimOutboxEntries('run-2', 2_000, 62_000, 10)).toEqual([]);
      expect(await s.finishOutboxEntry(a1, 'run-2')).toBe(false);
      expect(await s.finishOutboxEntry(a1, 'run-1')).toBe(true);
      expect(await s.finishOutboxEntry(a1, 'run-1')).toBe(false);
      expect((await s.claimOutboxEntries('run-2', 6_000, 66_000, 10)).map((e) => e.id)).toEqual([a2, b1]);
      expect(await s.outboxStats()).toEqual({ waiting: 3, oldestAt: 1_000, nextAt: 62_000 });
      await s.close();
    });

    it('a refused entry waits for its next attempt, counted, with why; the conversation waits behind it', async () => {
      const s = make();
      const a1 = await s.addOutboxEntry(outboxEntry({ text: 'a1' }));
      await s.addOutboxEntry(outboxEntry({ text: 'a2', createdAt: 1_500 }));
      await s.claimOutboxEntries('run-1', 1_000, 61_000, 10);
      await s.retryOutboxEntry(a1, 'run-other', 9_999, 'not mine'); // another owner changes nothing
      await s.retryOutboxEntry(a1, 'run-1', 4_000, '429 Too Many Requests');
      expect(await s.outboxStats()).toEqual({ waiting: 2, oldestAt: 1_000, nextAt: 1_000 });
      expect(await s.claimOutboxEntries('run-1', 3_999, 63_999, 10)).toEqual([]);
      const [again] = await s.claimOutboxEntries('run-1', 4_000, 64_000, 10);
      expect(again).toMatchObject({ id: a1, attempts: 1, lastError: '429 Too Many Requests', nextAttemptAt: 4_000, status: 'sending', text: 'a1' });
      // The first parts of a long entry went out: what is left waits.
      await s.retryOutboxEntry(a1, 'run-1', 4_500, 'refused midway', 'the rest');
      expect((await s.claimOutboxEntries('run-1', 4_500, 64_500, 10))[0]).toMatchObject({ id: a1, attempts: 2, text: 'the rest' });
      expect(await s.outboxTargets()).toEqual(['channel_e:42']);
      await s.close();
    });

    it('drops what expired and what a stopped gateway was sending (in doubt), never a live claim', async () => {
      const s = make();
      const old = await s.addOutboxEntry(outboxEntry({ targetKey: 'k1', createdAt: 100, nextAttemptAt: 10_000_000 }));
      const doubt = await s.addOutboxEntry(outboxEntry({ targetKey: 'k2', createdAt: 5_000, nextAttemptAt: 5_000 }));
      const live = await s.addOutboxEntry(outboxEntry({ targetKey: 'k3', createdAt: 5_000, nextAttemptAt: 5_000 }));
      const fresh = await s.addOutboxEntry(outboxEntry({ targetKey: 'k4', createdAt: 5_000, nextAttemptAt: 10_000_000 }));
      await s.claimOutboxEntries('dead-run', 5_000, 6_000, 1); // k2, with a claim that runs out at 6 000
      await s.claimOutboxEntries('live-run', 5_000, 90_000, 1); // k3
      const dropped = await s.dropOutboxEntries(7_000, 1_000);
      expect(dropped.map((d) => [d.id, d.reason])).toEqual([
        [old, 'expired'],
        [doubt, 'in_doubt'],
      ]);
      expect(dropped[1]).toMatchObject({ text: 'hello', chatKey: 'channel_e:dm:42', owner: 'dead-run' });
      expect(await s.finishOutboxEntry(doubt, 'dead-run')).toBe(false);
      expect(await s.dropOutboxEntries(7_000, 1_000)).toEqual([]);
      expect((await s.outboxTargets()).sort()).toEqual(['k3', 'k4']);
      expect(await s.finishOutboxEntry(live, 'live-run')).toBe(true);
      expect(await s.outboxStats()).toEqual({ waiting: 1, oldestAt: 5_000, nextAt: 10_000_000 });
      expect(fresh).toBeGreaterThan(live);
      await s.close();
    });

    it('is empty at first', async () => {
      const s = make();
      expect(await s.outboxStats()).toEqual({ waiting: 0, oldestAt: null, nextAt: null });
      expect(await s.outboxTargets()).toEqual([]);
      await s.close();
    });
  });
}
