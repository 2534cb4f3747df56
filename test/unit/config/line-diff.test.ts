import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchLines } from '../../../src/core/config/line-diff.js';

/** The length of a longest common subsequence, by the quadratic table (the old write-back diff). */
function lcsLength(b: readonly string[], a: readonly string[]): number {
  const row = new Array<number>(a.length + 1).fill(0);
  for (let i = b.length - 1; i >= 0; i--) {
    let diag = 0;
    for (let j = a.length - 1; j >= 0; j--) {
      const below = row[j] as number;
      row[j] = b[i] === a[j] ? diag + 1 : Math.max(below, row[j + 1] as number);
      diag = below;
    }
  }
  return row[0] as number;
}

/** Every kept line is equal to the line it stands for, and the kept lines are in order on both sides; returns how many. */
function expectValid(b: readonly string[], a: readonly string[], match: Int32Array): number {
  expect(match.length).toBe(a.length);
  const wrong: string[] = [];
  let last = -1;
  let kept = 0;
  match.forEach((from, j) => {
    if (from < 0) return;
    if (from <= last || b[from] !== a[j]) wrong.push(`after[${j}] -> before[${from}]`);
    last = from;
    kept++;
  });
  expect(wrong).toEqual([]);
  return kept;
}

// Few distinct lines, so sequences share many of them (and repeat them) as config lines do.
const lines = fc.array(fc.constantFrom('a: 1', 'b: 2', '  - x', '  - y', '# note', '', 'c:'), { maxLength: 60 });

describe('matchLines', () => {
  it('keeps a longest common subsequence (as many lines as the quadratic table keeps)', () => {
    fc.assert(
      fc.property(lines, lines, (b, a) => {
        expect(expectValid(b, a, matchLines(b, a, { maxCost: Number.MAX_SAFE_INTEGER }))).toBe(lcsLength(b, a));
      }),
      { numRuns: 500 },
    );
  });

  it('with the default budget, config-sized inputs still get a longest common subsequence', () => {
    fc.assert(
      fc.property(lines, lines, (b, a) => {
        expect(expectValid(b, a, matchLines(b, a))).toBe(lcsLength(b, a));
      }),
      { numRuns: 300 },
    );
  });

  it('past its budget it settles for fewer kept lines, but every match is still valid', () => {
    fc.assert(
      fc.property(lines, lines, fc.integer({ min: 1, max: 4 }), (b, a, maxCost) => {
        expect(expectValid(b, a, matchLines(b, a, { maxCost }))).toBeLessThanOrEqual(lcsLength(b, a));
      }),
      { numRuns: 500 },
    );
  });

  it('edits scattered through a long file keep every untouched line', () => {
    const b = Array.from({ length: 20_000 }, (_, i) => `line ${i}`);
    const a = b.map((line, i) => (i % 1000 === 7 ? `${line} changed` : line));
    a.splice(5000, 0, 'inserted');
    a.splice(15_000, 3);
    // 20 lines changed, 3 deleted; every other line (all distinct) is kept.
    expect(expectValid(b, a, matchLines(b, a))).toBe(20_000 - 20 - 3);
  });

  it('a file rewritten wholesale is matched within the budget (linear space, no N×M table)', () => {
    // 30,000 × 30,000 lines: the old table would have been 3.6 GB.
    const b = Array.from({ length: 30_000 }, (_, i) => `old ${i % 7}`);
    const a = Array.from({ length: 30_000 }, (_, i) => `new ${i % 5}`);
    a[15_000] = 'old 3';
    expect(expectValid(b, a, matchLines(b, a))).toBe(1);
  });

  it('empty sides and identical sides', () => {
    expect([...matchLines([], ['a'])]).toEqual([-1]);
    expect([...matchLines(['a'], [])]).toEqual([]);
    expect([...matchLines(['a', 'b', 'c'], ['a', 'b', 'c'])]).toEqual([0, 1, 2]);
  });
});
