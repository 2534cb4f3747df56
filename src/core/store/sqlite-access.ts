import type Database from 'better-sqlite3';
import type { AccessGrant, AccessStore, OpenPairingResult, PairingRequest, SyncOf } from './types.js';
import { parseGrantRow, parsePairingRequestRow, type Row } from './rows.js';

/** The access slice of the SQLite store (pairing requests and grants), on the store's open database. */
export function createSqliteAccessStore(db: Database.Database): SyncOf<AccessStore> {
  const q = {
    dropExpired: db.prepare('DELETE FROM pairing_requests WHERE expires_at <= ?'),
    liveOf: db.prepare('SELECT * FROM pairing_requests WHERE channel = ? AND kind = ? AND subject_id = ? AND expires_at > ?'),
    liveCount: db.prepare('SELECT COUNT(*) AS n FROM pairing_requests WHERE channel = ? AND expires_at > ?'),
    byCode: db.prepare('SELECT * FROM pairing_requests WHERE code = ? AND expires_at > ?'),
    anyCode: db.prepare('SELECT 1 FROM pairing_requests WHERE code = ?'),
    insert: db.prepare(
      `INSERT INTO pairing_requests (code, channel, kind, subject_id, label, created_at, expires_at)
       VALUES (@code, @channel, @kind, @id, @label, @createdAt, @expiresAt)`,
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
  };

  const open = db.transaction((r: Omit<PairingRequest, 'code' | 'expiresAt'>, opts: { code: string; ttlMs: number; maxPending: number }): OpenPairingResult => {
    q.dropExpired.run(r.createdAt);
    const existing = q.liveOf.get(r.channel, r.kind, r.id, r.createdAt) as Row | undefined;
    if (existing) return { status: 'existing', request: parsePairingRequestRow(existing) };
    if (Number((q.liveCount.get(r.channel, r.createdAt) as Row).n) >= opts.maxPending) return { status: 'full' };
    if (q.anyCode.get(opts.code)) return { status: 'collision' };
    const request: PairingRequest = { ...r, code: opts.code, expiresAt: r.createdAt + opts.ttlMs };
    q.insert.run({ ...request, label: request.label ?? null });
    return { status: 'created', request };
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
  };
}
