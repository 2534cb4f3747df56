import type { ProviderConfig } from '../config/schema.js';
import type { FailoverState, FailoverStore } from '../store/types.js';
import type { ProviderEndpoint } from './types.js';

/**
 * Provider failover: after `failoverThreshold` consecutive provider failures (connection, 401/403,
 * 429, 5xx; never our timeouts, aborts or engine-side errors) on the primary endpoint, turns use
 * `provider.fallback` for a recovery period, then the primary is tried again. The state is kept
 * in the store, so a restart does not forget it and two processes share it.
 */
export const RECOVERY_PERIOD_MS = 5 * 60_000;

export interface ChosenEndpoint {
  endpoint: ProviderEndpoint;
  which: 'primary' | 'fallback';
}

export function chooseEndpoint(provider: ProviderConfig | undefined, store: FailoverStore, now: number): Promise<ChosenEndpoint | undefined> {
  if (!provider) return Promise.resolve(undefined);
  return serially(store, async () => {
    const primary: ProviderEndpoint = pick(provider);
    const state = await store.readFailover();
    if (provider.fallback && state.fallbackSince !== undefined) {
      if (now - state.fallbackSince < RECOVERY_PERIOD_MS) return { endpoint: pick(provider.fallback), which: 'fallback' };
      await store.writeFailover({ consecutiveFailures: 0 }); // recovery period over: the primary gets its chance again
    }
    return { endpoint: primary, which: 'primary' };
  });
}

/** Record how a turn ended; resolves true when this outcome switched turns to the fallback. */
export function recordOutcome(
  provider: ProviderConfig | undefined,
  chosen: ChosenEndpoint | undefined,
  outcome: 'ok' | 'provider_error' | 'other',
  store: FailoverStore,
  now: number,
): Promise<boolean> {
  if (!provider || !chosen || chosen.which !== 'primary' || outcome === 'other') return Promise.resolve(false);
  return serially(store, async () => {
    const state = await store.readFailover();
    if (outcome === 'ok') {
      if (state.consecutiveFailures !== 0) await store.writeFailover({ consecutiveFailures: 0 });
      return false;
    }
    const failures = state.consecutiveFailures + 1;
    if (provider.fallback && failures >= provider.failoverThreshold) {
      await store.writeFailover({ consecutiveFailures: 0, fallbackSince: now });
      return true;
    }
    await store.writeFailover({ consecutiveFailures: failures });
    return false;
  });
}

/**
 * The read-then-write of the failover state, one at a time per store in this process: turns that
 * end together must not both count from the same number (a lost failure would delay the switch).
 * Across processes it stays last-writer-wins, as it always was: the count is a heuristic.
 */
const chains = new WeakMap<FailoverStore, Promise<unknown>>();
function serially<T>(store: FailoverStore, fn: () => Promise<T>): Promise<T> {
  const next = (chains.get(store) ?? Promise.resolve()).then(fn, fn);
  chains.set(
    store,
    next.catch(() => undefined),
  );
  return next;
}

function pick(e: { baseUrl?: string; apiKey?: string; model?: string }): ProviderEndpoint {
  const out: ProviderEndpoint = {};
  if (e.baseUrl) out.baseUrl = e.baseUrl;
  if (e.apiKey) out.apiKey = e.apiKey;
  if (e.model) out.model = e.model;
  return out;
}

/** In-memory state (unit tests, embedding without a store). */
export function createMemoryFailoverStore(): FailoverStore {
  let state: FailoverState = { consecutiveFailures: 0 };
  return {
    readFailover: async () => state,
    writeFailover: async (s) => {
      state = s;
    },
  };
}
