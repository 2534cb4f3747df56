import { AggregatorRegistry, Counter, collectDefaultMetrics, Gauge, type PrometheusContentType, Registry } from 'prom-client';
import type { HistogramSnapshot, LiveMetricsSnapshot } from '../core/metrics/live-metrics.js';
import type { ServerDeps } from './types.js';

/**
 * GET /metrics in the Prometheus text format, built with prom-client (this module is imported
 * on the first request, never at start). Nothing is counted twice: every value is read, at
 * scrape time, from what the dashboard reads too: the live metrics (turns, channel messages,
 * store errors, engine processes), the assistant's status (running and queued turns, approvals
 * waiting), the hub's channel states, the access admin's pending pairings, and the store's
 * recorded totals and today's spending. prom-client's default metrics add the process's own
 * CPU, memory, file descriptors, event-loop lag and garbage collection.
 */
export interface PrometheusExporter {
  contentType: string;
  render(): Promise<string>;
}

export type ExporterDeps = Pick<ServerDeps, 'assistant' | 'access' | 'channels' | 'metrics' | 'version'>;

export function createPrometheusExporter(deps: ExporterDeps): PrometheusExporter {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // One snapshot per scrape, read by every collect() below (they run while the registry renders).
  let live: LiveMetricsSnapshot = deps.metrics.snapshot();
  const registers = [registry];

  new Counter({
    name: 'service_turns_total',
    help: 'Turns this process ended, by engine, source (http, cli, cron, a channel) and outcome (refused: before the engine started)',
    labelNames: ['engine', 'source', 'outcome'],
    registers,
    collect() {
      this.reset();
      for (const t of live.turns) this.inc({ engine: t.engine, source: t.source, outcome: t.outcome }, t.count);
    },
  });
  new Counter({
    name: 'service_turn_cost_usd_total',
    help: 'Cost in USD the engines reported for the turns this process ran',
    labelNames: ['engine', 'source'],
    registers,
    collect() {
      this.reset();
      for (const t of live.turns) if (t.costUsd > 0) this.inc({ engine: t.engine, source: t.source }, t.costUsd);
    },
  });
  gauge('service_turns_running', 'Turns running now', () => deps.assistant.status().running);
  gauge('service_turns_queued', 'Turns admitted and waiting for their session (queue depth)', () => deps.assistant.status().waiting);
  gauge('service_approvals_waiting', "Tool calls waiting for a person's approval", () => deps.assistant.status().approvalsWaiting);
  gauge('service_pairings_pending', 'Pairing codes waiting for the owner (service access approve)', async () => (await deps.access.list()).pending.length);
  gauge('service_engine_processes', 'Engine processes of running turns that are alive (Linux; 0 elsewhere)', () => live.engineProcesses);
  new Gauge({
    name: 'service_channel_connected',
    help: 'Each configured channel: 1 while connected, 0 otherwise (failed, reconnecting, standby)',
    labelNames: ['channel'],
    registers,
    collect() {
      this.reset();
      for (const c of deps.channels.statuses()) if (c.status !== 'not_configured') this.set({ channel: c.type }, c.status === 'connected' ? 1 : 0);
    },
  });
  new Counter({
    name: 'service_channel_messages_total',
    help: 'Platform messages per channel: in (each taken in once) and out (replies, files, approval prompts, proactive sends)',
    labelNames: ['channel', 'direction'],
    registers,
    collect() {
      this.reset();
      for (const [channel, c] of Object.entries(live.channels)) {
        this.inc({ channel, direction: 'in' }, c.in);
        this.inc({ channel, direction: 'out' }, c.out);
      }
    },
  });
  new Counter({
    name: 'service_store_errors_total',
    help: 'Store operations that failed, by operation',
    labelNames: ['operation'],
    registers,
    collect() {
      this.reset();
      for (const [operation, n] of Object.entries(live.storeErrors)) this.inc({ operation }, n);
    },
  });
  new Counter({
    name: 'service_recorded_messages_total',
    help: "Messages recorded in the store by source, since the store was made (the dashboard's totals; shared by the gateways of one store)",
    labelNames: ['source'],
    registers,
    async collect() {
      this.reset();
      for (const [source, n] of Object.entries((await deps.assistant.metrics()).messagesBySource)) this.inc({ source }, n);
    },
  });
  gauge(
    'service_recorded_cost_usd',
    "Cost in USD recorded in the store since it was made (the dashboard's total)",
    async () => (await deps.assistant.metrics()).totalCostUsd,
  );
  gauge('service_cost_today_usd', 'Cost in USD recorded today, against access.dailyBudgetUsd', async () => (await deps.assistant.budget()).todayCostUsd);
  new Gauge({
    name: 'service_info',
    help: 'This gateway: its version and engine (always 1)',
    labelNames: ['version', 'engine'],
    registers,
    collect() {
      this.reset();
      this.set({ version: deps.version, engine: deps.assistant.status().engine }, 1);
    },
  });

  return {
    contentType: registry.contentType,
    async render() {
      live = deps.metrics.snapshot();
      const histograms = AggregatorRegistry.aggregate<PrometheusContentType>([
        [
          formatHistogram('service_turn_duration_seconds', 'How long turns ran, from the engine start to the end, by engine', live.turnSeconds),
          formatHistogram('service_turn_first_text_seconds', 'From the engine start to the first text of the reply, by engine', live.firstTextSeconds),
        ],
      ]);
      return Registry.merge([registry, histograms]).metrics();
    },
  };

  function gauge(name: string, help: string, read: () => number | Promise<number>): void {
    new Gauge({
      name,
      help,
      registers,
      async collect() {
        this.set(await read());
      },
    });
  }
}

// --- internal ---

/**
 * A histogram of the live metrics as prom-client describes one (what `getMetricsAsJSON` gives):
 * cumulative `_bucket` values per `le`, then `_sum` and `_count`. The observations are kept by
 * the live metrics since start, so the first scrape already sees the turns before it.
 */
function formatHistogram(name: string, help: string, h: HistogramSnapshot) {
  const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
  for (const s of h.series) {
    let cumulative = 0;
    h.bounds.forEach((le, i) => {
      cumulative += s.counts[i] ?? 0;
      values.push({ metricName: `${name}_bucket`, labels: { ...s.labels, le }, value: cumulative });
    });
    values.push({ metricName: `${name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
    values.push({ metricName: `${name}_sum`, labels: { ...s.labels }, value: s.sum });
    values.push({ metricName: `${name}_count`, labels: { ...s.labels }, value: s.count });
  }
  return { name, help, type: 'histogram', aggregator: 'sum', values };
}
