import type { AccessGrant, AccessStore, BudgetHold, BudgetStore, PairingRequest, SyncOf } from './types.js';

/** The access slice of the memory store (`dailyCost`: the store's spending of a day); the same contract as the SQLite one. */
export function createMemoryAccessStore(dailyCost: (day: string) => number): SyncOf<AccessStore & BudgetStore> {
  const requests = new Map<string, PairingRequest>();
  const holds = new Map<string, BudgetHold>();
  const grants = new Map<string, AccessGrant>();
  const grantKey = (channel: string, kind: string, id: string) => `${channel}\u0000${kind}\u0000${id}`;
  const live = (code: string, now: number) => {
    const r = requests.get(code);
    return r && r.expiresAt > now ? r : undefined;
  };

  return {
    openPairing(r, opts) {
      for (const [code, req] of requests) if (req.expiresAt <= r.createdAt) requests.delete(code);
      const existing = [...requests.values()].find((x) => x.channel === r.channel && x.kind === r.kind && x.id === r.id);
      if (existing) return { status: 'existing', request: { ...existing } };
      if ([...requests.values()].filter((x) => x.channel === r.channel).length >= opts.maxPending) return { status: 'full' };
      const mine = r.requester === undefined ? 0 : [...requests.values()].filter((x) => x.channel === r.channel && x.requester === r.requester).length;
      if (opts.maxPerRequester !== undefined && mine >= opts.maxPerRequester) return { status: 'requester_full' };
      if (requests.has(opts.code)) return { status: 'collision' };
      const request: PairingRequest = { ...r, code: opts.code, expiresAt: r.createdAt + opts.ttlMs };
      requests.set(request.code, request);
      return { status: 'created', request: { ...request } };
    },
    pairingRequests: (now) =>
      [...requests.values()]
        .filter((r) => r.expiresAt > now)
        .sort((a, b) => a.createdAt - b.createdAt || a.code.localeCompare(b.code))
        .map((r) => ({ ...r })),
    approvePairing(code, now, approvedBy) {
      const r = live(code, now);
      if (!r) return undefined;
      requests.delete(code);
      const grant: AccessGrant = { channel: r.channel, kind: r.kind, id: r.id, ...(r.label ? { label: r.label } : {}), approvedAt: now, approvedBy };
      // Re-approval keeps the grant's place and updates it, as the SQLite upsert does.
      grants.set(grantKey(r.channel, r.kind, r.id), grant);
      return { ...grant };
    },
    denyPairing(code, now) {
      const r = live(code, now);
      if (!r) return undefined;
      requests.delete(code);
      return { ...r };
    },
    isGranted: (channel, kind, id) => grants.has(grantKey(channel, kind, id)),
    accessGrants: () =>
      [...grants.values()].sort((a, b) => a.approvedAt - b.approvedAt || a.channel.localeCompare(b.channel) || a.id.localeCompare(b.id)).map((g) => ({ ...g })),
    revokeGrant(channel, id) {
      const gone: AccessGrant[] = [];
      for (const kind of ['chat', 'sender'] as const) {
        const g = grants.get(grantKey(channel, kind, id));
        if (g) {
          gone.push({ ...g });
          grants.delete(grantKey(channel, kind, id));
        }
      }
      return gone;
    },
    holdBudget(h, capUsd, now) {
      for (const [id, x] of holds) if (x.expiresAt <= now || x.day !== h.day) holds.delete(id);
      const spentUsd = dailyCost(h.day);
      const heldUsd = [...holds.values()].reduce((n, x) => n + x.amountUsd, 0);
      if (spentUsd + heldUsd >= capUsd) return { held: false, spentUsd, heldUsd };
      holds.set(h.id, { ...h });
      return { held: true };
    },
    releaseBudget: (id) => void holds.delete(id),
  };
}
