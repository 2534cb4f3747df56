import { describe, expect, it } from 'vitest';
import { createLiveMetrics, TURN_SECONDS_BOUNDS } from '../../../src/core/metrics/live-metrics.js';
import { countStoreErrors } from '../../../src/core/store/counted-store.js';

describe('live metrics', () => {
  it('counts turns by engine, source and outcome with their cost, and puts durations in buckets by engine', () => {
    const m = createLiveMetrics({ now: () => 1_000 });
    m.turnEnded({ engine: 'e1', source: 'http', outcome: 'completed', durationMs: 1_500, firstTextMs: 400, costUsd: 0.5 });
    m.turnEnded({ engine: 'e1', source: 'http', outcome: 'completed', durationMs: 2_000, costUsd: 0.25 });
    m.turnEnded({ engine: 'e1', source: 'cron', outcome: 'refused', costUsd: 0 });
    m.turnEnded({ engine: 'e1', source: 'http', outcome: 'failed', durationMs: 5_000_000, costUsd: 0 });
    const s = m.snapshot();
    expect(s.since).toBe(1_000);
    expect(s.turns).toEqual([
      { engine: 'e1', source: 'http', outcome: 'completed', count: 2, costUsd: 0.75 },
      { engine: 'e1', source: 'cron', outcome: 'refused', count: 1, costUsd: 0 },
      { engine: 'e1', source: 'http', outcome: 'failed', count: 1, costUsd: 0 },
    ]);
    const [series] = s.turnSeconds.series;
    expect(series?.labels).toEqual({ engine: 'e1' });
    expect(series?.count).toBe(3); // the refused turn never ran
    expect(series?.sum).toBeCloseTo(5003.5);
    // 1.5 s and 2 s are in the bucket up to 2 s (le is inclusive); 5000 s is above every bound.
    expect(series?.counts[TURN_SECONDS_BOUNDS.indexOf(2)]).toBe(2);
    expect(series?.counts[TURN_SECONDS_BOUNDS.length]).toBe(1);
    expect(s.firstTextSeconds.series.map((x) => x.count)).toEqual([1]);
  });

  it('counts messages per channel and direction, and forgets the processes of a turn that ended', () => {
    const m = createLiveMetrics();
    m.channelMessage('c', 'in');
    m.channelMessage('c', 'out');
    m.channelMessage('c', 'out');
    m.turnProcesses('t1', [{ pid: process.pid, start: 'not the real start time' }]);
    expect(m.snapshot().channels).toEqual({ c: { in: 1, out: 2 } });
    expect(m.snapshot().engineProcesses).toBe(0); // same pid, another process (start time differs)
    m.turnProcesses('t1', undefined);
    expect(m.snapshot().engineProcesses).toBe(0);
  });
});

describe('countStoreErrors', () => {
  it('counts rejected and thrown operations by name and passes every outcome on unchanged', async () => {
    const errors: string[] = [];
    const store = countStoreErrors(
      {
        plain: 42,
        ok: async () => 'fine',
        rejects: async () => {
          throw new Error('disk full');
        },
        throws: () => {
          throw new Error('closed');
        },
      },
      (op) => errors.push(op),
    );
    expect(store.plain).toBe(42);
    expect(await store.ok()).toBe('fine');
    await expect(store.rejects()).rejects.toThrow('disk full');
    expect(() => store.throws()).toThrow('closed');
    expect(errors).toEqual(['rejects', 'throws']);
  });
});
