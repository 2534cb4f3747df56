import { isProcessAlive } from '../engines/process-tree.js';
import type { ProcessIdentity } from '../store/types.js';

/**
 * What this process counted since it started, kept in one place that the dashboard's status
 * (GET /api/status `live`) and GET /metrics both read: turns by engine, source and outcome with
 * their cost, how long turns took and how soon their first text came (histograms), messages in
 * and out per channel, failed store operations, and the engine processes of running turns. Made
 * by the composition root (one per assistant directory) and handed to what records into it; it
 * does no I/O but reading /proc for the processes still alive.
 */
export type MetricOutcome = 'completed' | 'silent' | 'failed' | 'aborted' | 'refused';

export interface TurnObservation {
  engine: string;
  /** `http`, `cli`, a channel's name, `cron`, … (the activity record's source). */
  source: string;
  outcome: MetricOutcome;
  /** How long the engine ran (absent for a turn refused before it started). */
  durationMs?: number;
  /** From the engine's start to the first text of the reply (absent when no text came). */
  firstTextMs?: number;
  costUsd: number;
}

/** A histogram as Prometheus exposes one: counts per upper bound (not cumulative), then their sum and count. */
export interface HistogramSeries {
  labels: Readonly<Record<string, string>>;
  /** Observations per bucket of `bounds`, the last entry being above the last bound (+Inf). */
  counts: number[];
  sum: number;
  count: number;
}

export interface HistogramSnapshot {
  /** Upper bounds in seconds, ascending. */
  bounds: readonly number[];
  series: HistogramSeries[];
}

export interface LiveMetricsSnapshot {
  /** When counting started (unix ms). */
  since: number;
  turns: Array<{ engine: string; source: string; outcome: MetricOutcome; count: number; costUsd: number }>;
  turnSeconds: HistogramSnapshot;
  firstTextSeconds: HistogramSnapshot;
  channels: Record<string, { in: number; out: number }>;
  /** Failed store operations by operation (the store method's name). */
  storeErrors: Record<string, number>;
  /** Engine processes of running turns that are still alive (read from /proc; 0 elsewhere). */
  engineProcesses: number;
}

export interface LiveMetrics {
  turnEnded(turn: TurnObservation): void;
  channelMessage(channel: string, direction: 'in' | 'out'): void;
  storeError(operation: string): void;
  /** A running turn's engine processes as last seen (`undefined`: the turn ended). */
  turnProcesses(turnId: string, processes: readonly ProcessIdentity[] | undefined): void;
  snapshot(): LiveMetricsSnapshot;
}

/** Turns of coding agents take seconds to many minutes. */
export const TURN_SECONDS_BOUNDS: readonly number[] = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200];
export const FIRST_TEXT_SECONDS_BOUNDS: readonly number[] = [0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120];

export function createLiveMetrics(opts: { now?: () => number } = {}): LiveMetrics {
  const since = (opts.now ?? Date.now)();
  const turns = new Map<string, { engine: string; source: string; outcome: MetricOutcome; count: number; costUsd: number }>();
  const turnSeconds = createHistogram(TURN_SECONDS_BOUNDS);
  const firstTextSeconds = createHistogram(FIRST_TEXT_SECONDS_BOUNDS);
  const channels = new Map<string, { in: number; out: number }>();
  const storeErrors = new Map<string, number>();
  const processes = new Map<string, readonly ProcessIdentity[]>();

  return {
    turnEnded(t) {
      const key = JSON.stringify([t.engine, t.source, t.outcome]);
      const entry = turns.get(key) ?? { engine: t.engine, source: t.source, outcome: t.outcome, count: 0, costUsd: 0 };
      entry.count++;
      entry.costUsd += Number.isFinite(t.costUsd) ? t.costUsd : 0;
      turns.set(key, entry);
      if (t.durationMs !== undefined) turnSeconds.observe({ engine: t.engine }, t.durationMs / 1000);
      if (t.firstTextMs !== undefined) firstTextSeconds.observe({ engine: t.engine }, t.firstTextMs / 1000);
    },
    channelMessage(channel, direction) {
      const entry = channels.get(channel) ?? { in: 0, out: 0 };
      entry[direction]++;
      channels.set(channel, entry);
    },
    storeError(operation) {
      storeErrors.set(operation, (storeErrors.get(operation) ?? 0) + 1);
    },
    turnProcesses(turnId, list) {
      if (list === undefined) processes.delete(turnId);
      else processes.set(turnId, list);
    },
    snapshot() {
      let alive = 0;
      for (const list of processes.values()) for (const p of list) if (isProcessAlive(p)) alive++;
      return {
        since,
        turns: [...turns.values()].map((e) => ({ ...e })),
        turnSeconds: turnSeconds.snapshot(),
        firstTextSeconds: firstTextSeconds.snapshot(),
        channels: Object.fromEntries([...channels].map(([name, c]) => [name, { ...c }])),
        storeErrors: Object.fromEntries(storeErrors),
        engineProcesses: alive,
      };
    },
  };
}

// --- internal ---

function createHistogram(bounds: readonly number[]) {
  const series = new Map<string, HistogramSeries>();
  return {
    observe(labels: Record<string, string>, value: number) {
      if (!Number.isFinite(value)) return;
      const key = JSON.stringify(labels);
      const s = series.get(key) ?? { labels, counts: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 };
      const i = bounds.findIndex((b) => value <= b);
      s.counts[i === -1 ? bounds.length : i] = (s.counts[i === -1 ? bounds.length : i] ?? 0) + 1;
      s.sum += value;
      s.count++;
      series.set(key, s);
    },
    snapshot: (): HistogramSnapshot => ({ bounds, series: [...series.values()].map((s) => ({ ...s, counts: [...s.counts] })) }),
  };
}
