/**
 * Which lines of `after` are lines of `before`, kept in order: a line diff in linear space.
 *
 * Myers' O(ND) algorithm in its linear-space form (the middle snake, divide and conquer), as GNU
 * diff runs it (diffseq.h): the common head and tail are taken off first, lines become integers,
 * and a search that goes past `maxCost` edit steps takes the furthest point it reached as its
 * split, so a file rewritten wholesale costs O((N+M) * maxCost) time, not O(N * M). Within the
 * budget the result is a longest common subsequence (every line that can be kept is); past it,
 * a valid but possibly shorter one. Memory: a few arrays of N+M integers.
 *
 * No package here: none of our dependencies diffs (the `diff` package would).
 */
export interface LineDiffOptions {
  /** Edit steps one split may search before it settles for its best point (default: GNU diff's rule, at least 256). */
  maxCost?: number;
}

/** For each line of `after`, the index of the line of `before` it keeps, or -1 (a new line). */
export function matchLines(before: readonly string[], after: readonly string[], opts: LineDiffOptions = {}): Int32Array {
  const match = new Int32Array(after.length).fill(-1);
  const [x, y] = toIds(before, after);
  let lo = 0;
  while (lo < x.length && lo < y.length && x[lo] === y[lo]) match[lo] = lo++;
  let xhi = x.length;
  let yhi = y.length;
  while (xhi > lo && yhi > lo && x[xhi - 1] === y[yhi - 1]) match[--yhi] = --xhi;
  if (lo < xhi && lo < yhi) new Search(x, y, match, opts.maxCost ?? defaultCost(xhi - lo + yhi - lo)).run(lo, xhi, lo, yhi);
  return match;
}

// --- internal ---

/** GNU diff's bound: about the square root of the diagonals, never under 256. */
function defaultCost(diagonals: number): number {
  let cost = 1;
  for (let d = diagonals; d !== 0; d >>= 2) cost <<= 1;
  return Math.max(256, cost);
}

/** Lines as small integers: equal lines, equal numbers. */
function toIds(before: readonly string[], after: readonly string[]): [Int32Array, Int32Array] {
  const ids = new Map<string, number>();
  const convert = (lines: readonly string[]) =>
    Int32Array.from(lines, (line) => {
      const known = ids.get(line);
      if (known !== undefined) return known;
      ids.set(line, ids.size);
      return ids.size - 1;
    });
  return [convert(before), convert(after)];
}

/** The lowest and highest diagonal a search has reached. */
type Range = readonly [number, number];

interface Split {
  xmid: number;
  ymid: number;
  loMinimal: boolean;
  hiMinimal: boolean;
}

class Search {
  /** Furthest x reached on each diagonal k = x - y, forward and backward, offset by `off`. */
  private readonly fd: Int32Array;
  private readonly bd: Int32Array;
  private readonly off: number;

  constructor(
    private readonly x: Int32Array,
    private readonly y: Int32Array,
    private readonly match: Int32Array,
    private readonly maxCost: number,
  ) {
    this.off = y.length + 1;
    this.fd = new Int32Array(x.length + y.length + 3);
    this.bd = new Int32Array(x.length + y.length + 3);
  }

  /** Match x[xoff, xlim) against y[yoff, ylim); an explicit stack, so no input is too deep for it. */
  run(xoff0: number, xlim0: number, yoff0: number, ylim0: number): void {
    const { x, y, match } = this;
    const stack: Array<[number, number, number, number, boolean]> = [[xoff0, xlim0, yoff0, ylim0, false]];
    for (let next = stack.pop(); next; next = stack.pop()) {
      let [xoff, xlim, yoff, ylim] = next;
      while (xoff < xlim && yoff < ylim && x[xoff] === y[yoff]) match[yoff++] = xoff++;
      while (xoff < xlim && yoff < ylim && x[xlim - 1] === y[ylim - 1]) match[--ylim] = --xlim;
      if (xoff === xlim || yoff === ylim) continue; // only insertions or only deletions are left
      const split = this.middle(xoff, xlim, yoff, ylim, next[4]);
      stack.push([split.xmid, xlim, split.ymid, ylim, split.hiMinimal], [xoff, split.xmid, yoff, split.ymid, split.loMinimal]);
    }
  }

  /**
   * A point on an optimal path through the box (the middle snake), found by searching from both
   * corners at once; past `maxCost` steps, unless `minimal`, the point that got furthest.
   */
  private middle(xoff: number, xlim: number, yoff: number, ylim: number, minimal: boolean): Split {
    const { x, y, fd, bd, off } = this;
    const dmin = xoff - ylim;
    const dmax = xlim - yoff;
    const fmid = xoff - yoff;
    const bmid = xlim - ylim;
    let fmin = fmid;
    let fmax = fmid;
    let bmin = bmid;
    let bmax = bmid;
    const odd = ((fmid - bmid) & 1) !== 0;
    fd[off + fmid] = xoff;
    bd[off + bmid] = xlim;
    for (let c = 1; ; c++) {
      if (fmin > dmin) fd[off + --fmin - 1] = -1;
      else fmin++;
      if (fmax < dmax) fd[off + ++fmax + 1] = -1;
      else fmax--;
      for (let d = fmax; d >= fmin; d -= 2) {
        const tlo = fd[off + d - 1] as number;
        const thi = fd[off + d + 1] as number;
        let px = tlo >= thi ? tlo + 1 : thi;
        let py = px - d;
        while (px < xlim && py < ylim && x[px] === y[py]) {
          px++;
          py++;
        }
        fd[off + d] = px;
        if (odd && bmin <= d && d <= bmax && (bd[off + d] as number) <= px) return { xmid: px, ymid: py, loMinimal: true, hiMinimal: true };
      }
      if (bmin > dmin) bd[off + --bmin - 1] = 0x7fffffff;
      else bmin++;
      if (bmax < dmax) bd[off + ++bmax + 1] = 0x7fffffff;
      else bmax--;
      for (let d = bmax; d >= bmin; d -= 2) {
        const tlo = bd[off + d - 1] as number;
        const thi = bd[off + d + 1] as number;
        let px = tlo < thi ? tlo : thi - 1;
        let py = px - d;
        while (px > xoff && py > yoff && x[px - 1] === y[py - 1]) {
          px--;
          py--;
        }
        bd[off + d] = px;
        if (!odd && fmin <= d && d <= fmax && px <= (fd[off + d] as number)) return { xmid: px, ymid: py, loMinimal: true, hiMinimal: true };
      }
      if (!minimal && c >= this.maxCost) return this.furthest(xoff, xlim, yoff, ylim, [fmin, fmax], [bmin, bmax]);
    }
  }

  /**
   * Too expensive: the forward or backward point that has come furthest. The side it was reached
   * from is then solved exactly (it is at most `maxCost` steps away), the other with the budget.
   */
  private furthest(xoff: number, xlim: number, yoff: number, ylim: number, [fmin, fmax]: Range, [bmin, bmax]: Range): Split {
    const { fd, bd, off } = this;
    let fxybest = -1;
    let fxbest = xoff;
    for (let d = fmax; d >= fmin; d -= 2) {
      let px = Math.min(fd[off + d] as number, xlim);
      let py = px - d;
      if (ylim < py) {
        px = ylim + d;
        py = ylim;
      }
      if (fxybest < px + py) {
        fxybest = px + py;
        fxbest = px;
      }
    }
    let bxybest = Number.MAX_SAFE_INTEGER;
    let bxbest = xlim;
    for (let d = bmax; d >= bmin; d -= 2) {
      let px = Math.max(xoff, bd[off + d] as number);
      let py = px - d;
      if (py < yoff) {
        px = yoff + d;
        py = yoff;
      }
      if (px + py < bxybest) {
        bxybest = px + py;
        bxbest = px;
      }
    }
    return xlim + ylim - bxybest < fxybest - (xoff + yoff)
      ? { xmid: fxbest, ymid: fxybest - fxbest, loMinimal: true, hiMinimal: false }
      : { xmid: bxbest, ymid: bxybest - bxbest, loMinimal: false, hiMinimal: true };
  }
}
