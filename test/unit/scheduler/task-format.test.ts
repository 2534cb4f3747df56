import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatCost, formatDuration, formatLocalTime, formatRunHistory, formatTaskList } from '../../../src/core/scheduler/task-format.js';
import { formatTable, measureWidth } from '../../../src/core/util/text-table.js';
import type { TaskRun } from '../../../src/core/store/types.js';

describe('formatTable', () => {
  it('pads every column but the last to its widest cell, right-aligns the asked ones, no trailing spaces', () => {
    const lines = formatTable(
      ['A', 'NUM', 'LAST'],
      [
        ['x', '1', 'short'],
        ['longer', '1234', 'z'],
      ],
      { alignRight: [1] },
    );
    expect(lines).toEqual(['A        NUM  LAST', 'x          1  short', 'longer  1234  z']);
    expect(lines.every((l) => !l.endsWith(' '))).toBe(true);
  });

  it('counts CJK characters as two columns', () => {
    expect(measureWidth('日报')).toBe(4);
    const lines = formatTable(
      ['NAME', 'X'],
      [
        ['日报', 'a'],
        ['abcd', 'b'],
      ],
    );
    expect(lines.map((l) => measureWidth(l.slice(0, l.lastIndexOf(' ') + 1)))).toEqual([6, 6, 6]);
  });

  it('property: every row puts column k at the same display offset', () => {
    const cell = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !/\s/.test(s));
    fc.assert(
      fc.property(fc.array(fc.tuple(cell, cell, cell), { minLength: 1, maxLength: 6 }), (rows) => {
        const lines = formatTable(['AA', 'BB', 'CC'], rows);
        const offsets = lines.map((line, i) => {
          const r = i === 0 ? ['AA', 'BB', 'CC'] : rows[i - 1]!;
          const second = measureWidth(line.slice(0, line.indexOf(`  ${r[1]}`) + 2));
          return second;
        });
        expect(new Set(offsets).size).toBe(1);
      }),
    );
  });
});

describe('cron list / history text', () => {
  const run = (over: Partial<TaskRun>): TaskRun => ({
    taskId: 't',
    startedAt: new Date(2026, 2, 10, 9, 0, 0).getTime(),
    endedAt: new Date(2026, 2, 10, 9, 0, 3).getTime(),
    status: 'completed',
    durationMs: 3210,
    costUsd: 0.01234,
    preview: 'All tickets\nanswered',
    ...over,
  });

  it('history has a header with a COST column, and the cost, duration and local start of each run', () => {
    const lines = formatRunHistory([run({}), run({ status: 'failed', durationMs: 450, costUsd: 0, preview: '', error: 'model down', delivered: false })]);
    expect(lines[0]).toMatch(/^STARTED\s+STATUS\s+DURATION\s+COST\s+DELIVERED\s+REPLY \/ ERROR$/);
    expect(lines[1]).toMatch(/^2026-03-10 09:00:00\s+completed\s+3\.2 s\s+\$0\.0123\s+-\s+All tickets answered$/);
    expect(lines[2]).toMatch(/^2026-03-10 09:00:00\s+failed\s+450 ms\s+-\s+no\s+error: model down$/);
    // the COST column ends at the same place on every line (right-aligned)
    const ends = lines.map((l, i) => (i === 0 ? l.indexOf('COST') + 4 : l.indexOf(i === 1 ? '$0.0123' : ' -  ') + (i === 1 ? 7 : 2)));
    expect(new Set(ends).size).toBe(1);
  });

  it('list: header and one aligned row per task; next/last run in local time', () => {
    const next = new Date(2026, 2, 11, 9, 0, 0);
    const lines = formatTaskList([
      { id: 'daily-report', name: 'Daily report', schedule: '0 9 * * 1-5', enabled: true, nextRun: next.toISOString(), lastRun: null },
      { id: 'q', name: 'Quiet', schedule: '*/30 * * * *', enabled: false, nextRun: null, lastRun: { startedAt: next.toISOString(), status: 'silent' } },
    ]);
    expect(lines).toHaveLength(3);
    const nameAt = lines[0]!.indexOf('NAME');
    expect(lines[1]!.indexOf('Daily report')).toBe(nameAt);
    expect(lines[2]!.indexOf('Quiet')).toBe(nameAt);
    for (const h of ['ENABLED', 'SCHEDULE', 'NEXT RUN', 'LAST RUN']) {
      const at = lines[0]!.indexOf(h);
      expect(lines.slice(1).every((l) => l[at - 1] === ' ' && l[at] !== ' ')).toBe(true);
    }
    expect(lines[1]).toContain('2026-03-11 09:00:00');
    expect(lines[2]).toContain('2026-03-11 09:00:00 silent');
  });

  it('durations, costs and times', () => {
    expect([formatDuration(0), formatDuration(999), formatDuration(12_345), formatDuration(245_000)]).toEqual(['0 ms', '999 ms', '12.3 s', '4m 05s']);
    expect([formatCost(0), formatCost(0.5), formatCost(Number.NaN)]).toEqual(['-', '$0.5000', '-']);
    expect(formatLocalTime(new Date(2026, 0, 2, 3, 4, 5).getTime())).toBe('2026-01-02 03:04:05');
  });
});
