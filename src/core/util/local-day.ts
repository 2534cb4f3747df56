/**
 * Local calendar days, for the daily budget: "today" is the day on this machine's clock and time
 * zone, and it ends at local midnight (a day of 23 or 25 hours across a daylight-saving change).
 */

/** `YYYY-MM-DD` of the local day holding `ms`. */
export function formatLocalDay(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** Unix ms of the next local midnight after `ms`. */
export function nextLocalMidnight(ms: number): number {
  const d = new Date(ms);
  return new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime();
}

// --- internal ---

const pad = (n: number) => String(n).padStart(2, '0');
