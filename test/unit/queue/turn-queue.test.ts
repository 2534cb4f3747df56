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
});
