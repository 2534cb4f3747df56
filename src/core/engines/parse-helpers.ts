import type { AgentEvent } from '../events.js';

/** JSON.parse that never throws; parsers skip what is not an object. */
export function parseJsonLine(line: string): Record<string, unknown> | undefined {
  const t = line.trim();
  if (!t.startsWith('{')) return undefined;
  try {
    const v: unknown = JSON.parse(t);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
export const obj = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Tool output as text, whatever shape the engine used (string, content blocks, objects). */
export function toolOutputText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    return v.map((b) => (typeof b === 'string' ? b : (str(obj(b)?.text) ?? JSON.stringify(b)))).join('');
  }
  return v === undefined || v === null ? '' : JSON.stringify(v);
}

/**
 * Text of one turn arrives in blocks (before and after tool calls). Blocks are separated by a
 * blank line on the wire so a client that concatenates every text event reads paragraphs.
 */
export function createTextJoiner() {
  let started = false;
  let inBlock = false;
  return {
    /** A chunk of the current block; `newBlock` starts a new one. */
    text(delta: string, newBlock: boolean): AgentEvent[] {
      if (delta === '') return [];
      const sep = started && (newBlock || !inBlock) ? '\n\n' : '';
      started = true;
      inBlock = true;
      return [{ type: 'text', delta: sep + delta }];
    },
    /** A tool call or other non-text event ended the current block. */
    breakBlock() {
      inBlock = false;
    },
  };
}

/** HTTP statuses that mean "the model endpoint failed", for failover. */
export function isProviderStatus(status: number | undefined | null): boolean {
  return status === 401 || status === 403 || status === 429 || (status !== undefined && status !== null && status >= 500 && status <= 599);
}

/** "claude exited with code 3" or, when a signal ended it, "claude was killed by SIGKILL" (never "code null"). */
export function describeExit(binary: string, exit: { code: number | null; signal: string | null }): string {
  if (exit.code === null) return `${binary} was killed by ${exit.signal ?? 'a signal'}`;
  return `${binary} exited with code ${exit.code}`;
}

/**
 * The message of a run that failed without reporting why: the last stderr line, or how the
 * process ended. A signal is always named (an OOM kill leaves stderr lines that do not say so).
 */
export function describeSilentFailure(binary: string, exit: { code: number | null; signal: string | null }, lastStderr: string | undefined): string {
  if (exit.code === null) return `${describeExit(binary, exit)}${lastStderr ? `: ${lastStderr}` : ''}`;
  return lastStderr ?? describeExit(binary, exit);
}
