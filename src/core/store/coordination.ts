/**
 * The answer to a lease claim. `previousActiveAgoMs`: the lease was another holder's, last known
 * active that long ago (what its successor catches up from).
 */
export type LeaseClaim = { held: true; previousActiveAgoMs?: number } | { held: false; holder: string };

/**
 * Coordination of several gateways of one assistant (a server store only: the embedded stores
 * have one gateway per directory). Time is the server's, so hosts with skewed clocks agree.
 */
export interface CoordinationStore {
  /** Take, or renew, lease `name` for `holder` until `ttlMs` from now; refused while another holder's lease runs. */
  claimLease(name: string, holder: string, ttlMs: number): Promise<LeaseClaim>;
  /**
   * Give the lease up now (a clean stop), so the next holder need not wait for it to expire;
   * `idleForMs`: how long ago the holder stopped its work (its successor catches up from then).
   */
  releaseLease(name: string, holder: string, idleForMs?: number): Promise<void>;
  /**
   * Hold session key `key` against every other gateway on the store until the returned function
   * is called; waits while another holds it. A holder that dies (its connection ends) drops it.
   */
  lockSessionKey(key: string, signal?: AbortSignal): Promise<() => Promise<void>>;
}
