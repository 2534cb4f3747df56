// Message statistics and cost, and the messages-over-time chart (SVG built node by node: the
// page's CSP allows no inline styles or markup strings, and none are needed).
import { $, api, el, formatCost, formatDuration, renderPairs } from './api.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 600;
const H = 170;
const PAD = { top: 10, right: 8, bottom: 24, left: 30 };

export function renderMetrics(m) {
  $('m-total').textContent = String(m.totalMessages);
  $('m-cost').textContent = formatCost(m.totalCostUsd);
  $('m-avg').textContent = formatDuration(m.avgDurationMs);
  const rows = Object.entries(m.messagesBySource).sort((a, b) => b[1] - a[1]);
  renderPairs(
    $('m-sources'),
    rows.map(([source, n]) => [source, String(n)]),
    'no messages yet',
  );
}

export async function loadTimeline() {
  const range = $('timeline-range').value;
  const t = await api(`/api/metrics/timeline?range=${encodeURIComponent(range)}`);
  drawChart($('timeline'), t);
  const total = t.buckets.reduce((n, b) => n + b.count, 0);
  $('timeline-summary').textContent =
    `${total} message${total === 1 ? '' : 's'}, ${formatCost(t.buckets.reduce((n, b) => n + b.costUsd, 0))} in the last ${range}`;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function label(start, bucketMs) {
  const d = new Date(start);
  if (bucketMs >= 6 * 3_600_000) return `${d.getMonth() + 1}/${d.getDate()} ${String(d.getHours()).padStart(2, '0')}h`;
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

function drawChart(host, t) {
  const max = Math.max(1, ...t.buckets.map((b) => b.count));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const slot = innerW / t.buckets.length;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': `Messages per ${t.bucketMs / 60_000} minutes` });
  root.append(svg('line', { x1: PAD.left, y1: PAD.top + innerH, x2: W - PAD.right, y2: PAD.top + innerH, class: 'axis' }));
  root.append(svg('text', { x: PAD.left - 4, y: PAD.top + 8, class: 'tick end' }, String(max)));
  root.append(svg('text', { x: PAD.left - 4, y: PAD.top + innerH, class: 'tick end' }, '0'));
  t.buckets.forEach((b, i) => {
    const h = (b.count / max) * innerH;
    const bar = svg('rect', {
      x: PAD.left + i * slot + 1,
      y: PAD.top + innerH - h,
      width: Math.max(1, slot - 2),
      height: h,
      class: 'bar',
      'data-count': b.count,
    });
    bar.append(svg('title', {}, `${label(b.start, t.bucketMs)}: ${b.count} message${b.count === 1 ? '' : 's'}, ${formatCost(b.costUsd)}`));
    root.append(bar);
  });
  for (const i of [0, Math.floor(t.buckets.length / 2), t.buckets.length - 1]) {
    const b = t.buckets[i];
    if (b) root.append(svg('text', { x: PAD.left + i * slot + slot / 2, y: H - 6, class: 'tick mid' }, label(b.start, t.bucketMs)));
  }
  host.replaceChildren(root, el('span', { class: 'sr-only', text: t.buckets.map((b) => b.count).join(', ') }));
}
