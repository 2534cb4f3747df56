/** Plain-text tables for terminal output: a header row, columns padded to line up, two spaces apart. */

export interface TableOptions {
  /** Indexes of columns to right-align (numbers, durations, money). */
  alignRight?: readonly number[];
}

/** One line per row, header first. The last column is never padded, so lines carry no trailing spaces. */
export function formatTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>, opts: TableOptions = {}): string[] {
  const all = [header, ...rows];
  const widths = header.map((_, col) => Math.max(...all.map((r) => measureWidth(r[col] ?? ''))));
  const right = new Set(opts.alignRight ?? []);
  return all.map((r) =>
    header
      .map((_, col) => {
        const cell = r[col] ?? '';
        const pad = ' '.repeat((widths[col] ?? 0) - measureWidth(cell));
        if (right.has(col)) return pad + cell;
        return col === header.length - 1 ? cell : cell + pad;
      })
      .join('  '),
  );
}

/** Terminal columns a string takes: East Asian wide characters and emoji take two. */
export function measureWidth(s: string): number {
  let width = 0;
  for (const ch of s) width += WIDE.test(ch) ? 2 : 1;
  return width;
}

// --- internal ---

const WIDE =
  /[\u1100-\u115F\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uA000-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6\u{1F300}-\u{1F64F}\u{1F900}-\u{1F9FF}\u{20000}-\u{3FFFD}]/u;
