import { errorMessage } from '../errors.js';

export interface HealthProbe {
  ok: boolean;
  /** The name the gateway reports, when it answered. */
  name?: string;
  ms: number;
  error?: string;
}

/** GET <url>/health with a short timeout: a hung or firewalled peer must not hold up a listing. */
export async function probeHealth(url: string, timeoutMs = 1_500): Promise<HealthProbe> {
  const started = Date.now();
  try {
    const res = await fetch(`${url.replace(/\/+$/, '')}/health`, { signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    const body = (await res.json().catch(() => ({}))) as { status?: unknown; name?: unknown };
    const ms = Date.now() - started;
    if (res.status !== 200 || body.status !== 'ok') return { ok: false, ms, error: `HTTP ${res.status}` };
    return { ok: true, ms, ...(typeof body.name === 'string' ? { name: body.name } : {}) };
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
    return { ok: false, ms: Date.now() - started, error: timedOut ? `no answer within ${timeoutMs} ms` : causeOf(err) };
  }
}

function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? errorMessage(err);
}
