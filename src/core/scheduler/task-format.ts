import type { TaskRun } from '../store/types.js';
import { formatTable } from '../util/text-table.js';

/** A row of `service cron list` (its --json shape). */
export interface TaskListRow {
  id: string;
  name: string;
  /** A cron expression, or `at` for a task that runs once. */
  schedule?: string;
  at?: string;
  enabled: boolean;
  /** ISO time, null when disabled. */
  nextRun: string | null;
  lastRun: { startedAt: string; status: string } | null;
}

/**
 * `service cron list` as text: one aligned row per task. Times are local (schedules run in the
 * machine's time zone); --json keeps ISO times in UTC.
 */
export function formatTaskList(rows: readonly TaskListRow[]): string[] {
  return formatTable(
    ['ID', 'ENABLED', 'SCHEDULE', 'NEXT RUN', 'LAST RUN', 'NAME'],
    rows.map((r) => [
      r.id,
      r.enabled ? 'yes' : 'no',
      r.schedule ?? (r.at ? `once ${formatLocalTime(Date.parse(r.at))}` : '-'),
      r.nextRun ? formatLocalTime(Date.parse(r.nextRun)) : '-',
      r.lastRun ? `${formatLocalTime(Date.parse(r.lastRun.startedAt))} ${r.lastRun.status}` : '-',
      r.name,
    ]),
  );
}

/** `service cron history` as text: start, status, duration, cost, then the reply's start or the error. */
export function formatRunHistory(runs: readonly TaskRun[]): string[] {
  return formatTable(
    ['STARTED', 'STATUS', 'DURATION', 'COST', 'DELIVERED', 'REPLY / ERROR'],
    runs.map((r) => [
      formatLocalTime(r.startedAt),
      r.status,
      formatDuration(r.durationMs),
      formatCost(r.costUsd),
      r.delivered === undefined ? '-' : r.delivered ? 'yes' : 'no',
      r.error ? `error: ${oneLine(r.error)}` : oneLine(r.preview) || '-',
    ]),
    { alignRight: [2, 3] },
  );
}

/** `2026-03-10 09:00:00` in the machine's time zone. */
export function formatLocalTime(ms: number): string {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return '?';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** `850 ms`, `12.3 s`, `4m 05s`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

/** `$0.0123`; `-` when the engine reported no cost (only Claude Code reports one). */
export function formatCost(usd: number): string {
  return Number.isFinite(usd) && usd > 0 ? `$${usd.toFixed(4)}` : '-';
}

// --- internal ---

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
