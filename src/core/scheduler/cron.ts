import { createRequire } from 'node:module';
import type { CronExpressionParser as Parser } from 'cron-parser';
import type { ConfigCheck } from '../config/load.js';

/**
 * Cron expressions with standard semantics (cron-parser): five fields (an optional leading seconds
 * field is accepted), day-of-month and day-of-week combined with OR when both are restricted,
 * 0 and 7 both Sunday, evaluated in the machine's time zone.
 */
export function nextCronTime(expression: string, after: Date): Date {
  const it = loadParser().parse(expression, { currentDate: after });
  return it.next().toDate();
}

/** Why an expression is unusable, or null when it is fine. */
export function explainInvalidCron(expression: string): string | null {
  const known = explained.get(expression);
  if (known !== undefined) return known;
  const why = explain(expression);
  if (explained.size >= EXPLAINED_MAX) explained.clear();
  explained.set(expression, why);
  return why;
}

/** The scheduler's check of service.yaml: every task's schedule parses, every `at` is a time (reported with its path). */
export const checkTaskSchedules: ConfigCheck = (config) =>
  config.tasks.flatMap((t, i) => {
    if (t.at !== undefined) return parseTaskTime(t.at) === undefined ? [{ path: ['tasks', i, 'at'], message: AT_FORMAT }] : [];
    const why = t.schedule === undefined ? null : explainInvalidCron(t.schedule);
    return why ? [{ path: ['tasks', i, 'schedule'], message: why }] : [];
  });

export const AT_FORMAT = 'expected an ISO 8601 time such as 2030-03-14T09:00:00Z or 2030-03-14T09:00:00+01:00';

/** Unix ms of a one-shot task's `at` (ISO 8601 date and time; without an offset, the machine's time zone), or undefined. */
export function parseTaskTime(at: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i.test(at.trim())) return undefined;
  const ms = Date.parse(at.trim().replace(' ', 'T'));
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * When a task runs next after `after`: its cron time, or a one-shot's `at` (also when that has
 * passed: a one-shot not run yet runs as soon as it can). Undefined when neither can be read.
 */
export function nextTaskTime(task: { schedule?: string | undefined; at?: string | undefined }, after: Date): Date | undefined {
  if (task.at !== undefined) {
    const at = parseTaskTime(task.at);
    return at === undefined ? undefined : new Date(at);
  }
  if (task.schedule === undefined) return undefined;
  try {
    return nextCronTime(task.schedule, after);
  } catch {
    return undefined;
  }
}

// --- internal ---

let parser: typeof Parser | undefined;

/**
 * Answers by expression. Every load and every PATCH of service.yaml checks each task's schedule
 * (up to 1,000 tasks), and schedules rarely change: parsing them all again cost more than the rest
 * of the validation. Bounded: emptied when full.
 */
const explained = new Map<string, string | null>();
const EXPLAINED_MAX = 4096;

function explain(expression: string): string | null {
  const fields = expression.trim().split(/\s+/);
  if (fields.length < 5 || fields.length > 6) {
    return `expected a cron expression with 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`;
  }
  try {
    loadParser().parse(expression, { strict: false });
    return null;
  } catch (err) {
    return `invalid cron expression: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/**
 * cron-parser (with luxon, half a megabyte of source) is loaded the first time a schedule is
 * read: an assistant without tasks never pays for it. Synchronous, as the config checks are.
 */
function loadParser(): typeof Parser {
  parser ??= (createRequire(import.meta.url)('cron-parser') as typeof import('cron-parser')).CronExpressionParser;
  return parser;
}
