import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { loadPg } from './pg-load.js';
import type { PgQuery } from './pg-client.js';
import { quoteIdent } from './pg-migrations.js';
import type { CoordinationStore, LeaseClaim } from './types.js';

export interface PgCoordinationOptions {
  query: PgQuery;
  url: string;
  schema: string;
  /** Resolves once the schema is migrated (the lease table exists). */
  ready: Promise<void>;
}

/** Session-key locks waited for are retried with this back-off (ms), last one repeated. */
const LOCK_RETRY_MS = [20, 50, 100, 200, 400];

/**
 * Leases and session-key locks for gateways of one assistant sharing a PostgreSQL store.
 *
 * The lease is a row with an expiry set by the server's clock, renewed by its holder: a lease
 * survives a holder's brief loss of its connection (no flapping), and a dead host's lease ends on
 * time even when its TCP connection lingers half-open. Taking it is one statement
 * (`INSERT … ON CONFLICT DO UPDATE … WHERE`): of two gateways that find it expired at once, the
 * row lock lets one win and the other re-check a lease that now runs.
 *
 * A session key's lock is an advisory lock held on a connection of its own for the whole turn:
 * PostgreSQL drops it the moment that connection ends, so a gateway killed mid-turn cannot leave
 * a key locked. Those connections come from a pool of their own, apart from the store's queries,
 * so turns waiting on a key never starve the statements the running turns need.
 */
export function createPgCoordination(opts: PgCoordinationOptions): CoordinationStore & { close(): Promise<void> } {
  const { query } = opts;
  let lockPool: pg.Pool | undefined;
  /** Lock connections checked out (waiting or holding): closing ends them, and their locks with them. */
  const held = new Set<pg.PoolClient>();
  let closed: Promise<void> | undefined;
  const locks = () => {
    if (closed) throw new Error('the store is closed');
    lockPool ??= new (loadPg().Pool)({
      connectionString: opts.url,
      options: `-c search_path=${quoteIdent(opts.schema)}`,
      // One per turn running or waiting on a key: maxConcurrent bounds them well below this.
      max: 200,
      connectionTimeoutMillis: 15_000,
      idleTimeoutMillis: 10_000,
    });
    // A lock connection that fails while idle is dropped by the pool; nothing waits on it.
    lockPool.on('error', () => undefined);
    return lockPool;
  };

  return {
    async claimLease(name, holder, ttlMs): Promise<LeaseClaim> {
      // The subqueries in RETURNING read the statement's snapshot: the row as it was before.
      const won = await query(
        `WITH prev AS (SELECT holder, active_at FROM leases WHERE name = $1)
         INSERT INTO leases (name, holder, expires_at, active_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond', now())
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, active_at = excluded.active_at
           WHERE leases.holder = excluded.holder OR leases.expires_at <= now()
         RETURNING (SELECT holder FROM prev) AS prev_holder,
                   (SELECT extract(epoch FROM now() - active_at) * 1000 FROM prev) AS prev_active_ago`,
        [name, holder, ttlMs],
      );
      const row = won.rows[0];
      if (row) {
        const takenOver = row.prev_holder !== null && row.prev_holder !== holder;
        return takenOver ? { held: true, previousActiveAgoMs: Math.max(0, Number(row.prev_active_ago)) } : { held: true };
      }
      const current = await query('SELECT holder FROM leases WHERE name = $1', [name]);
      return { held: false, holder: String(current.rows[0]?.holder ?? 'unknown') };
    },

    async releaseLease(name, holder, idleForMs = 0) {
      // Kept as an expired row: its active_at tells the next holder from when to catch up.
      await query(`UPDATE leases SET expires_at = now(), active_at = now() - $3 * interval '1 millisecond' WHERE name = $1 AND holder = $2`, [
        name,
        holder,
        Math.max(0, idleForMs),
      ]);
    },

    async lockSessionKey(key, signal) {
      await opts.ready;
      const id = `${opts.schema}:${key}`;
      const client = await locks().connect();
      held.add(client);
      try {
        for (let attempt = 0; ; attempt++) {
          signal?.throwIfAborted();
          const got = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok', [id]);
          if (got.rows[0]?.ok) break;
          await sleep(LOCK_RETRY_MS[Math.min(attempt, LOCK_RETRY_MS.length - 1)] ?? 400, undefined, signal ? { signal } : {});
        }
      } catch (err) {
        held.delete(client);
        client.release();
        throw err;
      }
      let released = false;
      return async () => {
        if (released || !held.delete(client)) return;
        released = true;
        try {
          await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [id]);
          client.release();
        } catch (err) {
          // The connection is gone, and the lock with it: the pool must not hand it out again.
          client.release(err as Error);
        }
      };
    },

    close: () => {
      for (const client of held) client.release(new Error('the store is closing'));
      held.clear();
      closed ??= lockPool?.end() ?? Promise.resolve();
      return closed;
    },
  };
}
