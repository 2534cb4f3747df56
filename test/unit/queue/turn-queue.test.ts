import { describe, expect, it } from 'vitest';
import { createTurnQueue, type QueueLimits } from '../../../src/core/queue/turn-queue.js';

describe('turn queue', () => {
  it('runs one turn per key in arrival order, others wait', async () => {
    const q = createTurnQueue(() => ({ maxConcurrent: 10, maxQueuePerSession: 3 }));
    const order: string[] = [];
    const tickets = ['a', 'b', 'c'].map((name) => {
      const a = q.admit('k');
      if (!a.ok) throw new Error('rejected');
      void a.ticket.ready.then(() => order.push(name));
      return a.ticket;
    });
    await Promise.resolve();
    expect(order).toEqual(['a']);
    expect(q.stats()).toEqual({ running: 1, waiting: 2, keys: 1 });
    tickets[0]?.release();
    await Promise.resolve();
    expect(order).toEqual(['a', 'b']);
    tickets[1]?.release();
    tickets[2]?.release();
    expect(q.size()).toBe(0);
  });

  it('different keys run at once', async () => {
    const q = createTurnQueue(() => ({ maxConcurrent: 10, maxQueuePerSession: 3 }));
    const a = q.admit('a');
    const b = q.admit('b');
    expect(a.ok && b.ok).toBe(true);
    expect(q.isRunning('a') && q.isRunning('b')).toBe(true);
  });

  it('rejects past maxQueuePerSession waiting behind the running turn', () => {
    const q = createTurnQueue(() => ({ maxConcurrent: 10, maxQueuePerSession: 2 }));
    expect([1, 2, 3].map(() => q.admit('k').ok)).toEqual([true, true, true]);
    expect(q.admit('k')).toEqual({ ok: false, reason: 'queue_full', limit: 2 });
    expect(q.admit('other').ok).toBe(true);
  });

  it('rejects past maxConcurrent admitted turns across keys, and reads limits live', () => {
    const limits: QueueLimits = { maxConcurrent: 2, maxQueuePerSession: 5 };
    const q = createTurnQueue(() => limits);
    const first = q.admit('a');
    expect(q.admit('b').ok).toBe(true);
    expect(q.admit('c')).toEqual({ ok: false, reason: 'busy', limit: 2 });
    limits.maxConcurrent = 3;
    expect(q.admit('c').ok).toBe(true);
    if (first.ok) first.ticket.release();
    limits.maxConcurrent = 1;
    expect(q.admit('d')).toEqual({ ok: false, reason: 'busy', limit: 1 });
  });

  it('maxConcurrent counts the turns waiting behind their session as well as the running ones', () => {
    const q = createTurnQueue(() => ({ maxConcurrent: 2, maxQueuePerSession: 5 }));
    expect(q.admit('a').ok).toBe(true);
    expect(q.admit('a').ok).toBe(true);
    expect(q.stats()).toEqual({ running: 1, waiting: 1, keys: 1 });
    expect(q.admit('b')).toEqual({ ok: false, reason: 'busy', limit: 2 });
  });

  it('a waiting turn that gives up leaves no trace; release is idempotent', async () => {
    const q = createTurnQueue(() => ({ maxConcurrent: 10, maxQueuePerSession: 3 }));
    const running = q.admit('k');
    const waiting = q.admit('k');
    if (!running.ok || !waiting.ok) throw new Error('rejected');
    waiting.ticket.release();
    waiting.ticket.release();
    expect(q.size()).toBe(1);
    running.ticket.release();
    expect(q.stats()).toEqual({ running: 0, waiting: 0, keys: 0 });
  });

  it('maxTurnsPerPerson: one person holds at most that many turns across their chats; others and unlimited callers still get in', async () => {
    const q = createTurnQueue(() => ({ maxConcurrent: 4, maxQueuePerSession: 3, maxTurnsPerPerson: 2 }));
    const dm = q.admit('tg:dm:1', 'tg:1');
    const group = q.admit('tg:group:a', 'tg:1');
    expect(dm.ok && group.ok).toBe(true);
    expect(q.admit('tg:group:b', 'tg:1')).toEqual({ ok: false, reason: 'person_busy', limit: 2 });
    // Another person, and the owner (no person), are not held back by it.
    expect(q.admit('tg:dm:2', 'tg:2').ok).toBe(true);
    expect(q.admit('http').ok).toBe(true);
    // A waiting caller gets in once one of the person's own turns ends, without taking a slot meanwhile.
    const later = q.admitWhenFree('tg:group:b', undefined, 'tg:1');
    expect(q.size()).toBe(4);
    if (dm.ok) dm.ticket.release();
    expect((await later).ok).toBe(true);
    expect(q.admit('tg:group:c', 'tg:1')).toMatchObject({ ok: false, reason: 'person_busy' });
  });
});
