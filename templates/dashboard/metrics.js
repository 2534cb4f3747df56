// Message statistics and cost: the totals, messages per source, and the chart over time.
import { $, api, el, formatCost, formatDuration } from './api.js';
import { createTimelineChart, formatBucketSize } from './chart.js';

const RANGE_TEXT = { '1h': 'last hour', '24h': 'last 24 hours', '7d': 'last 7 days' };

export function createMetricsPanel({ labelOf }) {
  const chart = createTimelineChart($('timeline'));

  return {
    render(m) {
      $('m-total').textContent = String(m.totalMessages);
      $('m-cost').textContent = formatCost(m.totalCostUsd);
      $('m-avg').textContent = formatDuration(m.avgDurationMs);
      const rows = Object.entries(m.messagesBySource).sort((a, b) => b[1] - a[1]);
      if (rows.length === 0) return $('m-sources').replaceChildren(el('li', { class: 'empty', text: 'no messages yet' }));
      $('m-sources').replaceChildren(
        ...rows.map(([source, n]) =>
          el('li', { attrs: { 'data-source': source } }, [el('span', { text: labelOf(source) }), el('strong', { text: String(n) })]),
        ),
      );
    },
    async loadTimeline() {
      const range = $('timeline-range').value;
      const t = await api(`/api/metrics/timeline?range=${encodeURIComponent(range)}`);
      chart.show(t);
      $('timeline-title').textContent = `Messages ${formatBucketSize(t.bucketMs)}`;
      const total = t.buckets.reduce((n, b) => n + b.count, 0);
      const cost = formatCost(t.buckets.reduce((n, b) => n + b.costUsd, 0));
      $('timeline-summary').textContent = `${total} message${total === 1 ? '' : 's'}, ${cost} in the ${RANGE_TEXT[range] ?? range}`;
    },
  };
}
