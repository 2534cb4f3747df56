import { HTTPResponse } from 'h3';
import type { PrometheusExporter } from '../prometheus.js';
import type { RouteTable, ServerDeps } from '../types.js';

/**
 * GET /metrics: the Prometheus text format (server/prometheus.ts). prom-client and the exporter
 * are loaded on the first request, so a gateway nobody scrapes never loads them. Behind the
 * token like every route, unless `metrics.public` (app.ts). Secret values are masked in the text
 * like in every JSON answer.
 */
export function registerMetricsRoutes(table: RouteTable, deps: ServerDeps): void {
  let exporter: Promise<PrometheusExporter> | undefined;
  table.add('GET', '/metrics', async () => {
    exporter ??= import('../prometheus.js').then((m) => m.createPrometheusExporter(deps));
    const ready = await exporter;
    const text = table.redact(await ready.render());
    return new HTTPResponse(text, { status: 200, statusText: 'OK', headers: { 'content-type': ready.contentType, 'cache-control': 'no-store' } });
  });
}
