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

export function chooseEndpoint(provider: ProviderConfig | undefined, store: FailoverStore, now: number): ChosenEndpoint | undefined {
  if (!provider) return undefined;
  const primary: ProviderEndpoint = pick(provider);
  const state = store.readFailover();
  if (provider.fallback && state.fallbackSince !== undefined) {
    if (now - state.fallbackSince < RECOVERY_PERIOD_MS) return { endpoint: pick(provider.fallback), which: 'fallback' };
    store.writeFailover({ consecutiveFailures: 0 }); // recovery period over: the primary gets its chance again
  }
  return { endpoint: primary, which: 'primary' };
}

/** Record how a turn ended; returns true when this outcome switched turns to the fallback. */
export function recordOutcome(
  provider: ProviderConfig | undefined,
  chosen: ChosenEndpoint | undefined,
  outcome: 'ok' | 'provider_error' | 'other',
  store: FailoverStore,
  now: number,
): boolean {
  if (!provider || !chosen || chosen.which !== 'primary' || outcome === 'other') return false;
  const state = store.readFailover();
  if (outcome === 'ok') {
    if (state.consecutiveFailures !== 0) store.writeFailover({ consecutiveFailures: 0 });
    return false;
  }
  const failures = state.consecutiveFailures + 1;
  if (provider.fallback && failures >= provider.failoverThreshold) {
    store.writeFailover({ consecutiveFailures: 0, fallbackSince: now });
    return true;
  }
  store.writeFailover({ consecutiveFailures: failures });
  return false;
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
    readFailover: () => state,
    writeFailover: (s) => {
      state = s;
    },
  };
}
