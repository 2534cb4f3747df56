// The messages-over-time bar chart, drawn as SVG node by node (the page's CSP allows no inline
// styles or markup strings, and none are needed). It is drawn at the host's real pixel width,
// not scaled from a fixed viewBox, so its labels keep their CSS size on a phone as on a desktop;
// it redraws when the host is resized (or first becomes visible).
import { el, formatCost } from './api.js';

const SVG = 'http://www.w3.org/2000/svg';
const HEIGHT = 150;
const PAD = { top: 10, right: 10, bottom: 24, left: 36 };
/** Room one time label needs, in pixels (11 px text, "Tue 18:00" is the widest). */
const LABEL_PX = { short: 46, long: 70 };

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

const two = (n) => String(n).padStart(2, '0');
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** A bucket's start as the axis shows it: 14:05, 14:00, or Tue 18:00 for the 6-hour buckets. */
export function formatBucket(start, bucketMs) {
  const d = new Date(start);
  const time = `${two(d.getHours())}:${two(d.getMinutes())}`;
  return bucketMs >= 6 * 3_600_000 ? `${WEEKDAYS[d.getDay()]} ${time}` : time;
}

/** "per 5 minutes", "per hour", "per 6 hours". */
export function formatBucketSize(bucketMs) {
  const minutes = bucketMs / 60_000;
  if (minutes < 60) return `per ${minutes} minutes`;
  return minutes === 60 ? 'per hour' : `per ${minutes / 60} hours`;
}

/** Gridline values 0..top with a 1-2-5 step, at most four steps, top ≥ max. */
export function niceTicks(max) {
  const rough = Math.max(1, max) / 4;
  const pow = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= rough) ?? 10 * pow);
  const top = Math.max(step, Math.ceil(max / step) * step);
  return Array.from({ length: top / step + 1 }, (_, i) => i * step);
}

/** Every k-th bucket gets a time label, k from steps that land on round times, so labels never collide. */
function labelEvery(slotPx, bucketMs) {
  const need = (bucketMs >= 6 * 3_600_000 ? LABEL_PX.long : LABEL_PX.short) + 8;
  const steps = bucketMs >= 6 * 3_600_000 ? [1, 2, 4, 8, 12, 28] : [1, 2, 3, 4, 6, 12, 24];
  return steps.find((k) => k * slotPx >= need) ?? steps[steps.length - 1];
}

export function createTimelineChart(host) {
  let shown;
  let drawnWidth = 0;

  const draw = () => {
    const width = Math.floor(host.clientWidth);
    if (!shown || width === 0) return;
    drawnWidth = width;
    const t = shown;
    const ticks = niceTicks(Math.max(...t.buckets.map((b) => b.count)));
    const top = ticks[ticks.length - 1];
    const innerW = width - PAD.left - PAD.right;
    const innerH = HEIGHT - PAD.top - PAD.bottom;
    const slot = innerW / t.buckets.length;
    const y = (v) => PAD.top + innerH - (v / top) * innerH;
    const root = svg('svg', {
      width,
      height: HEIGHT,
      viewBox: `0 0 ${width} ${HEIGHT}`,
      class: 'chart',
      role: 'img',
      'aria-label': `Messages ${formatBucketSize(t.bucketMs)}`,
    });
    for (const v of ticks) {
      root.append(svg('line', { x1: PAD.left, y1: y(v), x2: width - PAD.right, y2: y(v), class: v === 0 ? 'axis' : 'grid' }));
      root.append(svg('text', { x: PAD.left - 6, y: y(v), class: 'tick y' }, String(v)));
    }
    t.buckets.forEach((b, i) => {
      const h = (b.count / top) * innerH;
      const bar = svg('rect', {
        x: PAD.left + i * slot + Math.min(2, slot * 0.15),
        y: PAD.top + innerH - h,
        width: Math.max(1, slot - 2 * Math.min(2, slot * 0.15)),
        height: h,
        class: 'bar',
        'data-count': b.count,
      });
      bar.append(svg('title', {}, `${formatBucket(b.start, t.bucketMs)}: ${b.count} message${b.count === 1 ? '' : 's'}, ${formatCost(b.costUsd)}`));
      root.append(bar);
    });
    const every = labelEvery(slot, t.bucketMs);
    const half = (t.bucketMs >= 6 * 3_600_000 ? LABEL_PX.long : LABEL_PX.short) / 2;
    t.buckets.forEach((b, i) => {
      // A label marks the start of its bucket; one that would stick out of the drawing is left out
      // rather than pushed inward, where it could run into its neighbour.
      const x = PAD.left + i * slot;
      if (Math.round(b.start / t.bucketMs) % every !== 0 || x - half < 0 || x + half > width) return;
      root.append(svg('line', { x1: x, y1: PAD.top + innerH, x2: x, y2: PAD.top + innerH + 4, class: 'axis' }));
      root.append(svg('text', { x, y: HEIGHT - 6, class: 'tick x' }, formatBucket(b.start, t.bucketMs)));
    });
    host.replaceChildren(root, el('span', { class: 'sr-only', text: t.buckets.map((b) => `${formatBucket(b.start, t.bucketMs)} ${b.count}`).join(', ') }));
  };

  new ResizeObserver(() => {
    if (Math.floor(host.clientWidth) !== drawnWidth) draw();
  }).observe(host);

  return {
    show(timeline) {
      shown = timeline;
      draw();
    },
  };
}
