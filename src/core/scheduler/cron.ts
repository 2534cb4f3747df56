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

/** The scheduler's check of service.yaml: every task's schedule parses (reported with its path). */
export const checkTaskSchedules: ConfigCheck = (config) =>
  config.tasks.flatMap((t, i) => {
    const why = explainInvalidCron(t.schedule);
    return why ? [{ path: ['tasks', i, 'schedule'], message: why }] : [];
  });

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
