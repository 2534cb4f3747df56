import type Database from 'better-sqlite3';
import type { AccessGrant, AccessStore, BudgetHold, BudgetStore, HoldResult, OpenPairingResult, PairingRequest, SyncOf } from './types.js';
import { parseGrantRow, parsePairingRequestRow, type Row } from './rows.js';

/** The access slice of the SQLite store (pairing requests and grants, budget holds), on the store's open database. */
export function createSqliteAccessStore(db: Database.Database): SyncOf<AccessStore & BudgetStore> {
  const q = {
    dropExpired: db.prepare('DELETE FROM pairing_requests WHERE expires_at <= ?'),
    liveOf: db.prepare('SELECT * FROM pairing_requests WHERE channel = ? AND kind = ? AND subject_id = ? AND expires_at > ?'),
    liveCount: db.prepare('SELECT COUNT(*) AS n FROM pairing_requests WHERE channel = ? AND expires_at > ?'),
    liveOfRequester: db.prepare('SELECT COUNT(*) AS n FROM pairing_requests WHERE channel = ? AND requester = ? AND expires_at > ?'),
    byCode: db.prepare('SELECT * FROM pairing_requests WHERE code = ? AND expires_at > ?'),
    anyCode: db.prepare('SELECT 1 FROM pairing_requests WHERE code = ?'),
    insert: db.prepare(
      `INSERT INTO pairing_requests (code, channel, kind, subject_id, requester, label, created_at, expires_at)
       VALUES (@code, @channel, @kind, @id, @requester, @label, @createdAt, @expiresAt)`,
    ),
    live: db.prepare('SELECT * FROM pairing_requests WHERE expires_at > ? ORDER BY created_at, code'),
    deleteCode: db.prepare('DELETE FROM pairing_requests WHERE code = ?'),
    grant: db.prepare(
      `INSERT INTO access_grants (channel, kind, subject_id, label, approved_at, approved_by) VALUES (@channel, @kind, @id, @label, @approvedAt, @approvedBy)
       ON CONFLICT(channel, kind, subject_id) DO UPDATE SET label = excluded.label, approved_at = excluded.approved_at, approved_by = excluded.approved_by`,
    ),
    isGranted: db.prepare('SELECT 1 FROM access_grants WHERE channel = ? AND kind = ? AND subject_id = ?'),
    grants: db.prepare('SELECT * FROM access_grants ORDER BY approved_at, channel, subject_id'),
    grantsOf: db.prepare('SELECT * FROM access_grants WHERE channel = ? AND subject_id = ? ORDER BY kind'),
    revoke: db.prepare('DELETE FROM access_grants WHERE channel = ? AND subject_id = ?'),
    dropHolds: db.prepare('DELETE FROM budget_holds WHERE expires_at <= ? OR day != ?'),
    held: db.prepare('SELECT COALESCE(SUM(amount_usd), 0) AS held FROM budget_holds WHERE day = ?'),
    spent: db.prepare('SELECT cost_usd FROM daily_cost WHERE day = ?'),
    hold: db.prepare('INSERT INTO budget_holds (id, day, amount_usd, expires_at) VALUES (@id, @day, @amountUsd, @expiresAt)'),
    release: db.prepare('DELETE FROM budget_holds WHERE id = ?'),
  };

  const open = db.transaction((r: Omit<PairingRequest, 'code' | 'expiresAt'>, opts: Parameters<AccessStore['openPairing']>[1]): OpenPairingResult => {
    q.dropExpired.run(r.createdAt);
    const existing = q.liveOf.get(r.channel, r.kind, r.id, r.createdAt) as Row | undefined;
    if (existing) return { status: 'existing', request: parsePairingRequestRow(existing) };
    if (Number((q.liveCount.get(r.channel, r.createdAt) as Row).n) >= opts.maxPending) return { status: 'full' };
    const mine = r.requester === undefined ? 0 : Number((q.liveOfRequester.get(r.channel, r.requester, r.createdAt) as Row).n);
    if (opts.maxPerRequester !== undefined && mine >= opts.maxPerRequester) return { status: 'requester_full' };
    if (q.anyCode.get(opts.code)) return { status: 'collision' };
    const request: PairingRequest = { ...r, code: opts.code, expiresAt: r.createdAt + opts.ttlMs };
    q.insert.run({ ...request, requester: request.requester ?? null, label: request.label ?? null });
    return { status: 'created', request };
  });
  // The write lock is taken first (IMMEDIATE): two processes on the file check and hold one after the other.
  const hold = db.transaction((h: BudgetHold, capUsd: number, now: number): HoldResult => {
    q.dropHolds.run(now, h.day);
    const spentUsd = Number((q.spent.get(h.day) as Row | undefined)?.cost_usd ?? 0);
    const heldUsd = Number((q.held.get(h.day) as Row).held);
    if (spentUsd + heldUsd >= capUsd) return { held: false, spentUsd, heldUsd };
    q.hold.run(h);
    return { held: true };
  });
  const approve = db.transaction((code: string, now: number, approvedBy: string): AccessGrant | undefined => {
    const row = q.byCode.get(code, now) as Row | undefined;
    if (!row) return undefined;
    const r = parsePairingRequestRow(row);
    q.deleteCode.run(code);
    const grant: AccessGrant = { channel: r.channel, kind: r.kind, id: r.id, ...(r.label ? { label: r.label } : {}), approvedAt: now, approvedBy };
    q.grant.run({ ...grant, label: grant.label ?? null });
    return grant;
  });
  const deny = db.transaction((code: string, now: number): PairingRequest | undefined => {
    const row = q.byCode.get(code, now) as Row | undefined;
    if (!row) return undefined;
    q.deleteCode.run(code);
    return parsePairingRequestRow(row);
  });
  const revoke = db.transaction((channel: string, id: string): AccessGrant[] => {
    const gone = (q.grantsOf.all(channel, id) as Row[]).map(parseGrantRow);
    q.revoke.run(channel, id);
    return gone;
  });

  return {
    openPairing: (r, opts) => open(r, opts),
    pairingRequests: (now) => (q.live.all(now) as Row[]).map(parsePairingRequestRow),
    approvePairing: (code, now, by) => approve(code, now, by),
    denyPairing: (code, now) => deny(code, now),
    isGranted: (channel, kind, id) => q.isGranted.get(channel, kind, id) !== undefined,
    accessGrants: () => (q.grants.all() as Row[]).map(parseGrantRow),
    revokeGrant: (channel, id) => revoke(channel, id),
    holdBudget: (h, capUsd, now) => hold.immediate(h, capUsd, now),
    releaseBudget: (id) => void q.release.run(id),
  };
}
