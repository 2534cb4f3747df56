import { maskSecrets, restorePlaceholders } from '../../core/config/secrets.js';
import { findEngineBinary } from '../../core/engines/detect.js';
import { engineDefinitions } from '../../core/engines/registry.js';
import { probeHealth } from '../../core/fleet/health.js';
import type { ActivityRecord, TimelineBucket } from '../../core/store/types.js';
import type { RouteTable, ServerDeps } from '../types.js';
import { httpError } from '../http.js';

/**
 * Read-only data the dashboard's panels need beyond GET /api/status (all behind the token, like
 * every /api/ route): effective settings with defaults, the messages-over-time chart, the
 * escalation list, and the fleet with each peer's health.
 */
export const TIMELINE_RANGES: Readonly<Record<string, { bucketMs: number; buckets: number }>> = {
  '1h': { bucketMs: 5 * 60_000, buckets: 12 },
  '24h': { bucketMs: 3_600_000, buckets: 24 },
  '7d': { bucketMs: 6 * 3_600_000, buckets: 28 },
};

export type EscalationKind = 'failed' | 'aborted' | 'escalated';

export function registerDashboardDataRoutes(table: RouteTable, deps: ServerDeps): void {
  // The validated configuration with every default filled in, so the settings panel can show
  // the value in force for keys the file leaves out. Secret fields masked, and every value that
  // came from a placeholder shown as the placeholder (as in GET /api/config), never resolved.
  table.add('GET', '/api/config/effective', () => {
    const { config, raw } = deps.config.current();
    return { config: restorePlaceholders(maskSecrets(config), raw) };
  });

  // The engines the settings panel offers, each marked when its CLI is on this machine's PATH.
  table.add('GET', '/api/engines', () => ({
    engines: Object.values(engineDefinitions).map((e) => ({ id: e.id, title: e.title, installed: findEngineBinary(e) !== undefined })),
  }));

  table.add('GET', '/api/metrics/timeline', async (event) => {
    const range = event.url.searchParams.get('range') ?? '24h';
    const preset = TIMELINE_RANGES[range];
    if (!preset) throw httpError(400, `unknown range "${range}"`, { ranges: Object.keys(TIMELINE_RANGES) });
    return { range, ...(await buildTimeline(deps.activity.activityTimeline.bind(deps.activity), Date.now(), preset.bucketMs, preset.buckets)) };
  });

  table.add('GET', '/api/escalations', async (event) => {
    const limit = boundedInt(event.url.searchParams.get('limit'), 50, 1, 200);
    return { escalations: await collectEscalations(deps.activity, limit) };
  });

  table.add('GET', '/api/fleet', async () => {
    const rows = deps.fleet?.() ?? [];
    // Peers are probed from here: the page's CSP lets it talk to this origin only.
    const probed = await Promise.all(
      rows.map(async (row) => {
        if (row.self === true || typeof row.url !== 'string') return { ...row, healthy: row.self === true };
        const h = await probeHealth(row.url, 1_000);
        return { ...row, healthy: h.ok, ...(h.error ? { healthError: h.error } : {}) };
      }),
    );
    return { peers: probed };
  });
}

/** Buckets ending at the current one, zero-filled, aligned to the bucket size so they stay put between refreshes. */
export async function buildTimeline(
  query: (since: number, bucketMs: number) => TimelineBucket[] | Promise<TimelineBucket[]>,
  now: number,
  bucketMs: number,
  count: number,
): Promise<{ bucketMs: number; since: number; until: number; buckets: TimelineBucket[] }> {
  const until = (Math.floor(now / bucketMs) + 1) * bucketMs;
  const since = until - count * bucketMs;
  const found = new Map((await query(since, bucketMs)).map((b) => [b.start, b]));
  const buckets = Array.from({ length: count }, (_, i) => {
    const start = since + i * bucketMs;
    return found.get(start) ?? { start, count: 0, costUsd: 0 };
  });
  return { bucketMs, since, until, buckets };
}

/** Failed and aborted turns and replies that asked for a human, newest first. */
export async function collectEscalations(store: ServerDeps['activity'], limit: number): Promise<Array<ActivityRecord & { kind: EscalationKind }>> {
  const [failures, asked] = await Promise.all([
    store.recentActivity(limit, { statuses: ['failed', 'aborted'] }),
    store.recentActivity(limit, { escalated: true }),
  ]);
  const seen = new Set<string>();
  return [...failures, ...asked]
    .map((r) => ({ ...r, kind: (r.escalated ? 'escalated' : r.status) as EscalationKind }))
    .filter((r) => {
      const id = `${r.ts}\u0000${r.sessionKey}\u0000${r.messagePreview}\u0000${r.status}`;
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    })
    .sort((a, b) => b.ts.localeCompare(a.ts))
    .slice(0, limit);
}

function boundedInt(raw: string | null, fallback: number, min: number, max: number): number {
  const n = raw === null ? fallback : Number(raw);
  if (!Number.isInteger(n)) throw httpError(400, `expected an integer, got "${raw}"`);
  return Math.min(max, Math.max(min, n));
}
