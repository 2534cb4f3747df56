import { describe, expect, it } from 'vitest';
import { parsePrometheusText, valueOf } from '../../helpers/prometheus-text.js';

/** The strict reader the /metrics tests use must itself refuse what the exposition format does not allow. */
describe('parsePrometheusText (test helper)', () => {
  const good = [
    '# HELP a_total Things, with \\\\ and \\n escaped.',
    '# TYPE a_total counter',
    'a_total{kind="x\\"y",other="1"} 3',
    'a_total 1e3',
    '# TYPE h histogram',
    'h_bucket{le="1"} 1',
    'h_bucket{le="+Inf"} 2',
    'h_sum 3.5',
    'h_count 2',
    '# TYPE g gauge',
    'g NaN',
    'g{x="1"} Nan',
    '',
  ].join('\n');

  it('reads families, labels with escapes, floats, NaN in any case and histograms', () => {
    const m = parsePrometheusText(good);
    expect(m.get('a_total')?.help).toBe('Things, with \\ and \n escaped.');
    expect(valueOf(m, 'a_total', { kind: 'x"y', other: '1' })).toBe(3);
    expect(valueOf(m, 'a_total')).toBe(1000);
    expect(valueOf(m, 'h', {}, 'h_count')).toBe(2);
    expect(valueOf(m, 'g')).toBeNaN();
  });

  it.each([
    ['no final newline', 'a 1'],
    ['garbage line', 'a 1\nnot a sample\n'],
    ['bad value', 'a one\n'],
    ['bad label', 'a{1x="y"} 1\n'],
    ['unterminated labels', 'a{x="y} 1\n'],
    ['repeated label', 'a{x="1",x="2"} 1\n'],
    ['bad escape', 'a{x="\\t"} 1\n'],
    ['series twice', 'a 1\na 2\n'],
    ['family split', 'a{x="1"} 1\nb 1\na{x="2"} 1\n'],
    ['TYPE after samples', 'a 1\n# TYPE a counter\n'],
    ['negative counter', '# TYPE a counter\na -1\n'],
    ['histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n'],
    ['histogram not cumulative', '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'],
    ['histogram count differs', '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n'],
  ])('refuses %s', (_, text) => {
    expect(() => parsePrometheusText(text)).toThrow();
  });
});
