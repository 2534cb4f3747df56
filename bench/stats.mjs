// Statistics and number formatting shared by the benchmarks.

export const sorted = (xs) => [...xs].sort((a, b) => a - b);

/** The q-quantile by the nearest-rank method; NaN for no samples. */
export const quantile = (xs, q) => {
  const s = sorted(xs);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] : NaN;
};

export const median = (xs) => {
  const s = sorted(xs);
  const m = s.length >> 1;
  return s.length ? (s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2) : NaN;
};

export const ms = (x) => `${x.toFixed(1).padStart(7)} ms`;
