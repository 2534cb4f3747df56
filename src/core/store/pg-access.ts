import type { PgQuery, PgTransaction } from './pg-client.js';
import type { AccessGrant, AccessStore, BudgetStore, PairingRequest } from './types.js';
import { parseGrantRow, parsePairingRequestRow } from './rows.js';

/**
 * The access slice of the PostgreSQL store. Under READ COMMITTED a count-then-insert could let two
 * hosts open more than `maxPending` requests, or two for one sender, so `openPairing` holds a
 * transaction-scoped advisory lock per channel; approve and deny take the request with one
 * `DELETE … RETURNING`, so exactly one caller gets it. Budget holds are checked and taken under an
 * advisory lock of their own, so turns starting together on several hosts are counted in turn.
 */
export function createPgAccessStore(query: PgQuery, transaction: PgTransaction): AccessStore & BudgetStore {
  return {
    openPairing: (r, opts) =>
      transaction(async (q) => {
        await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`service:pairing:${r.channel}`]);
        await q('DELETE FROM pairing_requests WHERE expires_at <= $1', [r.createdAt]);
        const existing = await q('SELECT * FROM pairing_requests WHERE channel = $1 AND kind = $2 AND subject_id = $3 AND expires_at > $4', [
          r.channel,
          r.kind,
          r.id,
          r.createdAt,
        ]);
        if (existing.rows[0]) return { status: 'existing', request: parsePairingRequestRow(existing.rows[0]) };
        const live = await q('SELECT COUNT(*) AS n FROM pairing_requests WHERE channel = $1 AND expires_at > $2', [r.channel, r.createdAt]);
        if (Number(live.rows[0]?.n) >= opts.maxPending) return { status: 'full' };
        if (opts.maxPerRequester !== undefined && r.requester !== undefined) {
          const mine = await q('SELECT COUNT(*) AS n FROM pairing_requests WHERE channel = $1 AND requester = $2 AND expires_at > $3', [
            r.channel,
            r.requester,
            r.createdAt,
          ]);
          if (Number(mine.rows[0]?.n) >= opts.maxPerRequester) return { status: 'requester_full' };
        }
        const request: PairingRequest = { ...r, code: opts.code, expiresAt: r.createdAt + opts.ttlMs };
        const inserted = await q(
          `INSERT INTO pairing_requests (code, channel, kind, subject_id, requester, label, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT (code) DO NOTHING`,
          [request.code, request.channel, request.kind, request.id, request.requester ?? null, request.label ?? null, request.createdAt, request.expiresAt],
        );
        return inserted.rowCount === 1 ? { status: 'created', request } : { status: 'collision' };
      }),
    pairingRequests: async (now) =>
      (await query('SELECT * FROM pairing_requests WHERE expires_at > $1 ORDER BY created_at, code COLLATE "C"', [now])).rows.map(parsePairingRequestRow),
    approvePairing: (code, now, approvedBy) =>
      transaction(async (q) => {
        const taken = await q('DELETE FROM pairing_requests WHERE code = $1 AND expires_at > $2 RETURNING *', [code, now]);
        const row = taken.rows[0];
        if (!row) return undefined;
        const r = parsePairingRequestRow(row);
        const grant: AccessGrant = { channel: r.channel, kind: r.kind, id: r.id, ...(r.label ? { label: r.label } : {}), approvedAt: now, approvedBy };
        await q(
          `INSERT INTO access_grants (channel, kind, subject_id, label, approved_at, approved_by) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (channel, kind, subject_id) DO UPDATE SET label = excluded.label, approved_at = excluded.approved_at, approved_by = excluded.approved_by`,
          [grant.channel, grant.kind, grant.id, grant.label ?? null, grant.approvedAt, grant.approvedBy],
        );
        return grant;
      }),
    denyPairing: async (code, now) => {
      const row = (await query('DELETE FROM pairing_requests WHERE code = $1 AND expires_at > $2 RETURNING *', [code, now])).rows[0];
      return row ? parsePairingRequestRow(row) : undefined;
    },
    isGranted: async (channel, kind, id) =>
      ((await query('SELECT 1 FROM access_grants WHERE channel = $1 AND kind = $2 AND subject_id = $3', [channel, kind, id])).rowCount ?? 0) > 0,
    accessGrants: async () =>
      (await query('SELECT * FROM access_grants ORDER BY approved_at, channel COLLATE "C", subject_id COLLATE "C"')).rows.map(parseGrantRow),
    holdBudget: (h, capUsd, now) =>
      transaction(async (q) => {
        await q('SELECT pg_advisory_xact_lock(hashtext($1))', ['service:budget']);
        await q('DELETE FROM budget_holds WHERE expires_at <= $1 OR day <> $2', [now, h.day]);
        const spent = await q('SELECT cost_usd FROM daily_cost WHERE day = $1', [h.day]);
        const held = await q('SELECT COALESCE(SUM(amount_usd), 0) AS held FROM budget_holds WHERE day = $1', [h.day]);
        const spentUsd = Number(spent.rows[0]?.cost_usd ?? 0);
        const heldUsd = Number(held.rows[0]?.held ?? 0);
        if (spentUsd + heldUsd >= capUsd) return { held: false as const, spentUsd, heldUsd };
        await q('INSERT INTO budget_holds (id, day, amount_usd, expires_at) VALUES ($1, $2, $3, $4)', [h.id, h.day, h.amountUsd, h.expiresAt]);
        return { held: true as const };
      }),
    releaseBudget: async (id) => void (await query('DELETE FROM budget_holds WHERE id = $1', [id])),
    revokeGrant: async (channel, id) =>
      (await query('DELETE FROM access_grants WHERE channel = $1 AND subject_id = $2 RETURNING *', [channel, id])).rows
        .map(parseGrantRow)
        .sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0)),
  };
}
